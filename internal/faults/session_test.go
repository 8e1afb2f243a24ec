package faults

import (
	"database/sql"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/tqscavenger/tqscavenger/internal/testdb"
	"github.com/tqscavenger/tqscavenger/sqlstore"
)

// pgLockKey is the PostgreSQL advisory lock key of the schema a session
// resolves tables in: tqscavenger's, in every version.
const pgLockKey = "('x' || substr(md5('tqscavenger.' || current_schema()), 1, 16))::bit(64)::bigint"

// lockSession returns the server session (PostgreSQL backend pid, MySQL
// connection id) that holds db's scavenger lock, or 0.
func lockSession(t *testing.T, db *sqlstore.DB) int64 {
	t.Helper()
	h := testdb.SQL(t, db)
	var id sql.NullInt64
	var err error
	switch db.Engine() {
	case sqlstore.Postgres:
		err = h.QueryRowContext(ctx, "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted"+
			" AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"+
			" AND classid = (("+pgLockKey+" >> 32) & 4294967295)::oid AND objid = ("+pgLockKey+" & 4294967295)::oid AND objsubid = 1").Scan(&id)
		if errors.Is(err, sql.ErrNoRows) {
			err = nil
		}
	case sqlstore.MySQL:
		err = h.QueryRowContext(ctx, "SELECT IS_USED_LOCK(?)", mysqlLockName(db)).Scan(&id)
	}
	if err != nil {
		t.Fatalf("who holds the lock: %v", err)
	}
	return id.Int64
}

// mysqlLockName is tqscavenger's lock name for db (a short database
// name: see sqlstore's mysqlLockName).
func mysqlLockName(db *sqlstore.DB) string { return "tqscavenger." + db.DSN().Database() }

// waitLockHeld waits, polling the server for at most limit, until a
// session holds db's scavenger lock, and returns it.
func waitLockHeld(t *testing.T, db *sqlstore.DB, limit time.Duration) int64 {
	t.Helper()
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		if id := lockSession(t, db); id != 0 {
			return id
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("nobody took the lock within %s", limit)
	return 0
}

// killSession ends a server session from another, as an administrator
// does: pg_terminate_backend, or KILL.
func killSession(t *testing.T, db *sqlstore.DB, id int64) {
	t.Helper()
	h := testdb.SQL(t, db)
	var err error
	if db.Engine() == sqlstore.Postgres {
		var ok bool
		err = h.QueryRowContext(ctx, "SELECT pg_terminate_backend($1)", id).Scan(&ok)
		if err == nil && !ok {
			err = fmt.Errorf("backend %d not terminated", id)
		}
	} else {
		_, err = h.ExecContext(ctx, fmt.Sprintf("KILL %d", id))
	}
	if err != nil {
		t.Fatalf("end session %d: %v", id, err)
	}
}
