package sqlstore_test

import (
	"context"
	"errors"
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
		var unlockB func() error
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
		if err := unlockA(); err != nil {
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
		if err := unlockB(); err != nil {
			t.Fatal(err)
		}
		unlock, err := a.Lock(ctx, false)
		if err != nil {
			t.Fatalf("lock after both released: %v", err)
		}
		unlock()
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
		defer unlockA()
		unlockB, err := b.Lock(ctx, false)
		if err != nil {
			t.Fatalf("the lock of another database (%s) is taken: %v", b.DSN(), err)
		}
		unlockB()
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
