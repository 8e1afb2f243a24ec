package storetest

// Tests of the task rows: reads, scans, appends and every kind of delete.

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/tqscavenger/tqscavenger/store"
)

// testReadTasks reads one queue's tasks from cursors, in (pass, task_id)
// order in V2 and task_id order in V1, beside decoys.
func testReadTasks(t *testing.T, db subject) {
	for _, tb := range []store.Table{store.V1, store.V2} {
		q := qk(math.MaxUint32-5, "queue\x81\x01")
		setupTasks(t, db, tb, q)
		all := tableKeys(tb)
		type tc struct {
			after *store.TaskKey
			limit int
			want  []store.TaskKey
		}
		key := func(p, id int64) *store.TaskKey { return &store.TaskKey{Pass: p, ID: id} }
		cases := []tc{
			{nil, 100, all},
			{nil, 1, all[:1]},
			{nil, 3, all[:3]},
			{key(all[2].Pass, all[2].ID), 2, all[3:5]},
			{key(all[len(all)-1].Pass, all[len(all)-1].ID), 5, nil},
			{key(0, -1), 100, all},
		}
		if tb == store.V1 {
			cases = append(cases,
				tc{key(0, 3), 100, all[2:]},
				tc{key(0, 100000), 100, all[4:]},
				// V1 ignores Pass in the cursor.
				tc{key(9, 2), 100, all[2:]},
			)
		} else {
			cases = append(cases,
				// The cursor orders by (pass, task_id): task 10 of pass 2 sorts
				// after task 70 of pass 1.
				tc{key(1, 70), 100, all[2:]},
				tc{key(1, 1000), 100, all[2:]},
				tc{key(2, 9), 2, all[2:4]},
				tc{key(3, 5), 100, all[4:]},
				tc{key(3, 1000), 100, all[6:]},
				tc{key(8, 0), 100, nil},
			)
		}
		for _, c := range cases {
			name := fmt.Sprintf("%s/after=%v/limit=%d", tb, c.after, c.limit)
			if c.after != nil {
				name = fmt.Sprintf("%s/after=%d.%d/limit=%d", tb, c.after.Pass, c.after.ID, c.limit)
			}
			t.Run(name, func(t *testing.T) {
				rows, err := db.ReadTasks(ctx, tb, q, c.after, c.limit)
				if err != nil {
					t.Fatal(err)
				}
				if got := keysOf(rows); !slices.Equal(got, c.want) {
					t.Errorf("got %v, want %v", got, c.want)
				}
				for _, r := range rows {
					if w := task(r.Key.Pass, r.Key.ID); !bytes.Equal(r.Data, w.Data) || r.Encoding != w.Encoding {
						t.Errorf("task %v: data %q %q, want %q %q", r.Key, r.Data, r.Encoding, w.Data, w.Encoding)
					}
				}
			})
		}
	}
}

