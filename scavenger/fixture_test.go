package scavenger_test

import (
	"context"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/tqscavenger/tqscavenger/internal/fixture"
	"github.com/tqscavenger/tqscavenger/internal/testdb"
	"github.com/tqscavenger/tqscavenger/scavenger"
	"github.com/tqscavenger/tqscavenger/sqlstore"
	"github.com/tqscavenger/tqscavenger/store"
	"github.com/tqscavenger/tqscavenger/wire"
)

// fixtureNow is after every task expiry in the fixtures and 72 h after the
// aged fixtures' last updates, but within the grace of temporal-1.29-fresh.
var fixtureNow = time.Date(2026, 11, 30, 14, 0, 0, 0, time.UTC)

const afterSuffix = ".after-temporal-scavenger"

// dbRows is every row of the four task tables, by table, keyed by primary
// key, with each task's expiry state.
type dbRows map[string]map[string]rowInfo

type rowInfo struct {
	queue   string // range_hash/task_queue_id of the task's (sub)queue
	order   string // sortable position within the subqueue
	expired bool
}

func readRows(t *testing.T, path string) dbRows {
	t.Helper()
	db, err := sqlstore.Open(context.Background(), "sqlite:"+path, sqlstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	out := dbRows{}
	for _, q := range []struct{ table, cols string }{
		{"task_queues", "range_hash, task_queue_id, 0, 0"},
		{"task_queues_v2", "range_hash, task_queue_id, 0, 0"},
		{"tasks", "range_hash, task_queue_id, 0, task_id"},
		{"tasks_v2", "range_hash, task_queue_id, pass, task_id"},
	} {
		m := map[string]rowInfo{}
		out[q.table] = m
		rows, err := testdb.SQL(t, db).Query("SELECT " + q.cols + ", data, data_encoding FROM " + q.table)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var (
				rh        int64
				id, data  []byte
				pass, tid int64
				enc       string
			)
			if err := rows.Scan(&rh, &id, &pass, &tid, &data, &enc); err != nil {
				t.Fatal(err)
			}
			queue := fmt.Sprintf("%d/%x", rh, id)
			ri := rowInfo{queue: queue, order: fmt.Sprintf("%020d/%020d", pass, tid)}
			if strings.HasPrefix(q.table, "tasks") {
				tt, err := wire.DecodeTaskTimes(enc, data)
				if err != nil {
					t.Fatalf("%s row %s: %v", q.table, queue, err)
				}
				ri.expired = wire.Expired(tt.ExpiryTime, fixtureNow)
			}
			m[queue+"/"+ri.order] = ri
		}
		if err := rows.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func fixturePass(t *testing.T, path string, cfg scavenger.Config) scavenger.Stats {
	t.Helper()
	db, err := sqlstore.Open(context.Background(), "sqlite:"+path, sqlstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	cfg.Now = func() time.Time { return fixtureNow }
	cfg.Logger = quiet()
	st, err := scavenger.New(db, cfg).Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if st.BadRowCount != 0 || st.Errors != 0 {
		t.Fatalf("bad rows %d, errors %d: %v", st.BadRowCount, st.Errors, st.BadRows)
	}
	return st
}

// fixturesWithOutcome lists the fixtures that have Temporal's own outcome.
func fixturesWithOutcome() []string {
	var out []string
	names := fixture.Names()
	for _, n := range names {
		for _, m := range names {
			if m == n+afterSuffix {
				out = append(out, n)
			}
		}
	}
	return out
}

// TestFixtureTemporalCompat: on real Temporal databases, --compat=temporal
// leaves exactly the rows Temporal's own scavenger left.
func TestFixtureTemporalCompat(t *testing.T) {
	names := fixturesWithOutcome()
	if len(names) == 0 {
		t.Fatal("no fixture with an after-temporal-scavenger outcome")
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			path := fixture.Path(t, name)
			fixturePass(t, path, scavenger.Config{Rules: scavenger.Rules{Compat: scavenger.CompatTemporal}})
			got, want := readRows(t, path), readRows(t, fixture.Path(t, name+afterSuffix))
			for table, w := range want {
				g := got[table]
				if diff := keyDiff(g, w); diff != "" {
					t.Errorf("%s: %d rows, Temporal left %d: %s", table, len(g), len(w), diff)
				}
			}
		})
	}
}

func keyDiff(got, want map[string]rowInfo) string {
	var extra, missing []string
	for k := range got {
		if _, ok := want[k]; !ok {
			extra = append(extra, k)
		}
	}
	for k := range want {
		if _, ok := got[k]; !ok {
			missing = append(missing, k)
		}
	}
	if len(extra) == 0 && len(missing) == 0 {
		return ""
	}
	sort.Strings(extra)
	sort.Strings(missing)
	return fmt.Sprintf("%d extra (first %v), %d missing (first %v)", len(extra), first(extra), len(missing), first(missing))
}

func first(s []string) []string { return s[:min(len(s), 3)] }

// TestFixtureDefaultMode: the default mode deletes every expired task that
// is not behind a live one, never a live task, and leaves a subset of
// Temporal's tasks; --past-live-head leaves no expired task at all.
func TestFixtureDefaultMode(t *testing.T) {
	for _, name := range fixture.Names() {
		if strings.HasSuffix(name, afterSuffix) {
			continue
		}
		for _, pastLiveHead := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/past-live-head=%v", name, pastLiveHead), func(t *testing.T) {
				path := fixture.Path(t, name)
				before := readRows(t, path)
				fixturePass(t, path, scavenger.Config{Rules: scavenger.Rules{PastLiveHead: pastLiveHead}})
				after := readRows(t, path)
				var temporal dbRows
				for _, n := range fixturesWithOutcome() {
					if n == name {
						temporal = readRows(t, fixture.Path(t, name+afterSuffix))
					}
				}
				if temporal != nil {
					// Every queue row we left, Temporal left too, except
					// rows whose v2 side still holds tasks: Temporal deletes
					// those, losing the flag that tells matching to drain v2.
					kept := 0
					for k := range after["task_queues"] {
						if _, ok := temporal["task_queues"][k]; ok {
							continue
						}
						if !v2HoldsTasks(t, path, after, k) {
							t.Errorf("queue row %s left, but Temporal deleted it and v2 holds no task of it", k)
						}
						kept++
					}
					t.Logf("kept %d v1 queue rows that Temporal deleted although their v2 side holds tasks", kept)
				}
				for _, table := range []string{"tasks", "tasks_v2"} {
					checkTasks(t, table, before[table], after[table], pastLiveHead)
					if temporal == nil {
						continue
					}
					// Every task we left, Temporal left too (v2 is never
					// touched by Temporal).
					for k := range after[table] {
						if _, ok := temporal[table][k]; !ok {
							t.Errorf("%s: task %s left, but Temporal deleted it", table, k)
						}
					}
				}
			})
		}
	}
}

