package scavenger_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/tqscavenger/tqscavenger/internal/testdb"
	"github.com/tqscavenger/tqscavenger/scavenger"
	"github.com/tqscavenger/tqscavenger/seed"
	"github.com/tqscavenger/tqscavenger/sqlstore"
	"github.com/tqscavenger/tqscavenger/wire"
)

// seedOddKeys writes seedPartitioned's data set and odd keys on top:
// range_hash −1, 2³² and 2⁴⁰ (queue rows and tasks; the PostgreSQL and
// SQLite columns hold them, MySQL's INT UNSIGNED does not), 2³¹−1 beside
// 0 and 2³²−1, task_queue_id blobs of 1, 3 and 200 bytes, and task ids 0
// and 2⁶³−1. It returns how many rows lie outside 0…2³²−1.
func seedOddKeys(t *testing.T, db *sqlstore.DB) (odd int) {
	t.Helper()
	seedPartitioned(t, db)
	id := func(name string) string {
		return hexLit(db, wire.QueueID(seed.DefaultNamespace, name, wire.TaskTypeActivity, 0))
	}
	copyQueue := func(name, rh, newID string) {
		testdb.Exec(t, db, "INSERT INTO task_queues (range_hash, task_queue_id, range_id, data, data_encoding) SELECT "+rh+", "+newID+
			", range_id, data, data_encoding FROM task_queues WHERE task_queue_id = "+id(name))
	}
	copyTasks := func(name, rh, newID, cond string) int {
		res := testdb.Exec(t, db, "INSERT INTO tasks (range_hash, task_queue_id, task_id, data, data_encoding) SELECT "+rh+", "+newID+
			", task_id, data, data_encoding FROM tasks WHERE task_queue_id = "+id(name)+cond)
		n, _ := res.RowsAffected()
		return int(n)
	}
	if db.Engine() != sqlstore.MySQL {
		// A dead queue and its tasks at −1 (the row sorts before hash 0),
		// orphaned tasks at 2³² and 2⁴⁰, a queue row at 2³²+5.
		copyQueue("dead-0", "-1", id("dead-0"))
		odd++
		odd += copyTasks("dead-0", "-1", id("dead-0"), "")
		odd += copyTasks("dead-1", "4294967296", id("dead-1"), "")
		odd += copyTasks("live-1", "1099511627776", id("live-1"), "")
		copyQueue("live-2", "4294967301", id("live-2"))
		odd++
	}
	// 2³¹−1: a dead and a live queue moved there.
	for _, name := range []string{"dead-2", "live-3"} {
		for _, tab := range []string{"task_queues", "tasks"} {
			testdb.Exec(t, db, "UPDATE "+tab+" SET range_hash = 2147483647 WHERE task_queue_id = "+id(name))
		}
	}
	// task_queue_id blobs of odd lengths: orphaned tasks no queue id
	// layout matches (bad rows), and a queue row of such an id.
	for i, n := range []int{1, 3, 200} {
		blob := hexLit(db, []byte(strings.Repeat(string(rune('a'+i)), n)))
		copyTasks("dead-3", fmt.Sprint(i*1000), blob, "")
	}
	copyQueue("dead-4", "7", hexLit(db, []byte{0xff, 0x00, 0x01}))
	// Task ids 0 and 2⁶³−1 in a dead queue (expired: they go) and a live
	// one (copies of its last task).
	for _, name := range []string{"dead-5", "live-4"} {
		for _, tid := range []string{"0", "9223372036854775807"} {
			testdb.Exec(t, db, "INSERT INTO tasks (range_hash, task_queue_id, task_id, data, data_encoding) SELECT range_hash, task_queue_id, "+tid+
				", data, data_encoding FROM tasks WHERE task_queue_id = "+id(name)+" AND task_id = (SELECT MAX(task_id) FROM (SELECT task_id FROM tasks WHERE task_queue_id = "+id(name)+") m)")
		}
	}
	return odd
}

