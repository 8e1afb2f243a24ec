package sqlstore_test

// The conformance suite: every store.Store and store.Writer method against
// SQLite, PostgreSQL and MariaDB, each test on a fresh database from
// package testdb. The same expectations hold on every engine; where an
// engine legitimately differs (statement counts of the limited delete) the
// table says so.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/tqscavenger/tqscavenger/internal/testdb"
	"github.com/tqscavenger/tqscavenger/sqlstore"
	"github.com/tqscavenger/tqscavenger/store"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testdb.StopTLSServers() // before the leak check: they have goroutines
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// forEachEngine runs f on a fresh store of every engine, in parallel.
func forEachEngine(t *testing.T, f func(t *testing.T, e sqlstore.Engine, db *sqlstore.DB)) {
	t.Helper()
	for _, e := range testdb.Engines {
		t.Run(string(e), func(t *testing.T) {
			t.Parallel()
			f(t, e, testdb.Open(t, e))
		})
	}
}

// opener makes a store on a test's database, closed when the test ends.
type opener func(t *testing.T, opts sqlstore.Options) *sqlstore.DB

// forEachOpening runs f on a fresh database of every engine, in parallel,
// twice: with stores made by Open, and with stores made by New over a
// connector built as a caller builds one (see testdb.Connector). open
// makes the stores, each time the same way.
func forEachOpening(t *testing.T, f func(t *testing.T, e sqlstore.Engine, open opener)) {
	t.Helper()
	for _, e := range testdb.Engines {
		for _, how := range []string{"Open", "New"} {
			t.Run(string(e)+"/"+how, func(t *testing.T) {
				t.Parallel()
				dsn := testdb.DSN(t, e)
				f(t, e, func(t *testing.T, opts sqlstore.Options) *sqlstore.DB {
					t.Helper()
					if how == "New" {
						return testdb.OpenNew(t, dsn, opts)
					}
					db, err := sqlstore.Open(ctx, dsn, opts)
					if err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { db.Close() })
					return db
				})
			})
		}
	}
}

var ctx = context.Background()

func qk(rh uint32, id string) store.QueueKey { return store.QueueKey{RangeHash: rh, ID: []byte(id)} }

func queueRow(k store.QueueKey, rangeID int64) store.QueueRow {
	return store.QueueRow{QueueKey: k, RangeID: rangeID, Data: fmt.Appendf(nil, "data of %s at %d", k, rangeID), Encoding: "Proto3"}
}

func task(pass, id int64) store.TaskRow {
	return store.TaskRow{Key: store.TaskKey{Pass: pass, ID: id}, Data: fmt.Appendf(nil, "task %d/%d", pass, id), Encoding: "Proto3"}
}

// ids returns the keys of rows, for comparisons.
func keysOf(rows []store.TaskRow) []store.TaskKey {
	out := make([]store.TaskKey, len(rows))
	for i, r := range rows {
		out[i] = r.Key
	}
	return out
}

func mustCreate(t *testing.T, w store.Writer, tb store.Table, rows ...store.QueueRow) {
	t.Helper()
	for _, r := range rows {
		if err := w.CreateQueue(ctx, tb, r); err != nil {
			t.Fatalf("CreateQueue %s %s: %v", tb, r.QueueKey, err)
		}
	}
}

// mustAppend creates the owner row if needed and appends tasks to target.
func mustAppend(t *testing.T, db *sqlstore.DB, tb store.Table, owner, target store.QueueKey, tasks ...store.TaskRow) {
	t.Helper()
	r, err := db.GetQueue(ctx, tb, owner)
	if errors.Is(err, store.ErrNotFound) {
		r = queueRow(owner, 1)
		mustCreate(t, db, tb, r)
	} else if err != nil {
		t.Fatal(err)
	}
	if err := db.AppendTasks(ctx, tb, owner, r.RangeID, target, tasks); err != nil {
		t.Fatalf("AppendTasks %s %s: %v", tb, target, err)
	}
}

