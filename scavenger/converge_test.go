package scavenger_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tqscavenger/tqscavenger/internal/fixture"
	"github.com/tqscavenger/tqscavenger/scavenger"
	"github.com/tqscavenger/tqscavenger/seed"
	"github.com/tqscavenger/tqscavenger/sqlstore"
	"github.com/tqscavenger/tqscavenger/store"
	"github.com/tqscavenger/tqscavenger/wire"
)

// TestOnePassConverges: on every fixture (real Temporal databases) and in
// every mode, a dry run predicts what one pass deletes, and a second pass
// right after deletes nothing (issue 42's finding 5: a v2 row that waited
// on v1 tasks the same pass deleted was left to the next pass).
func TestOnePassConverges(t *testing.T) {
	modes := map[string]scavenger.Rules{
		"default":  {},
		"all":      {PastLiveHead: true, BelowAckLevel: true, Orphans: scavenger.OrphansAll},
		"temporal": {Compat: scavenger.CompatTemporal},
	}
	for _, name := range fixture.Names() {
		if strings.HasSuffix(name, afterSuffix) {
			continue
		}
		for mode, rules := range modes {
			t.Run(fmt.Sprintf("%s/%s", name, mode), func(t *testing.T) {
				path := fixture.Path(t, name)
				dry := rules
				dry.DryRun = true
				predicted := fixturePass(t, path, scavenger.Config{Rules: dry})
				first := fixturePass(t, path, scavenger.Config{Rules: rules})
				second := fixturePass(t, path, scavenger.Config{Rules: rules})
				if predicted.WouldDeleteTasks != first.TasksDeleted || predicted.WouldDeleteQueues != first.QueuesDeleted {
					t.Errorf("the dry run predicted %d tasks and %d queue rows; the pass deleted %d and %d",
						predicted.WouldDeleteTasks, predicted.WouldDeleteQueues, first.TasksDeleted, first.QueuesDeleted)
				}
				if second.TasksDeleted != 0 || second.QueuesDeleted != 0 {
					t.Errorf("after a pass that deleted %d tasks and %d queue rows, a second deleted %d and %d",
						first.TasksDeleted, first.QueuesDeleted, second.TasksDeleted, second.QueuesDeleted)
				}
			})
		}
	}
}

// TestOnePassConvergesOtherTable is issue 42's finding 5 on every engine:
// v2 rows (empty, idle 72 h) whose other_has_tasks points at v1, where the
// same queues hold only expired tasks. One pass deletes the v1 tasks, then
// both rows; a second pass deletes nothing; a dry run predicts the first.
// A queue whose v1 side keeps a live task keeps both rows. Through the
// page walk (one subqueue) and the queue walk (two).
func TestOnePassConvergesOtherTable(t *testing.T) {
	for _, subs := range []int{1, 2} {
		t.Run(fmt.Sprintf("subqueues=%d", subs), func(t *testing.T) {
			forEachEngine(t, func(t *testing.T, db *sqlstore.DB) {
				mustSeed(t, db, seed.Spec{Table: store.V2, Queues: 3, Subqueues: subs, IdleAge: 72 * time.Hour})
				mustSeed(t, db, seed.Spec{Queues: 3, Subqueues: subs, TasksPerQueue: 5, Expired: 1, IdleAge: 72 * time.Hour})
				// live-0: its v1 side holds a live task.
				mustSeed(t, db, seed.Spec{Table: store.V2, NamePrefix: "live", Queues: 1, Subqueues: subs, IdleAge: 72 * time.Hour})
				mustSeed(t, db, seed.Spec{NamePrefix: "live", Queues: 1, Subqueues: subs, TasksPerQueue: 1, NoExpiry: 1, IdleAge: 72 * time.Hour})
				for _, name := range []string{"seed-0", "seed-1", "seed-2", "live-0"} {
					setQueueInfo(t, db, store.V2, queueKey(name, 0), func(i *wire.TaskQueueInfo) { i.OtherHasTasks = true })
				}
				run := func(dry bool) scavenger.Stats {
					cfg := baseConfig()
					cfg.DryRun = dry
					st, err := scavenger.New(db, cfg).Run(context.Background())
					if err != nil {
						t.Fatal(err)
					}
					return st
				}
				predicted, first, second := run(true), run(false), run(false)
				wantTasks, wantQueues := int64(15*subs), int64(6) // 5 tasks a subqueue
				if first.TasksDeleted != wantTasks || first.QueuesDeleted != wantQueues {
					t.Errorf("first pass: %d tasks, %d queue rows; want %d and %d", first.TasksDeleted, first.QueuesDeleted, wantTasks, wantQueues)
				}
				if predicted.WouldDeleteTasks != first.TasksDeleted || predicted.WouldDeleteQueues != first.QueuesDeleted {
					t.Errorf("dry run: %d tasks, %d queue rows; the pass deleted %d and %d", predicted.WouldDeleteTasks, predicted.WouldDeleteQueues, first.TasksDeleted, first.QueuesDeleted)
				}
				if second.TasksDeleted != 0 || second.QueuesDeleted != 0 {
					t.Errorf("second pass: %d tasks, %d queue rows; want none", second.TasksDeleted, second.QueuesDeleted)
				}
				live := queueKey("live-0", 0)
				if !queueExists(t, db, store.V2, live) || !queueExists(t, db, store.V1, live) {
					t.Error("the queue whose v1 side holds a live task lost a row")
				}
			})
		})
	}
}