// testDeleteTasks deletes key ranges of one queue, limited or not,
// lowest keys first, beside decoys.
func testDeleteTasks(t *testing.T, db subject) {
	type tc struct {
		name     string
		extra    []store.TaskKey // written besides the fixture keys
		r        store.TaskRange
		limit    int
		deleted  int64
		remained []store.TaskKey
	}
	rng := func(minP, minID, maxP, maxID int64) store.TaskRange {
		return store.TaskRange{Min: store.TaskKey{Pass: minP, ID: minID}, Max: store.TaskKey{Pass: maxP, ID: maxID}}
	}
	v1 := []tc{
		{"all below 100", nil, rng(0, 0, 0, 100), 0, 4, tks(0, 100001, 0, 1<<40)},
		{"limit 2 lowest first", nil, rng(0, 0, 0, 100), 2, 2, tks(0, 5, 0, 100, 0, 100001, 0, 1<<40)},
		{"limit above count", nil, rng(0, 0, 0, 100), 50, 4, tks(0, 100001, 0, 1<<40)},
		{"limit equals count", nil, rng(0, 0, 0, 100), 4, 4, tks(0, 100001, 0, 1<<40)},
		{"inside a range", nil, rng(0, 2, 0, 100001), 0, 4, tks(0, 1, 0, 1<<40)},
		{"inside a range, limited", nil, rng(0, 2, 0, 100001), 2, 2, tks(0, 1, 0, 100, 0, 100001, 0, 1<<40)},
		{"empty range", nil, rng(0, 6, 0, 99), 10, 0, v1Keys},
		{"range bounds inclusive", nil, rng(0, 5, 0, 5), 0, 1, tks(0, 1, 0, 2, 0, 100, 0, 100001, 0, 1<<40)},
		{"everything", nil, rng(0, 0, 0, math.MaxInt64), 0, 6, nil},
		// The zero Min means "from the first task", whatever its key.
		{"zero Min, negative id", tks(0, -1), rng(0, 0, 0, 1), 0, 2, tks(0, 2, 0, 5, 0, 100, 0, 100001, 0, 1<<40)},
		{"zero Min, negative id, limited", tks(0, -1), rng(0, 0, 0, 100), 2, 2, tks(0, 2, 0, 5, 0, 100, 0, 100001, 0, 1<<40)},
		{"Min above a negative id", tks(0, -1), rng(0, 1, 0, 1), 0, 1, tks(0, -1, 0, 2, 0, 5, 0, 100, 0, 100001, 0, 1<<40)},
	}
	v2 := []tc{
		// (pass, task_id) order, not a box of pass and task_id ranges.
		{"lexicographic range", nil, rng(1, 60, 3, 5), 0, 3, tks(1, 50, 3, 60, 3, 61, 7, 1)},
		{"lexicographic range, limited", nil, rng(1, 60, 3, 5), 2, 2, tks(1, 50, 3, 5, 3, 60, 3, 61, 7, 1)},
		{"up to a pass", nil, rng(0, 0, 3, 60), 0, 5, tks(3, 61, 7, 1)},
		{"up to a pass, limit 1", nil, rng(0, 0, 3, 60), 1, 1, tks(1, 70, 2, 10, 3, 5, 3, 60, 3, 61, 7, 1)},
		{"limit above count", nil, rng(0, 0, 2, math.MaxInt64), 9, 3, tks(3, 5, 3, 60, 3, 61, 7, 1)},
		{"one pass", nil, rng(3, 0, 3, math.MaxInt64), 0, 3, tks(1, 50, 1, 70, 2, 10, 7, 1)},
		{"empty range", nil, rng(3, 6, 3, 59), 0, 0, v2Keys},
		{"zero Min, negative id", tks(0, -1, -1, 9), rng(0, 0, 1, 50), 0, 3, tks(1, 70, 2, 10, 3, 5, 3, 60, 3, 61, 7, 1)},
		{"zero Min, limited", tks(0, -1, -1, 9), rng(0, 0, 3, 5), 3, 3, tks(1, 70, 2, 10, 3, 5, 3, 60, 3, 61, 7, 1)},
	}
	for _, tb := range []store.Table{store.V1, store.V2} {
		cases := v1
		if tb == store.V2 {
			cases = v2
		}
		for i, c := range cases {
			t.Run(fmt.Sprintf("%s/%s", tb, c.name), func(t *testing.T) {
				q := qk(uint32(math.MaxInt32+i), fmt.Sprintf("q%d", i))
				setupTasks(t, db, tb, q)
				if len(c.extra) > 0 {
					mustAppend(t, db, tb, q, q, taskRows(c.extra)...)
				}
				n, err := db.DeleteTasks(ctx, tb, q, c.r, c.limit)
				if err != nil {
					t.Fatal(err)
				}
				if n != c.deleted {
					t.Errorf("deleted %d, want %d", n, c.deleted)
				}
				if remained := readAll(t, db, tb, q); !slices.Equal(remained, c.remained) {
					t.Errorf("remaining %v, want %v", remained, c.remained)
				}
				checkDecoys(t, db, tb, q)
			})
		}
	}
}