func readAll(t *testing.T, st store.Store, tb store.Table, q store.QueueKey) []store.TaskKey {
	t.Helper()
	rows, err := st.ReadTasks(ctx, tb, q, nil, 1<<20)
	if err != nil {
		t.Fatalf("ReadTasks %s %s: %v", tb, q, err)
	}
	return keysOf(rows)
}

// Range hashes around the int32 and uint32 limits, and ids that share
// prefixes or differ only in a high byte, in primary-key order: the
// unsigned order of range_hash, then the bytewise order of task_queue_id
// (TestListKeysOrder checks the list against store.QueueKey.Less).
var listKeys = []store.QueueKey{
	qk(0, "a"),
	qk(1, "a"),
	qk(1, "a\x00"),
	qk(1, "a\x00\x00"),
	qk(1, "a\x01"),
	qk(1, "ab"),
	qk(1, "a\x7f"),
	qk(1, "a\x80"),
	qk(1, "a\xff"),
	qk(1, "b"),
	qk(math.MaxInt32-1, "x"),
	qk(math.MaxInt32, "x"),
	qk(math.MaxInt32+1, "x"),
	qk(math.MaxInt32+1, "x\x00"),
	qk(math.MaxInt32+2, "\x00"),
	qk(3_000_000_000, "q"),
	qk(4060367326, "\x32\x04\x9b\x68my-tq\x02"),
	qk(math.MaxUint32-1, "z"),
	qk(math.MaxUint32, "\xff"),
	qk(math.MaxUint32, "\xff\xff"),
	qk(math.MaxUint32, "\xff\xff\xff"),
}

func TestListKeysOrder(t *testing.T) {
	for i := 1; i < len(listKeys); i++ {
		if !listKeys[i-1].Less(listKeys[i]) {
			t.Errorf("listKeys[%d] = %s does not sort before listKeys[%d] = %s", i-1, listKeys[i-1], i, listKeys[i])
		}
	}
}

func TestListQueues(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e sqlstore.Engine, db *sqlstore.DB) {
		for _, tb := range []store.Table{store.V1, store.V2} {
			// Insert in a shuffled order so the table's physical order is not
			// the key order.
			want := make([]store.QueueRow, len(listKeys))
			for i, k := range listKeys {
				want[i] = queueRow(k, int64(i+1)+int64(tb)*100)
			}
			ins := slices.Clone(want)
			rand.New(rand.NewPCG(1, uint64(tb))).Shuffle(len(ins), func(i, j int) { ins[i], ins[j] = ins[j], ins[i] })
			mustCreate(t, db, tb, ins...)
		}
		for _, tb := range []store.Table{store.V1, store.V2} {
			want := make([]store.QueueRow, len(listKeys))
			for i, k := range listKeys {
				want[i] = queueRow(k, int64(i+1)+int64(tb)*100)
			}
			for _, limit := range []int{1, 2, 3, 7, len(want), 100} {
				t.Run(fmt.Sprintf("%s/limit=%d", tb, limit), func(t *testing.T) {
					var got []store.QueueRow
					var after *store.QueueKey
					for pages := 0; ; pages++ {
						if pages > len(want)+1 {
							t.Fatalf("paging does not end: %d pages", pages)
						}
						page, err := db.ListQueues(ctx, tb, after, limit)
						if err != nil {
							t.Fatal(err)
						}
						if len(page) > limit {
							t.Fatalf("page of %d rows, limit %d", len(page), limit)
						}
						got = append(got, page...)
						if len(page) < limit {
							break
						}
						k := page[len(page)-1].QueueKey
						after = &k
					}
					checkRows(t, got, want)
				})
			}
			// Starting after keys that are not in the table (between rows, before
			// the first, after the last) gives exactly the rows above them.
			for _, after := range []store.QueueKey{
				qk(0, ""), qk(0, "a\x00"), qk(1, ""), qk(1, "a\x00\x00\x00"), qk(1, "a\x80\x00"),
				qk(math.MaxInt32, "y"), qk(math.MaxInt32+1, ""), qk(math.MaxInt32+1, "w"),
				qk(3_000_000_000, "p"), qk(math.MaxUint32, "\xfe"), qk(math.MaxUint32, "\xff\xff\xff\xff"),
			} {
				t.Run(fmt.Sprintf("%s/after=%s", tb, after), func(t *testing.T) {
					var exp []store.QueueRow
					for _, r := range want {
						if after.Less(r.QueueKey) {
							exp = append(exp, r)
						}
					}
					got, err := db.ListQueues(ctx, tb, &after, 100)
					if err != nil {
						t.Fatal(err)
					}
					checkRows(t, got, exp)
				})
			}
		}
	})
}

