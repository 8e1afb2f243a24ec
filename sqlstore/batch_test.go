package sqlstore_test

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"

	"github.com/go-sql-driver/mysql"
	"github.com/tqscavenger/tqscavenger/internal/testdb"
	"github.com/tqscavenger/tqscavenger/sqlstore"
	"github.com/tqscavenger/tqscavenger/store"
)

// TestDeleteQueuesBatch: a batch of fenced rows goes, and every row between
// or around them that was not listed, or changed since, stays. The cases
// cover both forms an engine may use for a batch: the fences as a list,
// and (MySQL) the key range they span when its rows are exactly the fences.
func TestDeleteQueuesBatch(t *testing.T) {
	// Rows r00..r19 in key order (all under one range_hash), at range_id 1
	// unless the case says otherwise.
	tests := []struct {
		name string
		// fenced lists the rows in the batch, at range_id 1.
		fenced []int
		// changed rows are at range_id 2; missing rows were never created.
		changed, missing []int
		shuffle          bool
		table            store.Table
		// wholeRange: the fences are every row of their key range, which
		// MySQL deletes as that range.
		wholeRange bool
	}{
		{name: "whole range inside others", fenced: span(3, 16), wholeRange: true},
		{name: "whole range, fences out of order", fenced: span(3, 16), shuffle: true, wholeRange: true},
		{name: "whole table", fenced: span(0, 19), wholeRange: true},
		{name: "whole range in v2", fenced: span(3, 16), table: store.V2, wholeRange: true},
		{name: "unlisted rows between", fenced: without(span(0, 19), 5, 12)},
		{name: "one changed since", fenced: span(3, 16), changed: []int{9}},
		{name: "one gone", fenced: span(3, 16), missing: []int{9}},
		{name: "last gone", fenced: span(3, 16), missing: []int{16}},
		{name: "everything at once", fenced: without(span(0, 19), 5, 12), changed: []int{9}, missing: []int{17}, shuffle: true},
		{name: "one row", fenced: []int{7}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			forEachEngine(t, func(t *testing.T, e sqlstore.Engine, db *sqlstore.DB) {
				tb := tt.table
				if tb == 0 {
					tb = store.V1
				}
				key := func(i int) store.QueueKey { return qk(7, fmt.Sprintf("r%02d", i)) }
				var want []string // rows left, in key order
				for i := range 20 {
					if slices.Contains(tt.missing, i) {
						continue
					}
					rangeID := int64(1)
					if slices.Contains(tt.changed, i) {
						rangeID = 2
					}
					mustCreate(t, db, tb, queueRow(key(i), rangeID))
					if rangeID != 1 || !slices.Contains(tt.fenced, i) {
						want = append(want, string(key(i).ID))
					}
				}
				var fences []store.QueueFence
				for _, i := range tt.fenced {
					fences = append(fences, store.QueueFence{QueueKey: key(i), RangeID: 1})
				}
				if tt.shuffle {
					rand.New(rand.NewPCG(1, 2)).Shuffle(len(fences), func(i, j int) { fences[i], fences[j] = fences[j], fences[i] })
				}
				ranges := db.QueueRanges()
				n, err := db.DeleteQueues(ctx, tb, fences)
				if err != nil {
					t.Fatal(err)
				}
				if wantN := 20 - len(tt.missing) - len(want); n != int64(wantN) {
					t.Errorf("deleted %d, want %d", n, wantN)
				}
				if e == sqlstore.MySQL {
					if got := db.QueueRanges() - ranges; got != 0 && !tt.wholeRange || got != 1 && tt.wholeRange {
						t.Errorf("%d range deletes, want one only for a whole range (%v)", got, tt.wholeRange)
					}
				}
				rows, err := db.ListQueues(ctx, tb, nil, 100)
				if err != nil {
					t.Fatal(err)
				}
				var got []string
				for _, r := range rows {
					got = append(got, string(r.ID))
				}
				if !slices.Equal(got, want) {
					t.Errorf("rows left %q, want %q", got, want)
				}
			})
		})
	}
}

// span returns lo..hi.
func span(lo, hi int) []int {
	var out []int
	for i := lo; i <= hi; i++ {
		out = append(out, i)
	}
	return out
}

func without(s []int, drop ...int) []int {
	return slices.DeleteFunc(s, func(i int) bool { return slices.Contains(drop, i) })
}

