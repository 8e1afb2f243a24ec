package sqlstore_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/tqscavenger/tqscavenger/internal/testdb"
	"github.com/tqscavenger/tqscavenger/sqlstore"
	"github.com/tqscavenger/tqscavenger/store"
)

// TestLock takes the scavenger lock through one handle and tries it
// through others on the same database.
func TestLock(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e sqlstore.Engine, a *sqlstore.DB) {
		b := testdb.OpenDSN(t, a.DSN().String())
		if e != sqlstore.SQLite {
			// String() masks the password; the test servers have none.
			b = testdb.OpenDSN(t, a.DSN().URL.String())
		}
		unlockA, err := a.Lock(ctx, false)
		if err != nil {
			t.Fatalf("first lock: %v", err)
		}
		if e == sqlstore.SQLite {
			if _, err := os.Stat(a.DSN().Path + ".tqscavenger.lock"); err != nil {
				t.Errorf("lock file: %v", err)
			}
		}

		for name, st := range map[string]*sqlstore.DB{"another handle": b, "the same handle": a} {
			start := time.Now()
			_, err := st.Lock(ctx, false)
			if !errors.Is(err, store.ErrLocked) {
				t.Fatalf("%s: Lock(wait=false) while held: %v, want ErrLocked", name, err)
			}
			if took := time.Since(start); took > 10*time.Second { // a hang guard: wait=false must not wait for the holder
				t.Errorf("%s: Lock(wait=false) took %s", name, took)
			}
		}

		// A waiter gives up when its context ends.
		waitCtx, cancel := context.WithTimeout(ctx, 700*time.Millisecond)
		_, err = b.Lock(waitCtx, true)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Lock(wait=true) with an ending context: %v, want DeadlineExceeded", err)
		}

		// A waiter gets the lock once it is released, not before.
		got := make(chan error, 1)
		var unlockB store.Lock
		go func() {
			var err error
			unlockB, err = b.Lock(ctx, true)
			got <- err
		}()
		select {
		case err := <-got:
			t.Fatalf("Lock(wait=true) returned while the lock was held: %v", err)
		case <-time.After(1200 * time.Millisecond):
		}
		if err := unlockA.Unlock(); err != nil {
			t.Fatalf("unlock: %v", err)
		}
		select {
		case err := <-got:
			if err != nil {
				t.Fatalf("Lock(wait=true) after release: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("Lock(wait=true) did not get the released lock")
		}
		if _, err := a.Lock(ctx, false); !errors.Is(err, store.ErrLocked) {
			t.Errorf("the waiter's lock does not hold: %v", err)
		}
		if err := unlockB.Unlock(); err != nil {
			t.Fatal(err)
		}
		unlock, err := a.Lock(ctx, false)
		if err != nil {
			t.Fatalf("lock after both released: %v", err)
		}
		unlock.Unlock()
	})
}

// TestLockPerDatabase checks that the lock is per database (per schema on
// PostgreSQL): scavengers of two Temporal clusters on one server do not
// block each other.
func TestLockPerDatabase(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e sqlstore.Engine, a *sqlstore.DB) {
		b := testdb.Open(t, e)
		unlockA, err := a.Lock(ctx, false)
		if err != nil {
			t.Fatal(err)
		}
		defer unlockA.Unlock()
		unlockB, err := b.Lock(ctx, false)
		if err != nil {
			t.Fatalf("the lock of another database (%s) is taken: %v", b.DSN(), err)
		}
		unlockB.Unlock()
	})
}

func TestMySQLLockName(t *testing.T) {
	long := strings.Repeat("temporal_cluster_", 4)
	n1, n2 := sqlstore.MySQLLockName(long+"a"), sqlstore.MySQLLockName(long+"b")
	if len(n1) > 64 || len(n2) > 64 || n1 == n2 {
		t.Errorf("long database names give lock names %q and %q: want distinct names of at most 64 bytes", n1, n2)
	}
	if got := sqlstore.MySQLLockName("temporal"); got != "tqscavenger.temporal" {
		t.Errorf("lock name %q, want tqscavenger.temporal", got)
	}
}

// killLockSession ends the server session that holds db's scavenger lock,
// from another session, as an administrator or a failover does.
func killLockSession(t *testing.T, db *sqlstore.DB) {
	t.Helper()
	pool := testdb.SQL(t, db)
	switch db.Engine() {
	case sqlstore.Postgres:
		const key = "('x' || substr(md5('tqscavenger.' || current_schema()), 1, 16))::bit(64)::bigint"
		var n int
		if err := pool.QueryRowContext(ctx, "SELECT count(pg_terminate_backend(pid)) FROM pg_locks WHERE locktype = 'advisory' AND granted"+
			" AND classid = (("+key+" >> 32) & 4294967295)::oid AND objid = ("+key+" & 4294967295)::oid AND objsubid = 1").Scan(&n); err != nil || n != 1 {
			t.Fatalf("terminate the lock's backend: %d terminated, %v", n, err)
		}
	case sqlstore.MySQL:
		var id int64
		if err := pool.QueryRowContext(ctx, "SELECT IS_USED_LOCK(?)", sqlstore.MySQLLockName(db.DSN().Database())).Scan(&id); err != nil {
			t.Fatalf("the lock's connection: %v", err)
		}
		if _, err := pool.ExecContext(ctx, fmt.Sprintf("KILL %d", id)); err != nil {
			t.Fatal(err)
		}
	}
	waitLockFree(t, db)
}

