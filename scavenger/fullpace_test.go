package scavenger_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/tqscavenger/tqscavenger/internal/testdb"
	"github.com/tqscavenger/tqscavenger/scavenger"
	"github.com/tqscavenger/tqscavenger/seed"
	"github.com/tqscavenger/tqscavenger/sqlstore"
	"github.com/tqscavenger/tqscavenger/store"
)

// deleteSizes records the rows each DeleteTaskSets call deleted, and the
// scans.
type deleteSizes struct {
	store.Store
	mu      sync.Mutex
	deletes []int64
	scans   int
}

func (d *deleteSizes) ScanTasks(ctx context.Context, t store.Table, after store.TaskPos, through store.QueueKey, limit int) ([]store.ScannedTask, error) {
	d.mu.Lock()
	d.scans++
	d.mu.Unlock()
	return d.Store.ScanTasks(ctx, t, after, through, limit)
}

func (d *deleteSizes) DeleteTaskSets(ctx context.Context, t store.Table, sets []store.TaskSet) (int64, error) {
	n, err := d.Store.DeleteTaskSets(ctx, t, sets)
	d.mu.Lock()
	d.deletes = append(d.deletes, n)
	d.mu.Unlock()
	return n, err
}

// TestFullPaceStatements: at PaceFull a window scans up to ten batches at
// once and deletes a batch at a time, so a window of many tasks costs
// about one statement per batch of rows (the safe raw bound's shape:
// reads of ten batches, deletes of one), where the gentle pace costs two
// (a scan and a delete per batch). On every engine, for each layout, the
// full pace's statements (the store's own count) stay within the bound
// the case names, no delete removes more than a batch, and the full and
// gentle passes leave the same rows (the digest of every table) with the
// same counts; a dry run at full deletes nothing and counts the same.
//
// The layouts mirror the lab's cases at 1/25 of their batch: batch 40,
// 100 queues of 40 tasks (all-expired), one queue of 4,000 (one-queue:
// each scan's run is cut into ten deletes), live heads with and without
// PastLiveHead (the skip logic), shuffled live and expired rows (runs cut
// by live rows and by the batch), and v2 (keys, not ranges).
func TestFullPaceStatements(t *testing.T) {
	const batch = 40
	cases := []struct {
		name  string
		spec  seed.Spec
		rules scavenger.Rules
		// maxStatements bounds the full pace's statements: the deletes
		// the rows need (one per batch of deletable rows, or per run),
		// a scan per ten batches read plus the last, and the pass's
		// fixed statements (tables, listings, queue delete, orphan walks:
		// at most 8 here).
		maxStatements int64
	}{
		// 100 deletes + 10 scans + 1 + fixed: 1.19 per queue.
		{"all-expired", seed.Spec{Queues: 100, TasksPerQueue: batch, Expired: 1, IdleAge: 72 * time.Hour}, scavenger.Rules{}, 119},
		// 100 deletes + 10 scans + 1 + fixed.
		{"one-queue", seed.Spec{Queues: 1, TasksPerQueue: 100 * batch, Expired: 1, IdleAge: 72 * time.Hour}, scavenger.Rules{}, 119},
		// A live head stops each queue: a short scan per queue, no
		// delete, as at the gentle pace.
		{"live-head", seed.Spec{Queues: 100, TasksPerQueue: batch, Expired: 0.5, NoExpiry: 0.5, Layout: seed.LiveFirst, IdleAge: 72 * time.Hour}, scavenger.Rules{}, 110},
		// Half the rows expired, behind a live head: 50 deletes of two
		// queues' runs each + 10 scans + 1 + fixed.
		{"live-head past it", seed.Spec{Queues: 100, TasksPerQueue: batch, Expired: 0.5, NoExpiry: 0.5, Layout: seed.LiveFirst, IdleAge: 72 * time.Hour}, scavenger.Rules{PastLiveHead: true}, 69},
		// Runs cut by live rows: a delete per batch of deletable rows,
		// each of many ranges (one statement each on every engine).
		{"shuffled past live head", seed.Spec{Queues: 100, TasksPerQueue: batch, Expired: 0.7, Layout: seed.Shuffled, Seed: 7, IdleAge: 72 * time.Hour}, scavenger.Rules{PastLiveHead: true}, 89},
		// v2 lists keys: up to 500 per statement, so a delete of a batch
		// is one statement here too.
		{"v2 all-expired", seed.Spec{Table: store.V2, Queues: 100, TasksPerQueue: batch, Expired: 1, IdleAge: 72 * time.Hour}, scavenger.Rules{}, 119},
	}
	forEachEngineName(t, func(t *testing.T, e sqlstore.Engine) {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				table := c.spec.Table
				if table == 0 {
					table = store.V1
				}
				type result struct {
					st         scavenger.Stats
					statements int64
					digest     string
					sizes      *deleteSizes
				}
				run := func(mode scavenger.PaceMode, dryRun bool) result {
					db := testdb.Open(t, e)
					mustSeed(t, db, c.spec)
					cfg := baseConfig()
					cfg.Rules = c.rules
					cfg.DryRun = dryRun
					cfg.Tables = []store.Table{table}
					cfg.Mode = mode
					cfg.TaskBatchSize = batch
					// The batch size stays put, however loaded the
					// machine: the counts are the layout's alone.
					cfg.SlowStatement = time.Hour
					sizes := &deleteSizes{}
					cfg.Middleware = []store.Middleware{func(next store.Store) store.Store { sizes.Store = next; return sizes }}
					before := db.Stats().Statements
					st, err := scavenger.New(db, cfg).Run(context.Background())
					if err != nil || st.Outcome != scavenger.Completed {
						t.Fatalf("%s pass: %v %v", mode, st.Outcome, err)
					}
					return result{st, db.Stats().Statements - before, digest(t, db), sizes}
				}
				gentle := run(scavenger.PaceGentle, false)
				full := run(scavenger.PaceFull, false)
				t.Logf("statements: full %d (%d scans, %d deletes), gentle %d (%d scans, %d deletes)",
					full.statements, full.sizes.scans, len(full.sizes.deletes), gentle.statements, gentle.sizes.scans, len(gentle.sizes.deletes))
				if full.statements > c.maxStatements {
					t.Errorf("full pace: %d statements, want at most %d (gentle: %d)", full.statements, c.maxStatements, gentle.statements)
				}
				for i, n := range full.sizes.deletes {
					if n > batch {
						t.Errorf("full pace: delete %d removed %d rows, more than the batch of %d", i, n, batch)
					}
				}
				if full.digest != gentle.digest {
					t.Errorf("full and gentle passes left different rows")
				}
				same := func(what string, a, b scavenger.Stats) {
					t.Helper()
					// Not TasksExpiredLeft: it counts the expired rows
					// read behind live heads, and a longer scan reads
					// more of them before it skips the rest of a queue.
					if a.TasksDeleted+a.WouldDeleteTasks != b.TasksDeleted+b.WouldDeleteTasks || a.QueuesDeleted+a.WouldDeleteQueues != b.QueuesDeleted+b.WouldDeleteQueues ||
						a.TasksProcessed != b.TasksProcessed || a.QueuesProcessed != b.QueuesProcessed {
						t.Errorf("%s counts differ from the gentle pass's:\n got %s\nwant %s", what, counts(a), counts(b))
					}
				}
				same("full pace", full.st, gentle.st)
				if full.st.TasksDeleted == 0 && c.name != "live-head" {
					t.Errorf("full pace deleted no task")
				}
				dry := run(scavenger.PaceFull, true)
				if dry.st.TasksDeleted != 0 || dry.st.QueuesDeleted != 0 {
					t.Errorf("dry run at full deleted %d tasks and %d queues", dry.st.TasksDeleted, dry.st.QueuesDeleted)
				}
				if len(dry.sizes.deletes) != 0 {
					t.Errorf("dry run at full called DeleteTaskSets %d times", len(dry.sizes.deletes))
				}
				same("dry run at full", dry.st, gentle.st)
			})
		}
	})
}

// counts prints the counts TestFullPaceStatements compares.
func counts(s scavenger.Stats) string {
	return fmt.Sprintf("tasks deleted %d (would %d), queues deleted %d (would %d), expired left %d, tasks processed %d, queues processed %d",
		s.TasksDeleted, s.WouldDeleteTasks, s.QueuesDeleted, s.WouldDeleteQueues, s.TasksExpiredLeft, s.TasksProcessed, s.QueuesProcessed)
}

// forEachEngineName runs f for every engine, for tests that open several
// stores of one engine.
func forEachEngineName(t *testing.T, f func(t *testing.T, e sqlstore.Engine)) {
	for _, e := range testdb.Engines {
		t.Run(string(e), func(t *testing.T) { f(t, e) })
	}
}