// deleteKeys deletes exactly the tasks keys of q, as a DeleteTaskSets of
// one set (a nil keys is an empty list, not a range).
func deleteKeys(db store.Store, tb store.Table, q store.QueueKey, keys []store.TaskKey) (int64, error) {
	return db.DeleteTaskSets(ctx, tb, []store.TaskSet{{Queue: q, Keys: append([]store.TaskKey{}, keys...)}})
}

// testDeleteTaskSetOfKeys checks DeleteTaskSets of one set of exact keys.
func testDeleteTaskSetOfKeys(t *testing.T, db subject) {
	for _, tb := range []store.Table{store.V1, store.V2} {
		type tc struct {
			name    string
			keys    []store.TaskKey
			deleted int64
		}
		var cases []tc
		if tb == store.V1 {
			cases = []tc{
				{"none", nil, 0},
				{"one", tks(0, 5), 1},
				{"some, unordered, with absent keys", tks(0, 100001, 0, 3, 0, 1, 0, 7), 2},
				{"pass is ignored", tks(4, 2), 1},
			}
		} else {
			cases = []tc{
				{"none", nil, 0},
				{"one", tks(3, 60), 1},
				// (1, 10) and (2, 50) pair each present pass with each present
				// id: only exact (pass, task_id) pairs may go.
				{"exact pairs only", tks(1, 10, 2, 50, 3, 5, 7, 70), 1},
				{"several", tks(7, 1, 1, 50, 2, 10), 3},
			}
		}
		for i, c := range cases {
			t.Run(fmt.Sprintf("%s/%s", tb, c.name), func(t *testing.T) {
				q := qk(uint32(3_000_000_000+i), fmt.Sprintf("q%d", i))
				setupTasks(t, db, tb, q)
				n, err := deleteKeys(db, tb, q, c.keys)
				if err != nil {
					t.Fatal(err)
				}
				if n != c.deleted {
					t.Errorf("deleted %d, want %d", n, c.deleted)
				}
				var want []store.TaskKey
				for _, k := range tableKeys(tb) {
					gone := false
					for _, d := range c.keys {
						if k.ID == d.ID && (tb == store.V1 || k.Pass == d.Pass) {
							gone = true
						}
					}
					if !gone {
						want = append(want, k)
					}
				}
				if got := readAll(t, db, tb, q); !slices.Equal(got, want) {
					t.Errorf("remaining %v, want %v", got, want)
				}
				checkDecoys(t, db, tb, q)
			})
		}
		// More keys than one statement takes.
		t.Run(tb.String()+"/many", func(t *testing.T) {
			q := qk(17, "many")
			var rows []store.TaskRow
			var keys []store.TaskKey
			for i := range 1234 {
				rows = append(rows, task(int64(i%3+1), int64(i+1)))
				if i%2 == 0 {
					keys = append(keys, rows[i].Key)
				}
			}
			mustAppend(t, db, tb, q, q, rows...)
			n, err := deleteKeys(db, tb, q, keys)
			if err != nil {
				t.Fatal(err)
			}
			if n != int64(len(keys)) {
				t.Errorf("deleted %d, want %d", n, len(keys))
			}
			if got := readAll(t, db, tb, q); len(got) != len(rows)-len(keys) {
				t.Errorf("%d tasks remain, want %d", len(got), len(rows)-len(keys))
			}
		})
	}
}