// TestDeleteTaskRanges: v1 range sets, the form a page scan deletes,
// delete exactly the tasks in their ranges, whatever their shape.
func TestDeleteTaskRanges(t *testing.T) {
	// Queues q0..q9 under one range_hash, each with tasks 1..10.
	type set struct{ q, min, max int } // min 0: from the first task
	full := func(qs ...int) []set {
		var out []set
		for _, q := range qs {
			out = append(out, set{q, 1, 10})
		}
		return out
	}
	tests := []struct {
		name string
		sets []set
		// gone are tasks deleted after the caller read them: q*100+id.
		gone    []int
		shuffle bool
	}{
		{name: "whole span", sets: full(2, 3, 4, 5, 6)},
		{name: "whole span, from the first task", sets: []set{{2, 0, 10}, {3, 0, 10}, {4, 0, 10}}},
		{name: "sets out of order", sets: full(2, 3, 4, 5, 6), shuffle: true},
		{name: "a queue between not in a set", sets: full(2, 3, 5, 6)},
		{name: "newer tasks above each set", sets: []set{{2, 1, 8}, {3, 1, 8}, {4, 1, 8}}},
		{name: "first set starts inside its queue", sets: []set{{2, 4, 10}, {3, 1, 10}}},
		{name: "last set ends inside its queue", sets: []set{{2, 1, 10}, {3, 1, 5}}},
		{name: "two runs of one queue", sets: []set{{2, 1, 3}, {2, 6, 10}, {3, 1, 10}}},
		{name: "tasks gone since read", sets: full(2, 3, 4), gone: []int{305, 306, 410}},
		{name: "one set", sets: full(4)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			forEachEngine(t, func(t *testing.T, e sqlstore.Engine, db *sqlstore.DB) {
				key := func(q int) store.QueueKey { return qk(7, fmt.Sprintf("q%d", q)) }
				var all []store.TaskRow
				for id := 1; id <= 10; id++ {
					all = append(all, task(0, int64(id)))
				}
				for q := range 10 {
					mustAppend(t, db, store.V1, key(q), key(q), all...)
				}
				var sets []store.TaskSet
				for _, s := range tt.sets {
					r := store.TaskRange{Max: store.TaskKey{ID: int64(s.max)}}
					if s.min > 0 {
						r.Min = store.TaskKey{ID: int64(s.min)}
					}
					sets = append(sets, store.TaskSet{Queue: key(s.q), Range: r})
				}
				for _, g := range tt.gone {
					if _, err := db.DeleteTaskSets(ctx, store.V1, []store.TaskSet{{Queue: key(g / 100), Keys: []store.TaskKey{{ID: int64(g % 100)}}}}); err != nil {
						t.Fatal(err)
					}
				}
				if tt.shuffle {
					rand.New(rand.NewPCG(3, 4)).Shuffle(len(sets), func(i, j int) { sets[i], sets[j] = sets[j], sets[i] })
				}
				var want []string // tasks left, q*100+id in key order
				wantN := int64(0)
				for q := range 10 {
					for id := 1; id <= 10; id++ {
						if slices.Contains(tt.gone, q*100+id) {
							continue
						}
						in := slices.ContainsFunc(tt.sets, func(s set) bool { return s.q == q && id >= s.min && id <= s.max })
						if in {
							wantN++
						} else {
							want = append(want, fmt.Sprintf("q%d/%d", q, id))
						}
					}
				}
				n, err := db.DeleteTaskSets(ctx, store.V1, sets)
				if err != nil {
					t.Fatal(err)
				}
				if n != wantN {
					t.Errorf("deleted %d, want %d", n, wantN)
				}
				left, err := db.ScanTasks(ctx, store.V1, store.TaskPos{}, qk(math.MaxUint32, "\xff"), 1000)
				if err != nil {
					t.Fatal(err)
				}
				var got []string
				for _, r := range left {
					got = append(got, fmt.Sprintf("%s/%d", r.Queue.ID, r.Key.ID))
				}
				if !slices.Equal(got, want) {
					t.Errorf("tasks left %q,\nwant %q", got, want)
				}
			})
		})
	}
}