func checkRows(t *testing.T, got, want []store.QueueRow) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("got %d rows, want %d", len(got), len(want))
	}
	for i := range min(len(got), len(want)) {
		g, w := got[i], want[i]
		if g.RangeHash != w.RangeHash || !bytes.Equal(g.ID, w.ID) || g.RangeID != w.RangeID || !bytes.Equal(g.Data, w.Data) || g.Encoding != w.Encoding {
			t.Errorf("row %d = %s range_id %d %q %q, want %s range_id %d %q %q", i, g.QueueKey, g.RangeID, g.Data, g.Encoding, w.QueueKey, w.RangeID, w.Data, w.Encoding)
		}
	}
}

// Keys of v2 tasks whose pass order differs from their task_id order, as
// with fairness keys.
var v2Keys = tks(1, 50, 1, 70, 2, 10, 3, 5, 3, 60, 3, 61, 7, 1)

var v1Keys = tks(0, 1, 0, 2, 0, 5, 0, 100, 0, 100001, 0, 1<<40)

// tks makes task keys from (pass, task_id) pairs.
func tks(passID ...int64) []store.TaskKey {
	out := make([]store.TaskKey, 0, len(passID)/2)
	for i := 0; i+1 < len(passID); i += 2 {
		out = append(out, store.TaskKey{Pass: passID[i], ID: passID[i+1]})
	}
	return out
}

func taskRows(keys []store.TaskKey) []store.TaskRow {
	out := make([]store.TaskRow, len(keys))
	for i, k := range keys {
		out[i] = task(k.Pass, k.ID)
	}
	return out
}

// tableKeys returns the fixture keys of tb.
func tableKeys(tb store.Table) []store.TaskKey {
	if tb == store.V2 {
		return v2Keys
	}
	return v1Keys
}

// setupTasks writes the fixture keys of tb in shuffled order to q, and
// decoys under keys that share q's range_hash or id prefix.
func setupTasks(t *testing.T, db *sqlstore.DB, tb store.Table, q store.QueueKey) {
	t.Helper()
	rows := taskRows(tableKeys(tb))
	rand.New(rand.NewPCG(2, 3)).Shuffle(len(rows), func(i, j int) { rows[i], rows[j] = rows[j], rows[i] })
	mustAppend(t, db, tb, q, q, rows...)
	for _, decoy := range decoys(q) {
		mustAppend(t, db, tb, q, decoy, taskRows(tableKeys(tb))...)
	}
}

func decoys(q store.QueueKey) []store.QueueKey {
	return []store.QueueKey{
		{RangeHash: q.RangeHash, ID: append(slices.Clone(q.ID), 0)},
		{RangeHash: q.RangeHash, ID: q.ID[:len(q.ID)-1]},
		{RangeHash: q.RangeHash + 1, ID: q.ID},
		{RangeHash: q.RangeHash - 1, ID: q.ID},
	}
}

func checkDecoys(t *testing.T, db *sqlstore.DB, tb store.Table, q store.QueueKey) {
	t.Helper()
	for _, d := range decoys(q) {
		if got := readAll(t, db, tb, d); !slices.Equal(got, tableKeys(tb)) {
			t.Errorf("decoy queue %s was touched: %v", d, got)
		}
	}
}

func TestReadTasks(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e sqlstore.Engine, db *sqlstore.DB) {
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
	})
}

func TestDeleteTasks(t *testing.T) {
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
	forEachEngine(t, func(t *testing.T, e sqlstore.Engine, db *sqlstore.DB) {
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
	})
}

// deleteKeys deletes exactly the tasks keys of q, as a DeleteTaskSets of
// one set (a nil keys is an empty list, not a range).
func deleteKeys(db *sqlstore.DB, tb store.Table, q store.QueueKey, keys []store.TaskKey) (int64, error) {
	return db.DeleteTaskSets(ctx, tb, []store.TaskSet{{Queue: q, Keys: append([]store.TaskKey{}, keys...)}})
}