// testAppendTasks appends tasks fenced on the owner's range_id: all of
// them or, on a stale fence or a duplicate key, none.
func testAppendTasks(t *testing.T, db subject) {
	for _, tb := range []store.Table{store.V1, store.V2} {
		owner := qk(math.MaxInt32+7, "owner\x01")
		sub := qk(12345, "owner\x81\x01") // a subqueue's tasks: no row of its own
		mustCreate(t, db, tb, queueRow(owner, 4))
		many := make([]store.TaskRow, 450) // more than one INSERT statement
		for i := range many {
			many[i] = task(int64(i%5+1), int64(300001+i))
		}
		for _, c := range []struct {
			name    string
			owner   store.QueueKey
			rangeID int64
			target  store.QueueKey
			tasks   []store.TaskRow
			want    error // nil, ErrConditionFailed, or errAny
			written int
		}{
			{"owner's own tasks", owner, 4, owner, []store.TaskRow{task(1, 1), task(1, 2)}, nil, 2},
			{"a subqueue", owner, 4, sub, []store.TaskRow{task(1, 1)}, nil, 1},
			{"many", owner, 4, sub, many, nil, 450},
			{"stale range_id", owner, 3, owner, []store.TaskRow{task(1, 3)}, store.ErrConditionFailed, 0},
			{"newer range_id", owner, 5, owner, []store.TaskRow{task(1, 3)}, store.ErrConditionFailed, 0},
			{"missing owner", qk(1, "gone"), 1, owner, []store.TaskRow{task(1, 3)}, store.ErrConditionFailed, 0},
			// A duplicate key in the last statement rolls back the whole
			// transaction.
			{"duplicate rolls back", owner, 4, owner, append(slices.Clone(many[:300]), task(1, 1)), errAny, 0},
		} {
			t.Run(tb.String()+"/"+c.name, func(t *testing.T) {
				before := len(readAll(t, db, tb, c.target))
				err := db.AppendTasks(ctx, tb, c.owner, c.rangeID, c.target, c.tasks)
				if c.want == nil && err != nil || c.want == errAny && err == nil || c.want != nil && c.want != errAny && !errors.Is(err, c.want) {
					t.Fatalf("AppendTasks: %v, want %v", err, c.want)
				}
				after := readAll(t, db, tb, c.target)
				if len(after)-before != c.written {
					t.Errorf("%d tasks written, want %d", len(after)-before, c.written)
				}
			})
		}
		got, err := db.ReadTasks(ctx, tb, sub, &store.TaskKey{Pass: 1, ID: 1}, 1)
		if err != nil {
			t.Fatal(err)
		}
		if want := many[0]; tb == store.V2 && (len(got) != 1 || got[0].Key != want.Key || !bytes.Equal(got[0].Data, want.Data)) {
			t.Errorf("%s: first appended task %v, want %v", tb, got, want.Key)
		}
	}
}

var errAny = errors.New("any error")

// testCompleteTasks checks matching's ack-level delete: every task of the
// queue at or below the level, and no other queue's.
func testCompleteTasks(t *testing.T, db subject) {
	for _, tb := range []store.Table{store.V1, store.V2} {
		all := tableKeys(tb)
		for i, c := range []struct {
			name    string
			through store.TaskKey
			deleted int // the first ones of all
		}{
			{"below every task", store.TaskKey{Pass: all[0].Pass, ID: all[0].ID - 1}, 0},
			{"the first task", all[0], 1},
			{"between tasks", store.TaskKey{Pass: all[3].Pass, ID: all[3].ID + 1}, 4},
			{"every task", all[len(all)-1], len(all)},
			{"past every task", store.MaxTaskKey, len(all)},
		} {
			t.Run(fmt.Sprintf("%s/%s", tb, c.name), func(t *testing.T) {
				q := qk(uint32(2_000_000_000+i), fmt.Sprintf("complete%d", i))
				setupTasks(t, db, tb, q)
				n, err := db.CompleteTasks(ctx, tb, q, c.through)
				if err != nil {
					t.Fatal(err)
				}
				if n != int64(c.deleted) {
					t.Errorf("deleted %d, want %d", n, c.deleted)
				}
				if got := readAll(t, db, tb, q); !slices.Equal(got, all[c.deleted:]) {
					t.Errorf("remaining %v, want %v", got, all[c.deleted:])
				}
				checkDecoys(t, db, tb, q)
			})
		}
	}
}

