package scavenger_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tqscavenger/tqscavenger/internal/testdb"
	"github.com/tqscavenger/tqscavenger/scavenger"
	"github.com/tqscavenger/tqscavenger/seed"
	"github.com/tqscavenger/tqscavenger/sqlstore"
	"github.com/tqscavenger/tqscavenger/store"
)

// TestStopGate: once the pass is stopped, no delete reaches the store,
// whatever held it above: a caller's middleware that, at the pass's first
// delete, stops the pass (a lost lock's cause) and then passes the call
// on sees it refused beneath it, wrapping the cause, and the store the
// pass was given is reached by no delete. The database driver would
// refuse the ended context too, but a store.Store need not be one (issue
// 39 finding 9). SQLite: the gate is the same code on every engine.
func TestStopGate(t *testing.T) {
	for _, tc := range []struct {
		name string
		op   string // the delete the middleware holds
	}{
		{"task delete", "deletesets"},
		{"queue delete", "deletequeues"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := testdb.Open(t, sqlstore.SQLite)
			mustSeed(t, db, seed.Spec{NamePrefix: "gate", Queues: 20, TasksPerQueue: 10, Expired: 1, IdleAge: 72 * time.Hour})
			lost := errors.Join(errors.New("lock session ended (test)"), store.ErrLockLost)
			ctx, stop := context.WithCancelCause(context.Background())
			defer stop(nil)
			var held, reached atomic.Int64
			var refusal atomic.Value
			cfg := baseConfig()
			cfg.Workers = 1
			cfg.Middleware = []store.Middleware{func(next store.Store) store.Store {
				return &hookStore{next: next, before: func(_ context.Context, c call) error {
					if c.op == tc.op && held.Add(1) == 1 {
						stop(lost)
					}
					return nil
				}, after: func(_ context.Context, c call, err error) error {
					if c.op == tc.op && held.Load() == 1 && err != nil {
						refusal.CompareAndSwap(nil, err)
					}
					return err
				}}
			}}
			raw := hooked(func(ctx context.Context, c call) error {
				if strings.HasPrefix(c.op, "delete") && held.Load() > 0 {
					reached.Add(1)
				}
				return nil
			})(db)
			st, err := scavenger.New(raw, cfg).Run(ctx)
			if held.Load() == 0 {
				t.Fatalf("no %s call: %+v, %v", tc.op, st, err)
			}
			if n := reached.Load(); n != 0 {
				t.Errorf("%d deletes reached the store after the pass was stopped", n)
			}
			if r, _ := refusal.Load().(error); r == nil || !errors.Is(r, store.ErrLockLost) || errors.Is(r, store.ErrUnknownOutcome) {
				t.Errorf("the held delete returned %v: want a refusal wrapping the cause (ErrLockLost), not an unknown outcome", r)
			}
			if st.Outcome.Success() {
				t.Errorf("outcome %s after the pass was stopped", st.Outcome)
			}
		})
	}
}
