package sqlstore_test

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/tqscavenger/tqscavenger/sqlstore"
	"github.com/tqscavenger/tqscavenger/store"
)

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