// testListTaskQueueIDs pages through the distinct queue keys of the task
// tables, each with whether its queue row exists.
func testListTaskQueueIDs(t *testing.T, db subject) {
	for _, tb := range []store.Table{store.V1, store.V2} {
		// Tasks under every key of listKeys; every third key also has a
		// queue row of its own, the others are subqueues or orphans.
		owner := qk(5, "owner")
		mustCreate(t, db, tb, queueRow(owner, 1))
		var want []store.TaskQueueRef
		for i, k := range listKeys {
			has := i%3 == 0
			if has {
				mustCreate(t, db, tb, queueRow(k, 1))
			}
			if err := db.AppendTasks(ctx, tb, owner, 1, k, taskRows(tableKeys(tb)[:1+i%3])); err != nil {
				t.Fatal(err)
			}
			want = append(want, store.TaskQueueRef{QueueKey: k, HasQueueRow: has})
		}
		// A queue row without tasks is not listed; the owner has none.
		mustCreate(t, db, tb, queueRow(qk(math.MaxInt32+1, "x\x00\x00"), 1))

		for _, limit := range []int{1, 2, 5, len(want), 1000} {
			t.Run(fmt.Sprintf("%s/limit=%d", tb, limit), func(t *testing.T) {
				var got []store.TaskQueueRef
				var after *store.QueueKey
				for pages := 0; ; pages++ {
					if pages > len(want)+1 {
						t.Fatalf("paging does not end: %d pages", pages)
					}
					page, err := db.ListTaskQueueIDs(ctx, tb, after, limit)
					if err != nil {
						t.Fatal(err)
					}
					if len(page) > limit {
						t.Fatalf("page of %d, limit %d", len(page), limit)
					}
					got = append(got, page...)
					if len(page) < limit {
						break
					}
					k := page[len(page)-1].QueueKey
					after = &k
				}
				checkRefs(t, got, want)
			})
		}
		t.Run(tb.String()+"/after a key not in the table", func(t *testing.T) {
			after := qk(1, "a\x00\x00\x00")
			got, err := db.ListTaskQueueIDs(ctx, tb, &after, 1000)
			if err != nil {
				t.Fatal(err)
			}
			checkRefs(t, got, want[4:])
		})
		t.Run(tb.String()+"/after the last key", func(t *testing.T) {
			got, err := db.ListTaskQueueIDs(ctx, tb, &listKeys[len(listKeys)-1], 1000)
			if err != nil || len(got) != 0 {
				t.Errorf("got %v, %v; want nothing", got, err)
			}
		})
		t.Run(tb.String()+"/limit 0", func(t *testing.T) {
			got, err := db.ListTaskQueueIDs(ctx, tb, nil, 0)
			if err != nil || len(got) != 0 {
				t.Errorf("got %v, %v; want nothing", got, err)
			}
		})
	}
}

func checkRefs(t *testing.T, got, want []store.TaskQueueRef) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("got %d ids, want %d", len(got), len(want))
	}
	for i := range min(len(got), len(want)) {
		g, w := got[i], want[i]
		if g.RangeHash != w.RangeHash || !bytes.Equal(g.ID, w.ID) || g.HasQueueRow != w.HasQueueRow {
			t.Errorf("id %d = %s (queue row %v), want %s (queue row %v)", i, g.QueueKey, g.HasQueueRow, w.QueueKey, w.HasQueueRow)
		}
	}
}

