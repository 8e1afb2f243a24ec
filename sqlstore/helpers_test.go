package sqlstore_test

// Helpers of the tests that run on every engine: the engine loops and the
// rows they write.

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/tqscavenger/tqscavenger/internal/testdb"
	"github.com/tqscavenger/tqscavenger/sqlstore"
	"github.com/tqscavenger/tqscavenger/store"
)

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
