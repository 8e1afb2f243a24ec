package matchingsim_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/tqscavenger/tqscavenger/internal/matchingsim"
	"github.com/tqscavenger/tqscavenger/internal/testdb"
	"github.com/tqscavenger/tqscavenger/scavenger"
	"github.com/tqscavenger/tqscavenger/sqlstore"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// start is where the injected clock starts.
var start = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// grace is the scavenger's grace period in the safety test, on the
// injected clock (which runs at real speed). The simulator writes to a
// lease for a fifth of it (matchingsim.Config.Window), so the scavenger
// must get from listing a queue row to deleting it within 800ms: on SQLite
// under the race detector that takes up to half a second.
const grace = time.Second

// modes are the scavenger modes the safety test runs, each with the rule
// the check holds it to (matchingsim.RulesFor).
var modes = []struct {
	name string
	cfg  scavenger.Config
}{
	{"compat-temporal", scavenger.Config{Rules: scavenger.Rules{Compat: scavenger.CompatTemporal}}},
	{"default", scavenger.Config{}},
	{"past-live-head", scavenger.Config{Rules: scavenger.Rules{PastLiveHead: true}}},
	{"below-ack-level", scavenger.Config{Rules: scavenger.Rules{BelowAckLevel: true}}},
	{"orphans-all", scavenger.Config{Rules: scavenger.Rules{Orphans: scavenger.OrphansAll}}},
}

// budget is how long the safety test runs per engine, split evenly over
// the modes: TQS_SAFETY_DURATION (a Go duration) if set, else 20s, or 5s
// with -short.
func budget(t *testing.T) time.Duration {
	if s := os.Getenv("TQS_SAFETY_DURATION"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			t.Fatalf("TQS_SAFETY_DURATION=%q: want a positive duration such as 2m", s)
		}
		return d
	}
	if testing.Short() {
		return 5 * time.Second
	}
	return 20 * time.Second
}

// TestConcurrentWriterSafety runs a simulated matching host against each
// engine while the scavenger makes pass after pass, in every mode, then
// checks the whole database against the simulator's ledger.
func TestConcurrentWriterSafety(t *testing.T) {
	per := budget(t) / time.Duration(len(modes))
	for _, e := range testdb.Engines {
		t.Run(string(e), func(t *testing.T) {
			var total result
			ran := false
			for i, m := range modes {
				t.Run(m.name, func(t *testing.T) {
					r := runSafety(t, e, m.cfg, per, uint64(i), nil)
					r.check(t)
					total.add(r)
					ran = true
				})
			}
			if !ran {
				// Every mode skipped: the engine's server is not configured
				// (testdb says which variable to set; CI=true fails instead).
				t.Skipf("%s: no mode ran", e)
			}
			t.Logf("%s total: %s", e, total.counts())
			// A queue must idle for the grace before it may go: shorter
			// runs cannot be expected to delete one.
			if !t.Failed() && (total.rep.TasksScavenged == 0 || (total.queuesDeleted == 0 && per >= 3*grace)) {
				t.Errorf("the run proved little: the scavenger deleted %d tasks and %d queue rows", total.rep.TasksScavenged, total.queuesDeleted)
			}
		})
	}
}

// result is one safety run: the scavenger's counts summed over its passes,
// and what the check found.
type result struct {
	passes, queuePasses, tasksDeleted, queuesDeleted, jobErrors, badRows int64
	rep                                                                  matchingsim.Report
}

func (r *result) add(o result) {
	r.passes += o.passes
	r.queuePasses += o.queuePasses
	r.tasksDeleted += o.tasksDeleted
	r.queuesDeleted += o.queuesDeleted
	r.rep.Queues += o.rep.Queues
	r.rep.TasksWritten += o.rep.TasksWritten
	r.rep.TasksScavenged += o.rep.TasksScavenged
	r.rep.ViolationCount += o.rep.ViolationCount
}

func (r result) counts() string {
	return fmt.Sprintf("passes %d, queue-passes %d, queues %d, tasks written %d, tasks deleted by scavenger %d (it reports %d), queue rows deleted %d, violations %d",
		r.passes, r.queuePasses, r.rep.Queues, r.rep.TasksWritten, r.rep.TasksScavenged, r.tasksDeleted, r.queuesDeleted, r.rep.ViolationCount)
}