// testDeleteOrphanTasks deletes tasks by key only while none of their
// parents' queue rows exists in the same table version.
func testDeleteOrphanTasks(t *testing.T, db subject) {
	for _, tb := range []store.Table{store.V1, store.V2} {
		all := tableKeys(tb)
		other := store.V1
		if tb == store.V1 {
			other = store.V2
		}
		p3 := qk(3, "p3 in "+other.String())
		mustCreate(t, db, other, queueRow(p3, 1))
		for i, c := range []struct {
			name    string
			parents []store.QueueKey
			create  []store.QueueKey // parents that exist
			keys    []store.TaskKey
			deleted int64
		}{
			{"no parents given", nil, nil, all[:2], 2},
			{"no parent exists", []store.QueueKey{qk(1, "p1"), qk(2, "p2")}, nil, all[1:4], 3},
			{"absent keys", []store.QueueKey{qk(1, "p1")}, nil, tks(9, 9, 0, 7), 0},
			{"one parent exists", []store.QueueKey{qk(1, "p1"), qk(2, "p2")}, []store.QueueKey{qk(2, "p2")}, all, 0},
			{"a parent in the other table does not count", []store.QueueKey{p3}, nil, all[:1], 1},
		} {
			t.Run(tb.String()+"/"+c.name, func(t *testing.T) {
				q := qk(uint32(4_000_000_000+i), fmt.Sprintf("orphan%d", i))
				owner := qk(uint32(4_000_000_100+i), fmt.Sprintf("owner%d", i))
				setupTasks(t, db, tb, owner)
				mustAppend(t, db, tb, owner, q, taskRows(all)...)
				for _, p := range c.create {
					mustCreate(t, db, tb, queueRow(p, 1))
				}
				n, err := db.DeleteOrphanTasks(ctx, tb, q, c.parents, c.keys)
				if err != nil {
					t.Fatal(err)
				}
				if n != c.deleted {
					t.Errorf("deleted %d, want %d", n, c.deleted)
				}
				if got := len(readAll(t, db, tb, q)); int64(len(all))-int64(got) != c.deleted {
					t.Errorf("%d tasks remain of %d, %d deleted", got, len(all), c.deleted)
				}
				if got := readAll(t, db, tb, owner); !slices.Equal(got, all) {
					t.Errorf("another queue's tasks changed: %v", got)
				}
			})
		}
		t.Run(tb.String()+"/many keys", func(t *testing.T) {
			q := qk(77, "many orphans")
			owner := qk(78, "owner")
			var rows []store.TaskRow
			for i := range 1100 {
				rows = append(rows, task(int64(i%4+1), int64(i+1)))
			}
			mustAppend(t, db, tb, owner, q, rows...)
			n, err := db.DeleteOrphanTasks(ctx, tb, q, []store.QueueKey{qk(1, "gone")}, keysOf(rows))
			if err != nil || n != int64(len(rows)) {
				t.Errorf("deleted %d, %v; want %d", n, err, len(rows))
			}
		})
	}
}

// scanned is a task's place in a table across queues.
type scanned struct {
	q store.QueueKey
	k store.TaskKey
}

// lessScanned orders scanned tasks by queue, then key.
func lessScanned(a, b scanned) bool {
	if a.q.Less(b.q) || b.q.Less(a.q) {
		return a.q.Less(b.q)
	}
	return a.k.Less(b.k)
}

// testScanTasks pages through tasks across queues in primary-key order,
// up to a last queue.
func testScanTasks(t *testing.T, db subject) {
	for _, tb := range []store.Table{store.V1, store.V2} {
		owner := qk(9, "owner")
		mustCreate(t, db, tb, queueRow(owner, 1))
		var all []scanned
		for i, q := range listKeys {
			keys := tableKeys(tb)[:1+i%4]
			if err := db.AppendTasks(ctx, tb, owner, 1, q, taskRows(keys)); err != nil {
				t.Fatal(err)
			}
			for _, k := range keys {
				all = append(all, scanned{q, k})
			}
		}
		slices.SortFunc(all, func(a, b scanned) int {
			if lessScanned(a, b) {
				return -1
			}
			return 1
		})
		through := listKeys[len(listKeys)-3]
		for _, limit := range []int{1, 3, 7, 1000} {
			t.Run(fmt.Sprintf("%s/limit=%d", tb, limit), func(t *testing.T) {
				var want []scanned
				for _, s := range all {
					if !through.Less(s.q) {
						want = append(want, s)
					}
				}
				var got []scanned
				var after store.TaskPos // the zero position: before every task here
				for pages := 0; ; pages++ {
					if pages > len(all)+1 {
						t.Fatal("paging does not end")
					}
					page, err := db.ScanTasks(ctx, tb, after, through, limit)
					if err != nil {
						t.Fatal(err)
					}
					if len(page) > limit {
						t.Fatalf("page of %d, limit %d", len(page), limit)
					}
					for _, r := range page {
						if w := task(r.Key.Pass, r.Key.ID); !bytes.Equal(r.Data, w.Data) {
							t.Errorf("task %s %v: data %q", r.Queue, r.Key, r.Data)
						}
						got = append(got, scanned{r.Queue, r.Key})
					}
					if len(page) < limit {
						break
					}
					last := page[len(page)-1]
					after = store.TaskPos{Queue: last.Queue, Task: last.Key}
				}
				if len(got) != len(want) {
					t.Fatalf("scanned %d tasks, want %d", len(got), len(want))
				}
				for i := range got {
					if !bytes.Equal(got[i].q.ID, want[i].q.ID) || got[i].q.RangeHash != want[i].q.RangeHash || got[i].k != want[i].k {
						t.Errorf("task %d = %s %v, want %s %v", i, got[i].q, got[i].k, want[i].q, want[i].k)
					}
				}
			})
		}
		t.Run(tb.String()+"/skip the rest of a queue", func(t *testing.T) {
			q := listKeys[4]
			page, err := db.ScanTasks(ctx, tb, store.TaskPos{Queue: q, Task: store.MaxTaskKey}, listKeys[5], 100)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range page {
				if !bytes.Equal(r.Queue.ID, listKeys[5].ID) || r.Queue.RangeHash != listKeys[5].RangeHash {
					t.Errorf("scanned %s, want only %s", r.Queue, listKeys[5])
				}
			}
			if len(page) != 1+5%4 {
				t.Errorf("scanned %d tasks of %s, want %d", len(page), listKeys[5], 1+5%4)
			}
		})
	}
}

