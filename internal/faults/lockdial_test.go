package faults

import (
	"errors"
	"testing"
	"time"

	"github.com/tqscavenger/tqscavenger/internal/testdb"
	"github.com/tqscavenger/tqscavenger/sqlstore"
)

// TestLockConnectBounded: the store is open, and then the server stops
// answering (the proxy accepts connections and passes nothing on) just
// as the lock's own connection is made.
//
// Invariant: the lock's connection is bounded by the connect timeout, as
// the pool's are: Lock fails with an error wrapping ErrConnectTimeout,
// not after the (much longer) statement timeout with another error.
func TestLockConnectBounded(t *testing.T) {
	for _, e := range servers {
		t.Run(string(e), func(t *testing.T) {
			t.Parallel()
			db := testdb.Open(t, e)
			seedWorkload(t, db, workload{dead: 1, tasksPerQueue: 1})
			px := newProxy(t, db.DSN().URL.Host)
			// 2s, not less: the store's own first connection, before the
			// pause, must be made within it on a loaded machine (200ms
			// failed once beside CI's other suites); it is still a tenth of
			// the statement timeout the lock must not wait for.
			via, err := sqlstore.Open(ctx, px.via(dsnOf(db)), sqlstore.Options{ConnectTimeout: 2 * time.Second, StatementTimeout: 20 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			defer via.Close()
			px.pause()
			defer px.resume()
			lock, err := via.Lock(ctx, false)
			if err == nil {
				lock.Unlock()
				t.Fatal("a lock taken through a network that passes nothing")
			}
			if !errors.Is(err, sqlstore.ErrConnectTimeout) {
				t.Errorf("the lock's connection to a server that does not answer: %v; want ErrConnectTimeout", err)
			}
		})
	}
}
