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
		// a scan per ten batches read (the last one's extra row tells
		// that the window ends: no empty scan after it), and the pass's
		// fixed statements (tables, listing, queue delete, orphan walk,
		// MariaDB's lock statements: 4 on SQLite and PostgreSQL, 7 on
		// MariaDB, at most 8 here).
		maxStatements int64
	}{
		// 100 deletes + 10 scans + fixed: at most 1.18 per queue (the
		// gentle pace: 2.05).
		{"all-expired", seed.Spec{Queues: 100, TasksPerQueue: batch, Expired: 1, IdleAge: 72 * time.Hour}, scavenger.Rules{}, 118},
		// 100 deletes + 10 scans + fixed.
		{"one-queue", seed.Spec{Queues: 1, TasksPerQueue: 100 * batch, Expired: 1, IdleAge: 72 * time.Hour}, scavenger.Rules{}, 118},
		// A live head stops each queue: a short scan per queue, no
		// delete, as at the gentle pace.
		{"live-head", seed.Spec{Queues: 100, TasksPerQueue: batch, Expired: 0.5, NoExpiry: 0.5, Layout: seed.LiveFirst, IdleAge: 72 * time.Hour}, scavenger.Rules{}, 100},
		// Half the rows expired, behind a live head: 50 deletes of two
		// queues' runs each + 10 scans + fixed.
		{"live-head past it", seed.Spec{Queues: 100, TasksPerQueue: batch, Expired: 0.5, NoExpiry: 0.5, Layout: seed.LiveFirst, IdleAge: 72 * time.Hour}, scavenger.Rules{PastLiveHead: true}, 68},
		// Runs cut by live rows: a delete per batch of deletable rows,
		// each of many ranges (one statement each on every engine).
		{"shuffled past live head", seed.Spec{Queues: 100, TasksPerQueue: batch, Expired: 0.7, Layout: seed.Shuffled, Seed: 7, IdleAge: 72 * time.Hour}, scavenger.Rules{PastLiveHead: true}, 88},
		// v2 lists keys: up to 500 per statement, so a delete of a batch
		// is one statement here too.
		{"v2 all-expired", seed.Spec{Table: store.V2, Queues: 100, TasksPerQueue: batch, Expired: 1, IdleAge: 72 * time.Hour}, scavenger.Rules{}, 118},
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
					// live is how many live tasks the seed wrote, and
					// liveLeft how many the pass left.
					live, liveLeft int
				}
				run := func(mode scavenger.PaceMode, dryRun bool) result {
					db := testdb.Open(t, e)
					spec := c.spec
					spec.Now = now
					seeded, err := seed.Write(context.Background(), db, spec)
					if err != nil {
						t.Fatal(err)
					}
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
					stmts := db.Stats().Statements - before
					liveLeft := 0
					for i := range spec.Queues {
						_, live := taskKinds(t, db, table, queueKey(fmt.Sprintf("seed-%d", i), 0))
						liveLeft += live
					}
					return result{st, stmts, digest(t, db), sizes, seeded.NoExpiry + seeded.Future, liveLeft}
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
				for _, r := range []result{gentle, full} {
					if r.liveLeft != r.live {
						t.Errorf("%d live tasks left of the %d seeded", r.liveLeft, r.live)
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

// scanLimits records the limit of each ScanTasks call and runs at, if
// set, before scan n (from 1).
type scanLimits struct {
	store.Store
	mu     sync.Mutex
	limits []int
	at     func(n int)
}

func (s *scanLimits) ScanTasks(ctx context.Context, t store.Table, after store.TaskPos, through store.QueueKey, limit int) ([]store.ScannedTask, error) {
	s.mu.Lock()
	s.limits = append(s.limits, limit)
	n := len(s.limits)
	s.mu.Unlock()
	if s.at != nil {
		s.at(n)
	}
	return s.Store.ScanTasks(ctx, t, after, through, limit)
}

// TestPaceChangeMidWindow: a window reads the pace at each scan, so a
// pass tuned from gentle to full in the middle of a window scans ten
// batches from its next scans on (the size grows by doubling, as after a
// shrink, from the scan after next: the last gentle scan set the next
// one's size), and one tuned back scans a batch again at once; the rows
// it leaves are a gentle pass's.
func TestPaceChangeMidWindow(t *testing.T) {
	const batch = 40
	spec := seed.Spec{Queues: 60, TasksPerQueue: 2 * batch, Expired: 0.7, Layout: seed.Shuffled, Seed: 11, IdleAge: 72 * time.Hour}
	ctx := context.Background()
	clean := testdb.Open(t, sqlstore.SQLite)
	mustSeed(t, clean, spec)
	cfg := baseConfig()
	cfg.PastLiveHead = true
	cfg.Tables = []store.Table{store.V1}
	cfg.TaskBatchSize = batch
	cfg.SlowStatement = time.Hour
	if _, err := scavenger.New(clean, cfg).Run(ctx); err != nil {
		t.Fatal(err)
	}
	want := digest(t, clean)

	db := testdb.Open(t, sqlstore.SQLite)
	mustSeed(t, db, spec)
	var s *scavenger.Scavenger
	tune := func(m scavenger.PaceMode) {
		c := s.Config()
		c.Mode = m
		if err := s.Tune(c); err != nil {
			t.Error(err)
		}
	}
	scans := &scanLimits{at: func(n int) {
		switch n {
		case 4: // the fifth scan is the first at full
			tune(scavenger.PaceFull)
		case 10:
			tune(scavenger.PaceGentle)
		}
	}}
	cfg.Middleware = []store.Middleware{func(next store.Store) store.Store { scans.Store = next; return scans }}
	s = scavenger.New(db, cfg)
	st, err := s.Run(ctx)
	if err != nil || st.Outcome != scavenger.Completed {
		t.Fatalf("pass: %v %v", st.Outcome, err)
	}
	got := scans.limits
	t.Logf("scan limits: %v", got)
	if len(got) < 12 {
		t.Fatalf("%d scans: the data set proves nothing", len(got))
	}
	for i, l := range got {
		var lo, hi int // the limit scan i+1 must have
		switch {
		case i < 4 || i >= 10: // gentle
			lo, hi = batch, batch
		case i == 4: // the first at full, whose size the last gentle
			// scan set, and a row to tell whether the window goes on
			lo, hi = batch+1, batch+1
		case i == 5: // then the window's size doubles
			lo, hi = 2*batch+1, 2*batch+1
		default:
			lo, hi = 2*batch+1, 10*batch+1
		}
		if l < lo || l > hi {
			t.Errorf("scan %d read up to %d rows, want %d..%d", i+1, l, lo, hi)
		}
	}
	if max(got[5], got[6], got[7], got[8], got[9]) != 10*batch+1 {
		t.Errorf("the scans at full never reached ten batches: %v", got[4:10])
	}
	if d := digest(t, db); d != want {
		t.Errorf("the pass tuned mid-window left other rows than a gentle pass")
	}
}