// testDeleteTaskSets deletes sets of keys and of ranges of many queues in
// one call, more than one statement takes.
func testDeleteTaskSets(t *testing.T, db subject) {
	for _, tb := range []store.Table{store.V1, store.V2} {
		all := tableKeys(tb)
		// 260 queues, 208 sets: more than one statement takes.
		var qs []store.QueueKey
		owner := qk(8, "owner")
		mustCreate(t, db, tb, queueRow(owner, 1))
		for i := range 260 {
			q := qk(uint32(i*16_000_000), fmt.Sprintf("q%03d", i))
			qs = append(qs, q)
			if err := db.AppendTasks(ctx, tb, owner, 1, q, taskRows(all)); err != nil {
				t.Fatal(err)
			}
		}
		var sets []store.TaskSet
		var want int64
		remain := map[string][]store.TaskKey{}
		for i, q := range qs {
			if i%5 == 4 {
				remain[string(q.ID)] = all // not in any set
				continue
			}
			var set store.TaskSet
			switch i % 3 {
			case 0: // exact keys, one absent
				set = store.TaskSet{Queue: q, Keys: []store.TaskKey{all[0], all[2], {Pass: 99, ID: 99}}}
				want += 2
				remain[string(q.ID)] = append([]store.TaskKey{all[1]}, all[3:]...)
			case 1: // a range from the first task
				set = store.TaskSet{Queue: q, Range: store.TaskRange{Max: all[2]}}
				want += 3
				remain[string(q.ID)] = all[3:]
			case 2: // a range inside
				set = store.TaskSet{Queue: q, Range: store.TaskRange{Min: all[1], Max: all[3]}}
				want += 3
				remain[string(q.ID)] = append([]store.TaskKey{all[0]}, all[4:]...)
			}
			sets = append(sets, set)
		}
		start := time.Now()
		n, err := db.DeleteTaskSets(ctx, tb, sets)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: DeleteTaskSets of %d sets took %s", tb, len(sets), time.Since(start))
		if n != want {
			t.Errorf("%s: deleted %d, want %d", tb, n, want)
		}
		left, err := db.ScanTasks(ctx, tb, store.TaskPos{}, qk(math.MaxUint32, "\xff"), 100000)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string][]store.TaskKey{}
		for _, r := range left {
			got[string(r.Queue.ID)] = append(got[string(r.Queue.ID)], r.Key)
		}
		for _, q := range qs {
			if !slices.Equal(got[string(q.ID)], remain[string(q.ID)]) {
				t.Errorf("%s %s: remaining %v, want %v", tb, q, got[string(q.ID)], remain[string(q.ID)])
			}
		}
		if n, err := db.DeleteTaskSets(ctx, tb, nil); n != 0 || err != nil {
			t.Errorf("no sets: %d, %v", n, err)
		}
	}
}