// deleteQueue deletes the queue row q fenced on rangeID, as a DeleteQueues
// of one fence, and reports a row that changed or is gone as
// store.ErrConditionFailed.
func deleteQueue(ctx context.Context, db *sqlstore.DB, tb store.Table, q store.QueueKey, rangeID int64) error {
	n, err := db.DeleteQueues(ctx, tb, []store.QueueFence{{QueueKey: q, RangeID: rangeID}})
	if err == nil && n == 0 {
		err = fmt.Errorf("delete %s at range_id %d: %w", q, rangeID, store.ErrConditionFailed)
	}
	return err
}

// TestDeleteTaskSetOfKeys checks DeleteTaskSets of one set of exact keys.
func TestDeleteTaskSetOfKeys(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e sqlstore.Engine, db *sqlstore.DB) {
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
	})
}

// TestQueueRows runs on stores made by New too: there MySQL's connector
// does not report found rows, and an unchanged row's compare-and-set must
// succeed all the same.
func TestQueueRows(t *testing.T) {
	forEachOpening(t, func(t *testing.T, e sqlstore.Engine, open opener) {
		db := open(t, sqlstore.Options{})
		for _, tb := range []store.Table{store.V1, store.V2} {
			k := qk(math.MaxUint32, "queue")
			other := qk(math.MaxUint32, "queue\x00")
			mustCreate(t, db, tb, queueRow(other, 9))

			t.Run(tb.String()+"/GetQueue missing", func(t *testing.T) {
				_, err := db.GetQueue(ctx, tb, k)
				if !errors.Is(err, store.ErrNotFound) {
					t.Fatalf("GetQueue of a missing row: %v, want ErrNotFound", err)
				}
			})
			t.Run(tb.String()+"/CreateQueue", func(t *testing.T) {
				mustCreate(t, db, tb, queueRow(k, 1))
				got, err := db.GetQueue(ctx, tb, k)
				if err != nil {
					t.Fatal(err)
				}
				checkRows(t, []store.QueueRow{got}, []store.QueueRow{queueRow(k, 1)})
				err = db.CreateQueue(ctx, tb, queueRow(k, 5))
				if !errors.Is(err, store.ErrConditionFailed) {
					t.Fatalf("CreateQueue of an existing row: %v, want ErrConditionFailed", err)
				}
				if errors.Is(err, store.ErrTransient) {
					t.Errorf("a duplicate is not transient: %v", err)
				}
				if got, _ := db.GetQueue(ctx, tb, k); got.RangeID != 1 {
					t.Errorf("a failed create changed the row: range_id %d", got.RangeID)
				}
			})
			t.Run(tb.String()+"/UpdateQueue", func(t *testing.T) {
				for _, c := range []struct {
					name      string
					row       store.QueueRow
					prev      int64
					wantErr   bool
					wantAfter store.QueueRow
				}{
					{"new range_id", queueRow(k, 2), 1, false, queueRow(k, 2)},
					{"stale range_id", queueRow(k, 3), 1, true, queueRow(k, 2)},
					// Same range_id and the same bytes: the row matched, so the
					// compare-and-set succeeded (MySQL reports 0 changed rows
					// unless the client asks for found rows).
					{"unchanged row", queueRow(k, 2), 2, false, queueRow(k, 2)},
					{"same range_id, new data", store.QueueRow{QueueKey: k, RangeID: 2, Data: []byte("new"), Encoding: "Json"}, 2, false, store.QueueRow{QueueKey: k, RangeID: 2, Data: []byte("new"), Encoding: "Json"}},
					{"missing row", queueRow(qk(5, "missing"), 2), 1, true, store.QueueRow{}},
				} {
					t.Run(c.name, func(t *testing.T) {
						err := db.UpdateQueue(ctx, tb, c.row, c.prev)
						if c.wantErr != (err != nil) || (err != nil && !errors.Is(err, store.ErrConditionFailed)) {
							t.Fatalf("UpdateQueue: %v, want error %v (ErrConditionFailed)", err, c.wantErr)
						}
						if c.wantAfter.ID == nil {
							return
						}
						got, err := db.GetQueue(ctx, tb, k)
						if err != nil {
							t.Fatal(err)
						}
						checkRows(t, []store.QueueRow{got}, []store.QueueRow{c.wantAfter})
					})
				}
			})
			t.Run(tb.String()+"/DeleteQueue", func(t *testing.T) {
				cur, err := db.GetQueue(ctx, tb, k)
				if err != nil {
					t.Fatal(err)
				}
				for _, c := range []struct {
					name    string
					key     store.QueueKey
					rangeID int64
					wantErr bool
				}{
					{"range_id changed", k, cur.RangeID - 1, true},
					{"range_id newer", k, cur.RangeID + 1, true},
					{"fenced on range_id", k, cur.RangeID, false},
					{"row gone", k, cur.RangeID, true},
					{"never existed", qk(5, "missing"), 1, true},
				} {
					t.Run(c.name, func(t *testing.T) {
						err := deleteQueue(ctx, db, tb, c.key, c.rangeID)
						if c.wantErr != (err != nil) || (err != nil && !errors.Is(err, store.ErrConditionFailed)) {
							t.Fatalf("DeleteQueues of one: %v, want error %v (ErrConditionFailed)", err, c.wantErr)
						}
						_, err = db.GetQueue(ctx, tb, k)
						if exists := err == nil; exists != (c.name == "range_id changed" || c.name == "range_id newer") {
							t.Errorf("after %q the row exists: %v (%v)", c.name, exists, err)
						}
					})
				}
				if _, err := db.GetQueue(ctx, tb, other); err != nil {
					t.Errorf("the neighbour row: %v", err)
				}
			})
		}
	})
}

