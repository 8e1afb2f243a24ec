package scavenger_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/tqscavenger/tqscavenger/scavenger"
	"github.com/tqscavenger/tqscavenger/seed"
	"github.com/tqscavenger/tqscavenger/sqlstore"
	"github.com/tqscavenger/tqscavenger/store"
)

// rogueStore deletes every queue row and every task it lists, whatever
// the pass asked: it stands for a delete call site that forgot to check
// Config.DryRun. Its own errors are kept for the test.
type rogueStore struct {
	store.Store // a test wrapper: only ListQueues differs

	mu   sync.Mutex
	errs []error
}

func (r *rogueStore) ListQueues(ctx context.Context, t store.Table, after *store.QueueKey, limit int) ([]store.QueueRow, error) {
	rows, err := r.Store.ListQueues(ctx, t, after, limit)
	for _, q := range rows {
		_, derr := r.Store.DeleteTaskSets(ctx, t, []store.TaskSet{{Queue: q.QueueKey, Range: store.TaskRange{Max: store.TaskKey{Pass: 1 << 62, ID: 1 << 62}}}})
		_, qerr := r.Store.DeleteQueues(ctx, t, []store.QueueFence{{QueueKey: q.QueueKey, RangeID: q.RangeID}})
		r.mu.Lock()
		r.errs = append(r.errs, derr, qerr)
		r.mu.Unlock()
	}
	return rows, err
}

// TestDryRunCannotDelete: a dry run's store refuses every write, below
// every middleware, so that even a delete the pass should never have
// made deletes nothing; and the stats of a dry run count nothing as
// deleted, what would be under WouldDelete*.
func TestDryRunCannotDelete(t *testing.T) {
	forEachEngine(t, func(t *testing.T, db *sqlstore.DB) {
		spec := seed.Spec{Queues: 3, TasksPerQueue: 20, Expired: 1, IdleAge: 72 * time.Hour, NamePrefix: "dry"}
		mustSeed(t, db, spec)
		rogue := &rogueStore{}
		cfg := baseConfig()
		cfg.DryRun = true
		cfg.Tables = []store.Table{store.V1}
		cfg.Middleware = []store.Middleware{func(next store.Store) store.Store { rogue.Store = next; return rogue }}
		st, err := scavenger.New(db, cfg).Run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for i := range spec.Queues {
			q := queueKey(fmt.Sprintf("%s-%d", spec.NamePrefix, i), 0)
			if !queueExists(t, db, store.V1, q) {
				t.Errorf("queue %d deleted by a dry run", i)
			}
			if exp, _ := taskKinds(t, db, store.V1, q); exp != spec.TasksPerQueue {
				t.Errorf("queue %d: %d tasks left after a dry run, want %d", i, exp, spec.TasksPerQueue)
			}
		}
		if len(rogue.errs) == 0 {
			t.Fatal("the rogue store listed nothing")
		}
		for _, e := range rogue.errs {
			if !errors.Is(e, scavenger.ErrDryRun) {
				t.Errorf("a dry run's write returned %v, want ErrDryRun", e)
			}
		}
		if !st.DryRun || st.TasksDeleted != 0 || st.QueuesDeleted != 0 {
			t.Errorf("dry run stats: dry_run %v, tasks deleted %d, queues deleted %d; want true, 0, 0", st.DryRun, st.TasksDeleted, st.QueuesDeleted)
		}
		if st.WouldDeleteTasks != 60 || st.WouldDeleteQueues != 3 {
			t.Errorf("dry run would delete %d tasks, %d queues; want 60, 3", st.WouldDeleteTasks, st.WouldDeleteQueues)
		}
		v1 := st.Tables[store.V1]
		if v1.TasksDeleted[scavenger.ReasonExpired] != 0 || v1.WouldDeleteTasks[scavenger.ReasonExpired] != 60 || v1.QueuesDeleted != 0 || v1.WouldDeleteQueues != 3 {
			t.Errorf("v1 table stats of a dry run: %+v", v1)
		}
	})
}