// oddRows lists what the range_hash columns hold outside 0…2³²−1, with
// plain SQL.
func oddRows(t *testing.T, db *sqlstore.DB) []string {
	t.Helper()
	var out []string
	for _, tab := range []string{"task_queues", "tasks"} {
		rows, err := testdb.SQL(t, db).Query("SELECT range_hash, task_queue_id FROM " + tab + " WHERE range_hash < 0 OR range_hash > 4294967295")
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var rh int64
			var id []byte
			if err := rows.Scan(&rh, &id); err != nil {
				t.Fatal(err)
			}
			out = append(out, fmt.Sprintf("%s %d/%x", tab, rh, id))
		}
		rows.Close()
	}
	slices.Sort(out)
	return out
}

func badRowStrings(st scavenger.Stats) []string {
	var out []string
	for _, b := range st.BadRows {
		out = append(out, b.String())
	}
	return out
}

// TestOddKeysPartitionsEqualFullPass: on data with odd keys (range_hash
// −1, 0, 2³¹−1, 2³²−1, 2³² and beyond, task_queue_id blobs of odd lengths,
// task ids 0 and 2⁶³−1), on every engine, the partitions 0..N-1 of a pass
// leave exactly the rows a full pass leaves and report the same bad rows
// between them; a row outside 0…2³²−1 is a bad row (kept, counted,
// completed_with_bad_rows) in the pass whose range it sorts into (the
// first partition for a negative hash, the last for one above 2³²−1), and
// never ends a walk or a page early (pages of 3 rows end next to them).
func TestOddKeysPartitionsEqualFullPass(t *testing.T) {
	ctx := context.Background()
	for _, e := range testdb.Engines {
		t.Run(string(e), func(t *testing.T) {
			t.Parallel()
			full := testdb.Open(t, e)
			odd := seedOddKeys(t, full)
			before := digest(t, full)
			oddBefore := oddRows(t, full)
			st, err := scavenger.New(full, partitionConfig(scavenger.Partition{})).Run(ctx)
			if err != nil || st.Outcome != scavenger.CompletedBadRows {
				t.Fatalf("full pass: %v %v; want completed_with_bad_rows", st.Outcome, err)
			}
			want, wantBad := digest(t, full), st.BadRowCount
			wantRows := badRowStrings(st)
			slices.Sort(wantRows)
			if want == before {
				t.Fatalf("the full pass deleted nothing (%s): the test proves nothing", want)
			}
			if got := oddRows(t, full); !slices.Equal(got, oddBefore) {
				t.Errorf("the full pass touched rows outside the range_hash space:\n%v\nwant\n%v", got, oddBefore)
			}
			nOdd := 0
			for _, b := range st.BadRows {
				if _, ok := b.Err.(*scavenger.OddHashError); ok {
					nOdd++
				}
			}
			if nOdd != odd {
				t.Errorf("the full pass reports %d rows outside the range_hash space, %d lie there: %v", nOdd, odd, wantRows)
			}
			for _, n := range []int{2, 3, 7} {
				db := testdb.Open(t, e)
				seedOddKeys(t, db)
				if got := digest(t, db); got != before {
					t.Fatalf("N=%d: the data set is not the same bytes: %s, want %s", n, got, before)
				}
				var bad int64
				var rows []string
				for i := 0; i < n; i++ {
					p := scavenger.Partition{Index: i, Count: n}
					st, err := scavenger.New(db, partitionConfig(p)).Run(ctx)
					if err != nil || !st.Outcome.Success() {
						t.Fatalf("partition %s: %v %v", p, st.Outcome, err)
					}
					if (st.BadRowCount > 0) != (st.Outcome == scavenger.CompletedBadRows) {
						t.Errorf("partition %s: %d bad rows, outcome %s", p, st.BadRowCount, st.Outcome)
					}
					bad += st.BadRowCount
					rows = append(rows, badRowStrings(st)...)
				}
				slices.Sort(rows)
				if got := digest(t, db); got != want {
					t.Errorf("N=%d: partitions leave %s, a full pass %s", n, got, want)
				}
				if bad != wantBad || !slices.Equal(rows, wantRows) {
					t.Errorf("N=%d: the partitions report %d bad rows, the full pass %d:\n%s\nwant\n%s", n, bad, wantBad,
						strings.Join(rows, "\n"), strings.Join(wantRows, "\n"))
				}
			}
		})
	}
}