func TestAppendTasks(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e sqlstore.Engine, db *sqlstore.DB) {
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
	})
}

var errAny = errors.New("any error")

func TestTables(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e sqlstore.Engine, db *sqlstore.DB) {
		for _, c := range []struct {
			drop string
			want []store.Table
		}{
			{"", []store.Table{store.V1, store.V2}},
			{"tasks_v2", []store.Table{store.V1}},
			{"task_queues_v2", []store.Table{store.V1}},
			{"tasks", nil},
		} {
			if c.drop != "" {
				testdb.Exec(t, db, "DROP TABLE "+c.drop)
			}
			got, err := db.Tables(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("after dropping %q: Tables() = %v, want %v", c.drop, got, c.want)
			}
		}
	})
}

func TestStatements(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e sqlstore.Engine, db *sqlstore.DB) {
		q := qk(99, "q")
		limitedDelete := int64(1)
		if e == sqlstore.SQLite {
			limitedDelete = 2 // a probe for the limit-th key, then a range delete
		}
		manyKeys := make([]store.TaskKey, 1001)
		for _, c := range []struct {
			name string
			op   func() error
			want int64
		}{
			{"CreateQueue", func() error { return db.CreateQueue(ctx, store.V1, queueRow(q, 1)) }, 1},
			{"AppendTasks of 450", func() error {
				rows := make([]store.TaskRow, 450)
				for i := range rows {
					rows[i] = task(0, int64(i+1))
				}
				return db.AppendTasks(ctx, store.V1, q, 1, q, rows)
			}, 1 + 3 + 1}, // fence, three INSERTs of 200, commit
			{"ListQueues", func() error { _, err := db.ListQueues(ctx, store.V1, nil, 10); return err }, 1},
			{"ReadTasks", func() error { _, err := db.ReadTasks(ctx, store.V1, q, nil, 10); return err }, 1},
			{"DeleteTasks", func() error {
				_, err := db.DeleteTasks(ctx, store.V1, q, store.TaskRange{Max: store.TaskKey{ID: 10}}, 0)
				return err
			}, 1},
			{"DeleteTasks limited", func() error {
				_, err := db.DeleteTasks(ctx, store.V1, q, store.TaskRange{Max: store.TaskKey{ID: 100}}, 5)
				return err
			}, limitedDelete},
			{"DeleteTaskSets of 1001 keys", func() error { _, err := deleteKeys(db, store.V1, q, manyKeys); return err }, 3},
			{"DeleteTaskSets of no keys", func() error { _, err := deleteKeys(db, store.V1, q, nil); return err }, 0},
			{"GetQueue", func() error { _, err := db.GetQueue(ctx, store.V1, q); return err }, 1},
			{"UpdateQueue", func() error { return db.UpdateQueue(ctx, store.V1, queueRow(q, 2), 1) }, 1},
			{"Tables", func() error { _, err := db.Tables(ctx); return err }, 1},
			{"DeleteQueues of one", func() error { return deleteQueue(ctx, db, store.V1, q, 2) }, 1},
		} {
			before := db.Stats().Statements
			if err := c.op(); err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			if got := db.Stats().Statements - before; got != c.want {
				t.Errorf("%s issued %d statements, want %d", c.name, got, c.want)
			}
		}
	})
}

