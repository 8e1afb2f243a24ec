package sqlstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/tqscavenger/tqscavenger/internal/testdb"
	"github.com/tqscavenger/tqscavenger/sqlstore"
	"github.com/tqscavenger/tqscavenger/store"
)

// holdTableLock locks the tasks table against every other session, as
// PostgreSQL's LOCK TABLE … IN ACCESS EXCLUSIVE MODE or MySQL's LOCK
// TABLES … WRITE does, until the test ends.
func holdTableLock(t *testing.T, db *sqlstore.DB) {
	t.Helper()
	conn, err := testdb.SQL(t, db).Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	stmts := []string{"BEGIN", "LOCK TABLE tasks IN ACCESS EXCLUSIVE MODE"}
	if db.Engine() == sqlstore.MySQL {
		stmts = []string{"LOCK TABLES tasks WRITE"}
	}
	for _, q := range stmts {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	t.Cleanup(func() {
		q := "ROLLBACK"
		if db.Engine() == sqlstore.MySQL {
			q = "UNLOCK TABLES"
		}
		conn.ExecContext(context.Background(), q)
	})
}

// TestStartupUnderTableLock: with the task table locked by another
// session, the start-up statements (the schema check, the table list,
// the lock) finish within the statement timeout, and a check that cannot
// finish says so (a timeout, a lock wait, a cancellation), never that the
// tables are not Temporal's.
func TestStartupUnderTableLock(t *testing.T) {
	for _, e := range []sqlstore.Engine{sqlstore.Postgres, sqlstore.MySQL} {
		t.Run(string(e), func(t *testing.T) {
			t.Parallel()
			db := testdb.Open(t, e)
			holdTableLock(t, db)
			const timeout = 500 * time.Millisecond
			timed, err := sqlstore.Open(ctx, db.DSN().URL.String(), sqlstore.Options{StatementTimeout: timeout})
			if err != nil {
				t.Fatal(err)
			}
			defer timed.Close()
			plain := testdb.OpenDSN(t, db.DSN().URL.String())

			for _, c := range []struct {
				name  string
				check func() error
				want  []error
			}{
				{"Check, statement timeout", func() error { _, err := timed.Check(ctx); return err },
					[]error{store.ErrStatementTimeout, store.ErrTransient, context.DeadlineExceeded}},
				{"Check, cancelled", func() error {
					ctx, cancel := context.WithTimeout(ctx, timeout)
					defer cancel()
					_, err := plain.Check(ctx)
					return err
				}, []error{context.DeadlineExceeded}},
			} {
				start := time.Now()
				err := c.check()
				took := time.Since(start)
				if err == nil {
					t.Fatalf("%s: no error while the table is locked", c.name)
				}
				for _, w := range c.want {
					if !errors.Is(err, w) {
						t.Errorf("%s: %v does not wrap %v", c.name, err, w)
					}
				}
				if errors.Is(err, store.ErrSchema) {
					t.Errorf("%s: a lock wait reported as a schema problem: %v", c.name, err)
				}
				if took > timeout+5*time.Second {
					t.Errorf("%s: took %s with a bound of %s", c.name, took, timeout)
				}
				t.Logf("%s: %v (%s)", c.name, err, took.Round(time.Millisecond))
			}
			// What does not touch the table goes on.
			if tables, err := timed.Tables(ctx); err != nil || len(tables) != 2 {
				t.Errorf("Tables while the table is locked: %v, %v", tables, err)
			}
			lock, err := timed.Lock(ctx, false)
			if err != nil {
				t.Fatalf("Lock while the table is locked: %v", err)
			}
			lock.Unlock()
		})
	}
}

// TestStartupLockTimeout: PostgreSQL's own lock_timeout ends the check's
// wait with a transient error, not a schema problem.
func TestStartupLockTimeout(t *testing.T) {
	db := testdb.Open(t, sqlstore.Postgres)
	holdTableLock(t, db)
	u := *db.DSN().URL
	q := u.Query()
	q.Set("lock_timeout", "200")
	u.RawQuery = q.Encode()
	st := testdb.OpenDSN(t, u.String())
	_, err := st.Check(ctx)
	if !errors.Is(err, store.ErrTransient) || errors.Is(err, store.ErrSchema) {
		t.Errorf("Check under lock_timeout: %v, want a transient error, not ErrSchema", err)
	}
}
