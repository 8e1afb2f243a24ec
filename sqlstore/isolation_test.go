package sqlstore_test

import (
	"context"
	"errors"
	"net/url"
	"runtime"
	"testing"

	"github.com/go-sql-driver/mysql"
	"github.com/tqscavenger/tqscavenger/internal/testdb"
	"github.com/tqscavenger/tqscavenger/sqlstore"
	"github.com/tqscavenger/tqscavenger/store"
)

// TestMySQLSessionIsolation: every session of a MySQL store reads
// committed, whatever its DSN asks for (Temporal's own sessions do so by
// connect attributes), so that a task range delete takes no gap lock
// where matching appends: a host's insert just past a range the pass is
// deleting does not wait for the pass's commit.
func TestMySQLSessionIsolation(t *testing.T) {
	base := testdb.DSN(t, sqlstore.MySQL)
	for _, c := range []struct{ name, param string }{
		{"plain", ""},
		{"DSN asks for repeatable read", "tx_isolation='repeatable-read'"},
		{"DSN asks for serializable", "tx_isolation='serializable'"},
	} {
		t.Run(c.name, func(t *testing.T) {
			u, err := url.Parse(base)
			if err != nil {
				t.Fatal(err)
			}
			if c.param != "" {
				u.RawQuery = url.PathEscape(c.param)
			}
			db := testdb.OpenDSN(t, u.String())
			var iso string
			// MySQL 8 names the variable transaction_isolation; MariaDB
			// before 11.1, tx_isolation.
			if err := db.SQL().QueryRowContext(ctx, "SELECT @@transaction_isolation").Scan(&iso); err != nil {
				if err := db.SQL().QueryRowContext(ctx, "SELECT @@tx_isolation").Scan(&iso); err != nil {
					t.Fatal(err)
				}
			}
			if iso != "READ-COMMITTED" {
				t.Errorf("session isolation %s, want READ-COMMITTED", iso)
			}
		})
	}

	db := testdb.OpenDSN(t, base)
	other := testdb.OpenDSN(t, base)
	q := qk(9, "appended")
	mustAppend(t, db, store.V1, q, q, task(0, 1), task(0, 2), task(0, 3))
	mustAppend(t, db, store.V1, qk(10, "next"), qk(10, "next"), task(0, 1)) // the record past the gap
	// The pass's delete, held open on one of the store's own sessions (the
	// store's deletes commit at once: this keeps its locks for the test).
	pass, err := db.SQL().BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer pass.Rollback()
	res, err := pass.ExecContext(ctx, "DELETE FROM tasks WHERE range_hash = 9 AND task_queue_id = 'appended' AND task_id <= 10 ORDER BY range_hash, task_queue_id, task_id LIMIT 100")
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := res.RowsAffected(); n != 3 {
		t.Fatalf("deleted %d, want 3", n)
	}
	// The host appends the queue's next task, past the range. Under
	// repeatable read the delete's next-key lock holds the insert off
	// until the pass commits: here it would fail with a lock wait timeout.
	host, err := other.SQL().Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close()
	if _, err := host.ExecContext(ctx, "SET SESSION innodb_lock_wait_timeout = 1"); err != nil {
		t.Fatal(err)
	}
	if _, err := host.ExecContext(ctx, "INSERT INTO tasks (range_hash, task_queue_id, task_id, data, data_encoding) VALUES (9, 'appended', 11, 'x', 'Proto3')"); err != nil {
		var me *mysql.MySQLError
		if errors.As(err, &me) && me.Number == 1205 {
			t.Fatalf("the host's append waited for the pass's delete: %v", err)
		}
		t.Fatal(err)
	}
}

// TestOrphanDeleteRecheck is the fault test of the orphan delete's
// re-check under read-committed sessions: matching re-creates a parent's
// queue row (its insert not yet committed) while the pass deletes the
// parent's orphan tasks. The delete must wait for the insert and then
// delete nothing, as the row exists; a re-check reading a snapshot would
// delete the tasks of a queue that is back.
func TestOrphanDeleteRecheck(t *testing.T) {
	db := testdb.Open(t, sqlstore.MySQL)
	other := testdb.OpenDSN(t, db.DSN().String())
	parent := qk(21, "parent")
	orphan := qk(22, "child")
	owner := qk(23, "owner")
	mustAppend(t, db, store.V1, owner, orphan, task(0, 1), task(0, 2), task(0, 3))
	keys := []store.TaskKey{{ID: 1}, {ID: 2}, {ID: 3}}

	host, err := other.SQL().BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer host.Rollback()
	if _, err := host.ExecContext(ctx, "INSERT INTO task_queues (range_hash, task_queue_id, range_id, data, data_encoding) VALUES (21, 'parent', 1, 'x', 'Proto3')"); err != nil {
		t.Fatal(err)
	}
	type result struct {
		n   int64
		err error
	}
	done := make(chan result, 1)
	dctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		n, err := db.DeleteOrphanTasks(dctx, store.V1, orphan, []store.QueueKey{parent}, keys)
		done <- result{n, err}
	}()
	// The signal: the orphan delete, waiting on the server for the host's
	// insert.
	for waiting := 0; waiting == 0; {
		select {
		case r := <-done:
			t.Fatalf("orphan delete returned (%d, %v) while the parent's insert was uncommitted", r.n, r.err)
		default:
		}
		if err := other.SQL().QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.processlist WHERE db = DATABASE() AND info LIKE 'DELETE FROM tasks WHERE %NOT EXISTS%'").Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		runtime.Gosched()
	}
	if err := host.Commit(); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil || r.n != 0 {
		t.Fatalf("orphan delete: %d rows, %v; want none: the parent is back", r.n, r.err)
	}
	if got := readAll(t, db, store.V1, orphan); len(got) != 3 {
		t.Errorf("%d of 3 tasks remain", len(got))
	}
}