// TestStatementTimeout blocks store calls behind a lock held by another
// connection: a statement that runs out of its StatementTimeout must fail
// promptly with an error that wraps store.ErrTransient (the scavenger
// retries it) and context.DeadlineExceeded, while a caller's own deadline
// is not transient; and none of them may take effect once the lock is
// gone. It runs on stores made by New over a caller's connector too: the
// store must stop the statements on the server all the same.
func TestStatementTimeout(t *testing.T) {
	forEachOpening(t, func(t *testing.T, e sqlstore.Engine, open opener) {
		db := open(t, sqlstore.Options{})
		q := qk(math.MaxUint32, "locked")
		q2 := qk(math.MaxUint32, "locked too")
		mustCreate(t, db, store.V1, queueRow(q, 1), queueRow(q2, 1))
		const timeout = 300 * time.Millisecond
		timed := open(t, sqlstore.Options{StatementTimeout: timeout, BusyTimeout: 20 * time.Second})
		plain := open(t, sqlstore.Options{BusyTimeout: 20 * time.Second})

		// Hold both queue rows (SQLite: the database) in a transaction of db.
		tx, err := db.SQL().BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		if _, err := tx.ExecContext(ctx, "UPDATE task_queues SET range_id = range_id WHERE range_id = 1"); err != nil {
			t.Fatal(err)
		}

		for _, c := range []struct {
			name      string
			st        *sqlstore.DB
			op        func(ctx context.Context, st *sqlstore.DB) error
			transient bool
		}{
			{"DeleteQueues of one", timed, func(ctx context.Context, st *sqlstore.DB) error {
				return deleteQueue(ctx, st, store.V1, q, 1)
			}, true},
			{"AppendTasks", timed, func(ctx context.Context, st *sqlstore.DB) error {
				return st.AppendTasks(ctx, store.V1, q, 1, q, []store.TaskRow{task(0, 1)})
			}, true},
			{"UpdateQueue", timed, func(ctx context.Context, st *sqlstore.DB) error {
				return st.UpdateQueue(ctx, store.V1, queueRow(q, 2), 1)
			}, true},
			// The caller's own deadline is not a statement timeout, but it
			// stops the statement on the server all the same.
			{"caller's deadline", plain, func(ctx context.Context, st *sqlstore.DB) error {
				ctx, cancel := context.WithTimeout(ctx, timeout)
				defer cancel()
				return deleteQueue(ctx, st, store.V1, q2, 1)
			}, false},
			// Nor is it when it ends first on a store with a statement
			// timeout.
			{"caller's deadline before the statement timeout", timed, func(ctx context.Context, st *sqlstore.DB) error {
				ctx, cancel := context.WithTimeout(ctx, timeout/3)
				defer cancel()
				return deleteQueue(ctx, st, store.V1, q2, 1)
			}, false},
		} {
			t.Run(c.name, func(t *testing.T) {
				start := time.Now()
				err := c.op(ctx, c.st)
				took := time.Since(start)
				if err == nil {
					t.Fatal("no error while the row is locked")
				}
				if !errors.Is(err, context.DeadlineExceeded) {
					t.Errorf("error %v does not wrap context.DeadlineExceeded", err)
				}
				if errors.Is(err, store.ErrTransient) != c.transient {
					t.Errorf("error %v: transient %v, want %v", err, !c.transient, c.transient)
				}
				if errors.Is(err, store.ErrStatementTimeout) != c.transient {
					t.Errorf("error %v: a statement timeout %v, want %v", err, !c.transient, c.transient)
				}
				// The server was told to stop the statement and answered.
				if errors.Is(err, store.ErrUnknownOutcome) {
					t.Errorf("error %v: outcome unknown, though the server stopped the statement", err)
				}
				if took > 5*time.Second {
					t.Errorf("took %s with a %s timeout", took, timeout)
				}
			})
		}
		if err := tx.Rollback(); err != nil {
			t.Fatal(err)
		}
		// A statement reported as timed out must not take effect once the
		// lock it waited for is gone: give any that still runs on the
		// server the time to do so, then look.
		time.Sleep(time.Second)
		got, err := db.GetQueue(ctx, store.V1, q)
		if err != nil {
			t.Fatalf("queue row after the timeouts: %v", err)
		}
		if got.RangeID != 1 {
			t.Errorf("queue row has range_id %d after timed-out updates, want 1", got.RangeID)
		}
		if tasks := readAll(t, db, store.V1, q); len(tasks) != 0 {
			t.Errorf("timed-out append wrote %v", tasks)
		}
		if _, err := db.GetQueue(ctx, store.V1, q2); err != nil {
			t.Errorf("a delete whose caller gave up took effect later: %v", err)
		}
		// And the store works again.
		if err := deleteQueue(ctx, timed, store.V1, q, 1); err != nil {
			t.Fatalf("after the lock is released: %v", err)
		}
	})
}