// waitLockFree waits until the server has released the lock of a killed
// session: KILL and pg_terminate_backend only signal the session, which
// lets go of its locks when it notices (later on a loaded machine).
func waitLockFree(t *testing.T, db *sqlstore.DB) {
	t.Helper()
	pool := testdb.SQL(t, db)
	var q string
	var args []any
	switch db.Engine() {
	case sqlstore.Postgres:
		const key = "('x' || substr(md5('tqscavenger.' || current_schema()), 1, 16))::bit(64)::bigint"
		q = "SELECT count(*) = 0 FROM pg_locks WHERE locktype = 'advisory' AND granted" +
			" AND classid = ((" + key + " >> 32) & 4294967295)::oid AND objid = (" + key + " & 4294967295)::oid AND objsubid = 1"
	case sqlstore.MySQL:
		q, args = "SELECT IS_FREE_LOCK(?) = 1", []any{sqlstore.MySQLLockName(db.DSN().Database())}
	default:
		return
	}
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(30 * time.Second)
	for {
		var free bool
		if err := pool.QueryRowContext(ctx, q, args...).Scan(&free); err != nil {
			t.Fatalf("is the killed session's lock free: %v", err)
		}
		if free {
			return
		}
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatal("the killed session still holds its lock after 30s")
		}
	}
}

// TestLockCheck: a held lock checks as held until what holds it is gone
// (the server session, the lock file, the database file), and then as
// lost, and another scavenger can take it.
func TestLockCheck(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e sqlstore.Engine, a *sqlstore.DB) {
		b := testdb.OpenDSN(t, a.DSN().String())
		if e != sqlstore.SQLite {
			b = testdb.OpenDSN(t, a.DSN().URL.String())
		}
		lock, err := a.Lock(ctx, false)
		if err != nil {
			t.Fatal(err)
		}
		if err := lock.Check(ctx); err != nil {
			t.Fatalf("Check of a held lock: %v", err)
		}
		// What holds it goes.
		if e == sqlstore.SQLite {
			byID, err := sqlstore.IdentityLockFile(a.DSN().Path)
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range []string{a.DSN().Path + ".tqscavenger.lock", byID} {
				if err := os.Remove(f); err != nil {
					t.Fatal(err)
				}
			}
		} else {
			killLockSession(t, a)
		}
		cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		err = lock.Check(cctx)
		cancel()
		if !errors.Is(err, store.ErrLockLost) {
			t.Fatalf("Check once the lock's %s is gone: %v, want ErrLockLost", map[bool]string{true: "file", false: "session"}[e == sqlstore.SQLite], err)
		}
		if err := lock.Check(ctx); !errors.Is(err, store.ErrLockLost) {
			t.Errorf("a lost lock checks as held again: %v", err)
		}
		other, err := b.Lock(ctx, false)
		if err != nil {
			t.Fatalf("the lock of a gone session is still taken: %v", err)
		}
		if err := lock.Unlock(); err != nil {
			t.Errorf("Unlock of a lost lock: %v", err)
		}
		if err := other.Check(ctx); err != nil {
			t.Errorf("the other's lock after the lost one's Unlock: %v", err)
		}
		other.Unlock()
	})
}

// TestLockCheckReplacedDatabase: a SQLite database file replaced while
// locked (a restore, a move) is another file, which another scavenger can
// lock: the lock checks as lost.
func TestLockCheckReplacedDatabase(t *testing.T) {
	db := testdb.Open(t, sqlstore.SQLite)
	lock, err := db.Lock(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Unlock()
	path := db.DSN().Path
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path+".new", data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".new", path); err != nil {
		t.Fatal(err)
	}
	if err := lock.Check(ctx); !errors.Is(err, store.ErrLockLost) {
		t.Errorf("Check after the database file was replaced: %v, want ErrLockLost", err)
	}
}

// TestLockMaxConnsOne: with a pool of one connection, the lock takes a
// connection of its own and the store still works while it is held.
func TestLockMaxConnsOne(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e sqlstore.Engine, db *sqlstore.DB) {
		dsn := db.DSN().String()
		if e != sqlstore.SQLite {
			dsn = db.DSN().URL.String()
		}
		one, err := sqlstore.Open(ctx, dsn, sqlstore.Options{MaxConns: 1})
		if err != nil {
			t.Fatal(err)
		}
		defer one.Close()
		lock, err := one.Lock(ctx, false)
		if err != nil {
			t.Fatal(err)
		}
		defer lock.Unlock()
		// Bounded, so that a hang fails instead of stalling the suite.
		bctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		if _, err := one.Tables(bctx); err != nil {
			t.Fatalf("a statement while the lock is held on a pool of one: %v", err)
		}
		if err := lock.Check(bctx); err != nil {
			t.Fatalf("Check on a pool of one: %v", err)
		}
		if _, err := one.ListQueues(bctx, store.V1, nil, 10); err != nil {
			t.Fatalf("a statement after the check: %v", err)
		}
	})
}