// v2HoldsTasks reports whether the v2 side of the v1 queue row k holds a
// task in any of its subqueues.
func v2HoldsTasks(t *testing.T, path string, after dbRows, k string) bool {
	t.Helper()
	db, err := sqlstore.Open(context.Background(), "sqlite:"+path, sqlstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var rh uint32
	var idHex string
	fmt.Sscanf(strings.ReplaceAll(k, "/", " "), "%d %s", &rh, &idHex)
	id, _ := hex.DecodeString(idHex)
	row, err := db.GetQueue(context.Background(), store.V2, store.QueueKey{RangeHash: rh, ID: id})
	if err != nil {
		return false
	}
	info, err := wire.DecodeTaskQueueInfo(row.Encoding, row.Data)
	if err != nil {
		t.Fatal(err)
	}
	for _, sq := range wire.Subqueues(row.ID, row.RangeHash, info, true) {
		key := store.QueueKey{RangeHash: sq.RangeHash, ID: sq.ID}
		for _, r := range after["tasks_v2"] {
			if r.queue == key.String() {
				return true
			}
		}
	}
	return false
}

// checkTasks asserts: no live task was deleted; an expired task is left
// only behind a live task of its subqueue (never, with pastLiveHead).
func checkTasks(t *testing.T, table string, before, after map[string]rowInfo, pastLiveHead bool) {
	t.Helper()
	// The first live task of each subqueue, in key order.
	firstLive := map[string]string{}
	for _, r := range before {
		if !r.expired {
			if f, ok := firstLive[r.queue]; !ok || r.order < f {
				firstLive[r.queue] = r.order
			}
		}
	}
	var deleted, left int
	for k, r := range before {
		_, kept := after[k]
		switch {
		case !r.expired && !kept:
			t.Errorf("%s: live task %s deleted", table, k)
		case r.expired && kept:
			left++
			f, hasLive := firstLive[r.queue]
			if pastLiveHead || !hasLive || r.order < f {
				t.Errorf("%s: expired task %s left (first live task at %q)", table, k, f)
			}
		case r.expired:
			deleted++
		}
	}
	t.Logf("%s: %d tasks before, %d expired deleted, %d expired left behind a live task", table, len(before), deleted, left)
}