func TestListTaskQueueIDs(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e sqlstore.Engine, db *sqlstore.DB) {
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
	})
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

func TestDeleteOrphanTasks(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e sqlstore.Engine, db *sqlstore.DB) {
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
	})
}

// scanned is a task's place in a table across queues.
type scanned struct {
	q store.QueueKey
	k store.TaskKey
}

func lessScanned(a, b scanned) bool {
	if a.q.Less(b.q) || b.q.Less(a.q) {
		return a.q.Less(b.q)
	}
	return a.k.Less(b.k)
}

func TestScanTasks(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e sqlstore.Engine, db *sqlstore.DB) {
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
	})
}

func TestDeleteTaskSets(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e sqlstore.Engine, db *sqlstore.DB) {
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
	})
}

func TestDeleteQueues(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e sqlstore.Engine, db *sqlstore.DB) {
		for _, tb := range []store.Table{store.V1, store.V2} {
			var fences []store.QueueFence
			var kept []store.QueueKey
			var want int64
			for i := range 430 { // more fences than one statement takes
				q := qk(uint32(math.MaxUint32-i), fmt.Sprintf("q%d", i))
				switch i % 3 {
				case 0: // still at the fenced range_id: deleted
					mustCreate(t, db, tb, queueRow(q, 5))
					fences = append(fences, store.QueueFence{QueueKey: q, RangeID: 5})
					want++
				case 1: // taken over since: kept
					mustCreate(t, db, tb, queueRow(q, 6))
					fences = append(fences, store.QueueFence{QueueKey: q, RangeID: 5})
					kept = append(kept, q)
				case 2: // gone already
					fences = append(fences, store.QueueFence{QueueKey: q, RangeID: 5})
				}
			}
			n, err := db.DeleteQueues(ctx, tb, fences)
			if err != nil {
				t.Fatal(err)
			}
			if n != want {
				t.Errorf("%s: deleted %d, want %d", tb, n, want)
			}
			rows, err := db.ListQueues(ctx, tb, nil, 10000)
			if err != nil {
				t.Fatal(err)
			}
			if len(rows) != len(kept) {
				t.Errorf("%s: %d rows remain, want the %d taken over", tb, len(rows), len(kept))
			}
			for _, r := range rows {
				if r.RangeID != 6 {
					t.Errorf("%s: row %s at range_id %d remains", tb, r.QueueKey, r.RangeID)
				}
			}
		}
	})
}
