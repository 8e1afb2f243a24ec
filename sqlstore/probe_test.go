package sqlstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/tqscavenger/tqscavenger/internal/testdb"
	"github.com/tqscavenger/tqscavenger/seed"
	"github.com/tqscavenger/tqscavenger/sqlstore"
	"github.com/tqscavenger/tqscavenger/store"
)

// TestProbe: on PostgreSQL and MySQL a probe reads the queue with the
// greatest key (the one a pass reaches last), again and again, beside a
// store whose pool is one connection; SQLite has none
// (errors.ErrUnsupported).
func TestProbe(t *testing.T) {
	for _, e := range testdb.Engines {
		t.Run(string(e), func(t *testing.T) {
			ctx := context.Background()
			db, err := sqlstore.Open(ctx, testdb.DSN(t, e), sqlstore.Options{MaxConns: 1})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if _, err := seed.Write(ctx, db, seed.Spec{Queues: 20, TasksPerQueue: 10, Expired: 1, IdleAge: 72 * time.Hour}); err != nil {
				t.Fatal(err)
			}
			p, err := db.OpenProbe(ctx)
			if e == sqlstore.SQLite {
				if !errors.Is(err, errors.ErrUnsupported) {
					t.Fatalf("SQLite probe: %v, want errors.ErrUnsupported", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			var last store.QueueKey
			for after := (*store.QueueKey)(nil); ; {
				rows, err := db.ListQueues(ctx, store.V1, after, 7)
				if err != nil {
					t.Fatal(err)
				}
				if len(rows) == 0 {
					break
				}
				last = rows[len(rows)-1].QueueKey
				after = &last
			}
			if got := sqlstore.ProbeQueue(p); got.RangeHash != last.RangeHash || string(got.ID) != string(last.ID) {
				t.Fatalf("the probe reads %v, want the last queue %v", got, last)
			}
			for range 5 {
				if err := p.Probe(ctx); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}