// TestQueueRangeLocks: while MySQL's range delete holds its locks, a
// matching host can neither create a queue inside the range nor take over
// a fenced row; once it is done, both work.
func TestQueueRangeLocks(t *testing.T) {
	db := testdb.Open(t, sqlstore.MySQL)
	other := testdb.OpenDSN(t, db.DSN().String())
	conn, err := other.SQL().Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "SET SESSION innodb_lock_wait_timeout = 1"); err != nil {
		t.Fatal(err)
	}
	key := func(i int) store.QueueKey { return qk(7, fmt.Sprintf("r%02d", i)) }
	var fences []store.QueueFence
	for i := range 10 {
		if i != 5 { // r05 is created during the delete
			mustCreate(t, db, store.V1, queueRow(key(i), 1))
			fences = append(fences, store.QueueFence{QueueKey: key(i), RangeID: 1})
		}
	}
	create := "INSERT INTO task_queues (range_hash, task_queue_id, range_id, data, data_encoding) VALUES (7, 'r05', 1, 'x', 'Proto3')"
	takeOver := "UPDATE task_queues SET range_id = 2 WHERE range_hash = 7 AND task_queue_id = 'r03'"
	var during []error
	db.SetAfterRangeLock(func() {
		for _, q := range []string{create, takeOver} {
			_, err := conn.ExecContext(ctx, q)
			during = append(during, err)
		}
	})
	n, err := db.DeleteQueues(ctx, store.V1, fences)
	if err != nil {
		t.Fatal(err)
	}
	if n != 9 || db.QueueRanges() != 1 {
		t.Fatalf("deleted %d rows in %d range deletes, want 9 in 1", n, db.QueueRanges())
	}
	for i, err := range during {
		var me *mysql.MySQLError
		if !errors.As(err, &me) || me.Number != 1205 {
			t.Errorf("statement %d during the delete: %v, want a lock wait timeout (1205)", i, err)
		}
	}
	if _, err := conn.ExecContext(ctx, create); err != nil {
		t.Errorf("create after the delete: %v", err)
	}
}

// TestQueueRangeBusy: when a matching host holds a lock in the range,
// MySQL's range delete does not wait holding locks of its own: the fences
// are deleted as a list, which waits for the host like any write and then
// leaves the row the host took over.
func TestQueueRangeBusy(t *testing.T) {
	db := testdb.Open(t, sqlstore.MySQL)
	other := testdb.OpenDSN(t, db.DSN().String())
	key := func(i int) store.QueueKey { return qk(7, fmt.Sprintf("r%02d", i)) }
	var fences []store.QueueFence
	for i := range 10 {
		mustCreate(t, db, store.V1, queueRow(key(i), 1))
		fences = append(fences, store.QueueFence{QueueKey: key(i), RangeID: 1})
	}
	host, err := other.SQL().BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer host.Rollback()
	if _, err := host.ExecContext(ctx, "UPDATE task_queues SET range_id = 2 WHERE range_hash = 7 AND task_queue_id = 'r03'"); err != nil {
		t.Fatal(err)
	}
	type result struct {
		n   int64
		err error
	}
	done := make(chan result, 1)
	go func() {
		n, err := db.DeleteQueues(ctx, store.V1, fences)
		done <- result{n, err}
	}()
	// The signal: the fenced delete of the list, waiting on the server
	// for the host's lock. (Not information_schema.innodb_trx: InnoDB
	// refreshes it only after 0.1 s without a read.)
	for waiting := 0; waiting == 0; {
		select {
		case r := <-done:
			t.Fatalf("delete returned (%d, %v) while the host held its lock", r.n, r.err)
		default:
		}
		if err := other.SQL().QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.processlist WHERE db = DATABASE() AND info LIKE 'DELETE FROM task\\_queues WHERE (range\\_hash, task\\_queue\\_id, range\\_id) IN %'").Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		runtime.Gosched()
	}
	if err := host.Commit(); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil || r.n != 9 {
		t.Fatalf("delete: %d rows, %v; want 9", r.n, r.err)
	}
	if db.QueueRanges() != 0 {
		t.Errorf("%d range deletes, want none", db.QueueRanges())
	}
	rows, err := db.ListQueues(ctx, store.V1, nil, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || string(rows[0].ID) != "r03" || rows[0].RangeID != 2 {
		t.Errorf("rows left %v, want r03 at range_id 2", rows)
	}
}