// check fails t on every violation and on counts that disagree.
func (r result) check(t *testing.T) {
	t.Helper()
	rep := r.rep
	for _, p := range rep.Problems {
		t.Errorf("simulator: %s", p)
	}
	if n := rep.ProblemCount - len(rep.Problems); n > 0 {
		t.Errorf("simulator: … and %d more problems", n)
	}
	for _, v := range rep.Violations {
		t.Errorf("violation: %s", v)
	}
	if n := rep.ViolationCount - len(rep.Violations); n > 0 {
		t.Errorf("… and %d more violations", n)
	}
	if r.jobErrors != 0 || r.badRows != 0 {
		t.Errorf("scavenger: %d failed queue jobs, %d bad rows", r.jobErrors, r.badRows)
	}
	// The scavenger may delete a task between the simulator's read and its
	// own delete (the ledger then counts it as the simulator's), so its
	// count may be higher, never lower.
	if int64(rep.TasksScavenged) > r.tasksDeleted {
		t.Errorf("%d tasks went missing, but the scavenger reports %d deleted", rep.TasksScavenged, r.tasksDeleted)
	}
	if int64(rep.QueuesDeleted) != r.queuesDeleted {
		t.Errorf("%d queue rows went missing, but the scavenger reports %d deleted", rep.QueuesDeleted, r.queuesDeleted)
	}
	if r.passes == 0 || rep.TasksWritten == 0 {
		t.Errorf("the run proved little: %d passes, %d tasks written", r.passes, rep.TasksWritten)
	}
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// runSafety runs the simulator and the scavenger (cfg) side by side for d
// on a fresh database of engine e, then verifies the database against the
// rules of cfg. breakIt, if set, changes the scavenger's configuration
// after those rules are fixed (to break it on purpose).
func runSafety(t *testing.T, e sqlstore.Engine, cfg scavenger.Config, d time.Duration, seed uint64, breakIt func(*scavenger.Config, *matchingsim.Clock)) result {
	t.Helper()
	dsn := testdb.DSN(t, e)
	ctx := context.Background()
	clock := matchingsim.NewClock(start, 1)
	sim, err := matchingsim.Open(ctx, dsn, matchingsim.Config{Clock: clock, Grace: grace, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	defer sim.Close()
	if err := sim.Setup(ctx); err != nil {
		t.Fatal(err)
	}
	// The scavenger has a handle of its own, as it would in its own
	// process: of 4 connections, enough for statements side by side, and
	// fewer of the server's shared connections than the default 8 (the
	// compat mode runs 32 workers at Temporal's pace).
	db, err := sqlstore.Open(ctx, dsn, sqlstore.Options{MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	closeDB := sync.OnceValue(db.Close)
	defer closeDB()
	cfg.Grace, cfg.UnsafeShortGrace, cfg.Now, cfg.Logger = grace, true, clock.Now, quiet()
	cfg.RetryInitial, cfg.RetryMax = time.Millisecond, 20*time.Millisecond
	rules := matchingsim.RulesFor(cfg)
	if breakIt != nil {
		breakIt(&cfg, clock)
	}
	sc := scavenger.New(db, cfg)

	simCtx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	simDone := make(chan error, 1)
	go func() { simDone <- sim.Run(simCtx) }()
	// Passes are never cancelled: the last one ends after the simulator
	// stopped, so that no statement of the scavenger is cut off mid-way
	// (on MySQL a statement cancelled by the client may still finish on
	// the server, after its count was taken).
	var r result
	for simCtx.Err() == nil {
		s, err := sc.Run(ctx)
		r.queuePasses += s.QueuesProcessed
		r.tasksDeleted += s.TasksDeleted
		r.queuesDeleted += s.QueuesDeleted
		r.jobErrors += s.Errors
		r.badRows += s.BadRowCount
		if err != nil {
			t.Errorf("scavenger pass: %v", err)
			break
		}
		r.passes++
	}
	if err := <-simDone; err != nil {
		t.Fatal(err)
	}
	// The scavenger's connections go before the check opens its own: on
	// a server shared with CI's other suites (the interop suite's
	// Temporal servers), PostgreSQL's 100 connections ran out here once.
	closeDB()
	r.rep, err = sim.Verify(ctx, dsn, rules)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: %s", e, r.counts())
	t.Logf("%s: %s", e, r.rep)
	return r
}

// TestSafetyCheckCatchesBrokenScavengers breaks the scavenger on purpose
// and expects the safety check to say so: a check that cannot fail proves
// nothing.
func TestSafetyCheckCatchesBrokenScavengers(t *testing.T) {
	cases := []struct {
		name    string
		cfg     scavenger.Config
		breakIt func(*scavenger.Config, *matchingsim.Clock)
	}{
		// Tasks that expire in an hour look expired; fresh queues look idle.
		{"clock two hours ahead", scavenger.Config{}, func(c *scavenger.Config, clock *matchingsim.Clock) {
			c.Now = func() time.Time { return clock.Now().Add(2 * time.Hour) }
		}},
		{"temporal mode, clock two hours ahead", scavenger.Config{Rules: scavenger.Rules{Compat: scavenger.CompatTemporal}}, func(c *scavenger.Config, clock *matchingsim.Clock) {
			c.Now = func() time.Time { return clock.Now().Add(2 * time.Hour) }
		}},
		// Queues are deleted while the simulator holds their lease
		// (Temporal's mode: its passes are quick, so this happens often).
		{"temporal mode, grace ignored", scavenger.Config{Rules: scavenger.Rules{Compat: scavenger.CompatTemporal}}, func(c *scavenger.Config, _ *matchingsim.Clock) {
			c.Grace = time.Nanosecond
		}},
	}
	d := 2 * time.Second
	if testing.Short() {
		d = time.Second
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := runSafety(t, sqlstore.SQLite, c.cfg, d, uint64(100+i), c.breakIt)
			if r.rep.ViolationCount == 0 {
				t.Errorf("no violation found with a broken scavenger: %s", r.rep)
			}
			for _, v := range r.rep.Violations[:min(3, len(r.rep.Violations))] {
				t.Logf("caught: %s", v)
			}
		})
	}
}
