package interop

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"

	"github.com/tqscavenger/tqscavenger/scavenger"
	"github.com/tqscavenger/tqscavenger/sqlstore"
	"github.com/tqscavenger/tqscavenger/store"
)

// scavengerKind says what scavenges beside Temporal in a run.
type scavengerKind int

const (
	noScavenger   scavengerKind = iota // the control run
	realServe                          // `tqscavenger serve`, and the library for phase 2's fence race
	brokenLibrary                      // the library with a broken Config: the checks must fail
)

// runConfig is one configuration of the suite.
type runConfig struct {
	engine   string
	fairness bool
	mode     mode
	kind     scavengerKind
	brk      string // for brokenLibrary: clock or fence
	short    bool
}

// flips says whether the run ends phase 2 with the fairness flip (phase
// 3): fairness-off runs on PostgreSQL and MariaDB, control and scavenged
// alike (their error kinds are compared).
func (c runConfig) flips() bool {
	return !c.fairness && c.engine != "sqlite" && c.kind != brokenLibrary
}

func (c runConfig) tag() string {
	f := "fair-off"
	if c.fairness {
		f = "fair-on"
	}
	k := "scavenged"
	switch c.kind {
	case noScavenger:
		k = "control"
	case brokenLibrary:
		k = "broken-" + c.brk
	}
	return fmt.Sprintf("%s-%s-%s", c.engine, f, k)
}

// report is what a run found.
type report struct {
	cfg                    runConfig
	phase1, phase2, phase3 outcome
	other                  otherRows // phase 2: the other table version's rows tqscavenger deleted
	flip                   flip      // phase 3: the fairness flip (fairness-off runs on PostgreSQL and MariaDB)
	p1, p2pass, p2, final  counts
	target                 string
	fenceHeld, fenceKept   bool
	fenceDetail            string
	abandoned, abandonedOK int // phase 2: abandoned queue rows listed before the pass, and deleted by it
	aged                   int
	kinds                  kinds // Temporal's error kinds outside the window
	window                 [2]time.Time
	windowKinds            kinds     // in the window: from the restart to 5 s after the first pass of phase 2
	shutdownKinds          kinds     // logged after SIGTERM: the shutdown's, not compared
	phase2Kinds            kinds     // the part of kinds from phase 2 (after the window)
	slowest                [2]string // the slowest workflow of each phase and its history
	shape                  string    // the tables when the server stopped in phase 2
	abandonedLeft          []string  // abandoned rows the pass should have deleted
	abandonedKept          []string  // re-leased by matching meanwhile, or holding live tasks
	takeoverRaces          kinds     // phase 2 kinds beyond the control's that are matching's failed takeovers
	noise, controlNoise    kinds     // timing and transport kinds (noiseKind) in the run and its control: reported, not compared
	unattributed           kinds     // queue-row condition failures in phase 1 when tqscavenger deleted no queue row there, or in phase 3: reported
	queueStops             int       // physical queues matching stopped, any cause (logKinds): 0 when its info lines cannot be read
	stoppingSpools         kinds     // queue managers' condition-failure counts told apart by the conflict stops (kindQueueMgrPrefix): reported
	flipWindow             [2]time.Time
	phase3Kinds            kinds // the part of kinds from phase 3, the fairness flip (tqscavenger not running)
	sqliteBusy             kinds // SQLite: Temporal's writes that met SQLITE_BUSY (reported; failed with TQS_INTEROP_SQLITE_STRICT=1)
	finalSummary           string
	p1Latency              latencies // Temporal's persistence_latency over phase 1 (latency_test.go)
	p1Dropped              int       // serve's log lines dropping Temporal's metrics endpoint in phase 1
	problems               []string  // failed checks
	took                   time.Duration
	phaseTook              [3]time.Duration
}

func (r *report) fail(format string, args ...any) {
	r.problems = append(r.problems, fmt.Sprintf(format, args...))
}

// sizes of the workload.
type sizes struct {
	phase1, backlog, fresh int
	spread, bound          time.Duration
}

func workloadSizes(short bool) sizes {
	if short {
		return sizes{phase1: 60, backlog: 15, fresh: 10, spread: 20 * time.Second, bound: 6 * time.Minute}
	}
	return sizes{phase1: 200, backlog: 45, fresh: 30, spread: 50 * time.Second, bound: 6 * time.Minute}
}

// execute runs one configuration: phase 1 beside a live server, then the
// stop, the 72 h aging and the return, then the final pass and read.
// Failed checks go into the report, not to t, so that a broken scavenger's
// run can assert that they fail.
func execute(t *testing.T, s settings, cfg runConfig) *report {
	rep := &report{cfg: cfg}
	start := time.Now()
	defer func() { rep.took = time.Since(start) }()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	tag := cfg.tag()
	sz := workloadSizes(cfg.short)

	db := newEngineDB(t, s, cfg.engine, strings.ReplaceAll(tag, "-", "_"))
	ts := newTemporalServer(t, s, db, cfg.fairness, tag)
	if err := ts.start(ctx); err != nil {
		t.Fatalf("%s: %v", tag, err)
	}
	sdkLog, err := os.Create(logPath(s, tag, "sdk.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer sdkLog.Close()
	c, err := client.Dial(client.Options{HostPort: ts.frontend(), Namespace: namespace,
		Logger: sdklog.NewStructuredLogger(slog.New(slog.NewJSONHandler(sdkLog, &slog.HandlerOptions{Level: slog.LevelWarn})))})
	if err != nil {
		t.Fatalf("%s: dial: %v", tag, err)
	}
	defer c.Close()
	nsd, err := c.WorkflowService().DescribeNamespace(ctx, describeNS())
	if err != nil {
		t.Fatalf("%s: describe namespace: %v", tag, err)
	}
	nsID, err := uuid.Parse(nsd.GetNamespaceInfo().GetId())
	if err != nil {
		t.Fatal(err)
	}
	w := newWorkers(c)
	defer w.stopAll()
	wl := &workload{c: c, w: w, q: newQueues(cfg.short), bound: sz.bound}

	brokenCfg := func(base scavenger.Config) scavenger.Config {
		switch cfg.brk {
		case "clock":
			base.Now = func() time.Time { return time.Now().Add(72 * time.Hour) }
		case "fence":
			base.Middleware = append(base.Middleware, noFence(db.raw, db.engine))
		}
		return base
	}
	startSide := func(phase string) side {
		switch cfg.kind {
		case realServe:
			p, err := startServe(t, s, db.tqsDSN, ts.scavengerListen(), ts.metricsURL(), logPath(s, tag, "tqscavenger-serve-"+phase+".log"), cfg.mode)
			if err != nil {
				t.Fatalf("%s: %v", tag, err)
			}
			return p
		case brokenLibrary:
			pc, closeLog := passConfig(cfg.mode, logPath(s, tag, "tqscavenger-lib-"+phase+".log"))
			t.Cleanup(closeLog)
			l, err := startLibLoop(ctx, db.tqsDSN, brokenCfg(pc))
			if err != nil {
				t.Fatalf("%s: %v", tag, err)
			}
			return l
		}
		return nil
	}

	// Phase 1: the workload with the scavenger beside it.
	t.Logf("%s: phase 1: %d workflows over %s", tag, sz.phase1, sz.spread)
	p1start := time.Now()
	m0, err := ts.metrics()
	if err != nil {
		t.Fatalf("%s: metrics: %v", tag, err)
	}
	sd := startSide("phase1")
	if err := wl.phase1(ctx, t, sz.phase1, sz.spread, cfg.fairness); err != nil {
		t.Fatalf("%s: phase 1: %v", tag, err)
	}
	mP1, err := ts.metrics()
	if err != nil {
		t.Fatalf("%s: metrics: %v", tag, err)
	}
	rep.p1Latency = persistenceLatencies(mP1).minus(persistenceLatencies(m0))
	if h := rep.p1Latency["matching CreateTasks"]; h == nil || h.count <= 0 {
		// The workload appended tasks all phase: without them the latency
		// report says nothing, and --temporal-metrics would read nothing
		// either (a renamed metric or label).
		rep.fail("phase 1: Temporal's metrics show no persistence_latency of matching's CreateTasks (service_name, operation labels)")
	}
	if sd != nil {
		rep.p1, err = sd.stop()
		if err != nil {
			rep.fail("phase 1 scavenger: %v", err)
		}
	}
	if cfg.kind == realServe {
		if rep.p1.Pace != "gentle" {
			rep.fail("phase 1: serve ran at pace %q, want the default (gentle)", rep.p1.Pace)
		}
		rep.p1Dropped = countLines(logPath(s, tag, "tqscavenger-serve-phase1.log"), "metrics endpoint dropped")
	}
	rep.phase1 = wl.outcome("phase1")
	if rep.phase1.SlowestID != "" {
		rep.slowest[0] = wl.history(ctx, rep.phase1.SlowestID)
	}
	rep.phaseTook[0] = time.Since(p1start)
	t.Logf("%s: phase 1 done in %s: %d/%d workflows as expected; scavenger: %s", tag, rep.phaseTook[0].Round(time.Second), rep.phase1.Completed, rep.phase1.Started, rep.p1)

	// Phase 2: backlogs and idle queues in place, the server stops, every
	// queue row is aged 72 h, the server and the workers come back with
	// the scavenger at the 48 h grace.
	p2start := time.Now()
	if err := wl.phase2Backlog(ctx, sz.backlog, cfg.fairness); err != nil {
		t.Fatalf("%s: %v", tag, err)
	}
	w.stopAll()
	time.Sleep(time.Second)
	m1, err := ts.metrics()
	if err != nil {
		t.Fatalf("%s: metrics: %v", tag, err)
	}
	ts.stop(45 * time.Second)
	rep.aged, err = ageQueues(ctx, db.raw, db.engine, 72*time.Hour)
	if err != nil {
		t.Fatalf("%s: aging: %v", tag, err)
	}
	before, err := readInventory(ctx, db.raw)
	if err != nil {
		t.Fatalf("%s: %v", tag, err)
	}
	rep.shape = before.String() + "; " + before.shape()
	t.Logf("%s: server stopped, %d queue rows aged 72h: %s", tag, rep.aged, rep.shape)

	// The target of the deterministic fence race: the root partition of a
	// queue whose workers come back in phase 2, idle and with no task left
	// in either table (matching can leave a dispatched task behind its ack
	// level; such a queue is not deletable in every mode).
	targetTable, targetSQL := store.V1, "task_queues"
	if cfg.fairness {
		targetTable, targetSQL = store.V2, "task_queues_v2"
	}
	var targetID []byte
	var r0 int64
	for _, c := range append(append(append([]string{}, wl.q.flap...), wl.q.wf...), wl.q.act...) {
		typ := 1
		if strings.HasPrefix(c, "act-") {
			typ = 2
		}
		id := queueID(nsID, c, typ, 0)
		r, ok, err := rangeIDOf(ctx, db.raw, db.engine, targetSQL, id)
		if err != nil {
			t.Fatalf("%s: %v", tag, err)
		}
		if ok && before.tasksOf(nsID, c, typ) == 0 {
			targetID, r0 = id, r
			rep.target = fmt.Sprintf("%s row of %s queue %s", targetSQL, map[int]string{1: "workflow", 2: "activity"}[typ], c)
			break
		}
	}
	if targetID == nil && cfg.kind != noScavenger {
		t.Fatalf("%s: no queue polled in phase 2 is idle and empty for the fence race: %s", tag, before)
	}

	if err := ts.start(ctx); err != nil {
		t.Fatalf("%s: restart: %v", tag, err)
	}
	// Every worker comes back at once: in the scavenged runs while the
	// first pass holds the target's delete (see fenceRace).
	startPhase2Workers := func() {
		for _, err := range []error{
			w.startAll(wl.q.flap, workflowsAndActivities),
			w.startAll(wl.q.wf, workflowsAndActivities),
			w.startAll(wl.q.act, activitiesOnly),
			w.startAll(wl.q.rwf, workflowsAndActivities),
			w.startAll(wl.q.ract, activitiesOnly),
		} {
			if err != nil {
				t.Fatalf("%s: %v", tag, err)
			}
		}
	}
	restarted := time.Now()
	var after inventory
	if cfg.kind == noScavenger {
		startPhase2Workers()
	} else {
		rep.fenceRace(ctx, t, s, db, cfg, tag, targetTable, targetSQL, targetID, r0, startPhase2Workers, brokenCfg)
		after, err = readInventory(ctx, db.raw)
		if err != nil {
			t.Fatalf("%s: %v", tag, err)
		}
		rep.checkAbandoned(before, after, targetSQL)
	}
	// The first pass's window: from the restart to 5 s after the pass.
	// Errors matching's takeovers meet in it are told apart (see
	// report.compare).
	time.Sleep(5 * time.Second)
	rep.window = [2]time.Time{restarted, time.Now()}
	// Temporal's metrics reach its Prometheus endpoint on a reporting
	// interval: the window's counters are read a little later than its
	// log lines.
	time.Sleep(3 * time.Second)
	mWindow, err := ts.metrics()
	if err != nil {
		t.Fatalf("%s: metrics: %v", tag, err)
	}
	sd = startSide("phase2")
	if err := wl.phase2Fresh(ctx, sz.fresh); err != nil {
		t.Fatalf("%s: %v", tag, err)
	}
	wl.waitPhase(ctx, "phase2")
	if sd != nil {
		rep.p2, err = sd.stop()
		if err != nil {
			rep.fail("phase 2 scavenger: %v", err)
		}
	}
	rep.phase2 = wl.outcome("phase2")
	if rep.phase2.SlowestID != "" {
		rep.slowest[1] = wl.history(ctx, rep.phase2.SlowestID)
	}
	rep.phaseTook[1] = time.Since(p2start)
	if cfg.kind != noScavenger {
		// The other table version's rows deleted in phase 2 stayed absent
		// while matching ran (its queues loaded, unloaded and reloaded).
		end, err := readInventory(ctx, db.raw)
		if err != nil {
			t.Fatalf("%s: %v", tag, err)
		}
		rep.checkOtherRows(before, after, end)
	}
	var mFlip string
	if cfg.flips() {
		p3start := time.Now()
		if mFlip, err = ts.metrics(); err != nil {
			t.Fatalf("%s: metrics: %v", tag, err)
		}
		rep.flipWindow[0] = p3start
		rep.fairnessFlip(ctx, t, ts, db, wl, nsID)
		rep.flipWindow[1] = time.Now()
		rep.phaseTook[2] = time.Since(p3start)
		t.Logf("%s: phase 3 (fairness flip) done in %s: %d/%d workflows as expected; %s", tag, rep.phaseTook[2].Round(time.Second),
			rep.phase3.Completed, rep.phase3.Started, rep.flip)
	}
	w.stopAll()
	time.Sleep(time.Second)
	m2, err := ts.metrics()
	if err != nil {
		t.Fatalf("%s: metrics: %v", tag, err)
	}
	ts.stop(45 * time.Second)
	t.Logf("%s: phase 2 done in %s: %d/%d workflows as expected; scavenger: pass %s; serve %s", tag, rep.phaseTook[1].Round(time.Second),
		rep.phase2.Completed, rep.phase2.Started, rep.p2pass, rep.p2)

	// Temporal's error kinds over both server runs.
	rep.kinds, rep.windowKinds, rep.shutdownKinds, rep.queueStops, err = logKinds(rep.window, ts.stops, ts.logPaths...)
	if err != nil {
		t.Fatal(err)
	}
	rep.kinds.add(metricKinds(m1))
	rep.windowKinds.add(metricKinds(mWindow))
	rep.kinds.add(metricKinds(m2).minus(metricKinds(mWindow)))
	// Phase 2's kinds outside the window, alone: queue deletes by serve
	// there can race with takeovers too.
	if len(ts.logPaths) > 1 && len(ts.stops) > 1 {
		rep.phase2Kinds, _, _, _, err = logKinds(rep.window, ts.stops[1:], ts.logPaths[1:]...)
		if err != nil {
			t.Fatal(err)
		}
		rep.phase2Kinds.add(metricKinds(m2).minus(metricKinds(mWindow)))
	}
	// Phase 3's kinds alone (tqscavenger does not run in it).
	if mFlip != "" && len(ts.logPaths) > 1 {
		_, rep.phase3Kinds, _, _, err = logKinds(rep.flipWindow, ts.stops[1:], ts.logPaths[1:]...)
		if err != nil {
			t.Fatal(err)
		}
		rep.phase3Kinds.add(metricKinds(m2).minus(metricKinds(mFlip)))
	}

	// The final pass, the server down, at a fixed instant; then the
	// independent read at that instant.
	if cfg.kind != noScavenger {
		now := time.Now()
		pc, closeLog := passConfig(cfg.mode, logPath(s, tag, "tqscavenger-final.log"))
		defer closeLog()
		pc.Now = func() time.Time { return now }
		if cfg.kind == brokenLibrary {
			pc = brokenCfg(pc)
			if cfg.brk == "clock" {
				now = now.Add(72 * time.Hour)
			}
		}
		st, err := onePass(ctx, db.tqsDSN, pc)
		rep.final.addStats(st, err)
		if err != nil {
			rep.fail("final pass: %v", err)
		}
		inv, err := readInventory(ctx, db.raw)
		if err != nil {
			t.Fatal(err)
		}
		var problems []string
		problems, rep.finalSummary = inv.check(cfg.mode, now)
		for _, p := range problems {
			rep.fail("final read: %s", p)
		}
	}
	rep.checkOutcomes()
	return rep
}

func describeNS() *workflowservice.DescribeNamespaceRequest {
	return &workflowservice.DescribeNamespaceRequest{Namespace: namespace}
}

// onePass makes one in-process pass.
func onePass(ctx context.Context, dsn string, cfg scavenger.Config) (scavenger.Stats, error) {
	db, err := sqlstore.Open(ctx, dsn, sqlstore.Options{MaxConns: 2})
	if err != nil {
		return scavenger.Stats{}, err
	}
	defer db.Close()
	return scavenger.New(db, cfg).Run(ctx)
}

// fenceRace runs phase 2's first pass in-process with the target queue's
// delete held until matching has re-leased the queue (its workers come
// back meanwhile), then lets the delete go: the range_id fence must refuse
// it.
func (rep *report) fenceRace(ctx context.Context, t *testing.T, s settings, db *engineDB, cfg runConfig, tag string,
	table store.Table, tableSQL string, targetID []byte, r0 int64, startWorkers func(), broken func(scavenger.Config) scavenger.Config) {
	h := newHold(table, store.QueueKey{RangeHash: uint32(rangeHash(targetID)), ID: targetID})
	h.read = func(ctx context.Context) (int64, bool, error) {
		return rangeIDOf(ctx, db.raw, db.engine, tableSQL, targetID)
	}
	pc, closeLog := passConfig(cfg.mode, logPath(s, tag, "tqscavenger-phase2-pass.log"))
	defer closeLog()
	pc.Middleware = []store.Middleware{h.middleware}
	if cfg.kind == brokenLibrary {
		pc = broken(pc)
	}
	type result struct {
		st  scavenger.Stats
		err error
	}
	done := make(chan result, 1)
	go func() {
		st, err := onePass(ctx, db.tqsDSN, pc)
		done <- result{st, err}
	}()
	var fence store.QueueFence
	select {
	case fence = <-h.held:
		rep.fenceHeld = true
	case r := <-done:
		rep.p2pass.addStats(r.st, r.err)
		rep.fail("phase 2 pass ended without trying to delete the target %s (it should be idle 72 h and empty): %v", rep.target, r.err)
		startWorkers()
		return
	case <-time.After(2 * time.Minute):
		rep.fail("phase 2 pass did not reach the target's delete within 2m")
		startWorkers()
		return
	}
	// The pass has listed the target and decided to delete it; now its
	// workers come back and matching takes the queue.
	startWorkers()
	deadline := time.Now().Add(90 * time.Second)
	var r1 int64
	for {
		var ok bool
		var err error
		r1, ok, err = rangeIDOf(ctx, db.raw, db.engine, tableSQL, targetID)
		if err == nil && ok && r1 != fence.RangeID {
			break
		}
		if time.Now().After(deadline) {
			rep.fail("matching did not re-lease the target %s within 90s (range_id %d, listed %d, row present %t, %v)", rep.target, r1, fence.RangeID, ok, err)
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	close(h.release)
	var hr heldResult
	select {
	case hr = <-h.result:
	case <-time.After(time.Minute):
		rep.fail("the held delete did not return within 1m")
	}
	r := <-done
	rep.p2pass.addStats(r.st, r.err)
	if r.err != nil {
		rep.fail("phase 2 pass: %v", r.err)
	}
	rep.fenceKept = hr.err == nil && hr.present && hr.rangeID == r1
	rep.fenceDetail = fmt.Sprintf("listed at range_id %d (%d before the restart), re-leased by matching to %d while the delete was held; after the held batch (%d other rows deleted, error %v) the row is present %t at range_id %d",
		fence.RangeID, r0, r1, hr.batch, hr.err, hr.present, hr.rangeID)
	if !rep.fenceKept {
		rep.fail("the fence did not hold: %s", rep.fenceDetail)
	}
	if r.st.QueuesKept < 1 {
		rep.fail("phase 2 pass counted %d refused queue deletes, want at least the target's", r.st.QueuesKept)
	}
}

// checkAbandoned checks that phase 2's first pass deleted the abandoned
// queue rows (dead-*, late-*: empty, or holding only expired tasks, and
// polled by nobody) of the target's table, unless matching re-leased one
// meanwhile or it still holds a live task.
func (rep *report) checkAbandoned(before, after inventory, table string) {
	now := time.Now()
	afterRows := map[string]queueRow{}
	for _, r := range after.queues[table] {
		afterRows[string(r.id)] = r
	}
	for _, r := range before.queues[table] {
		n := r.info.GetName()
		if !strings.Contains(n, "dead-") && !strings.Contains(n, "late-") {
			continue
		}
		rep.abandoned++
		a, ok := afterRows[string(r.id)]
		if !ok {
			rep.abandonedOK++
			continue
		}
		owned := map[string]bool{}
		if ns, err := uuid.Parse(r.info.GetNamespaceId()); err == nil {
			for k := 0; k < len(r.info.GetSubqueues())+8; k++ {
				owned[string(queueID(ns, n, int(r.info.GetTaskType()), k))] = true
			}
		}
		live, exp := 0, 0
		for _, t := range after.tasks[taskTables[table]] {
			if owned[string(t.id)] {
				if expired(t.info, now) {
					exp++
				} else {
					live++
				}
			}
		}
		// A row matching wrote since (its last_update_time moved) is
		// alive: re-leased, or deleted by the pass and created afresh,
		// at range_id 1 again, by a phase 2 workflow's task for the
		// queue (dead-* queues get some).
		rewritten := a.info.GetLastUpdateTime().AsTime().After(r.info.GetLastUpdateTime().AsTime())
		why := fmt.Sprintf("%s type %d: range_id %d -> %d, %d live and %d expired tasks", n, r.info.GetTaskType(), r.rangeID, a.rangeID, live, exp)
		if rewritten {
			why += ", last_update_time moved (written by matching since)"
		}
		if a.rangeID != r.rangeID || live > 0 || rewritten {
			rep.abandonedKept = append(rep.abandonedKept, why)
			continue
		}
		rep.abandonedLeft = append(rep.abandonedLeft, why)
	}
}

// checkOutcomes turns the report's numbers into failed checks.
func (rep *report) checkOutcomes() {
	for _, o := range []struct {
		name string
		o    outcome
	}{{"phase 1", rep.phase1}, {"phase 2", rep.phase2}, {"phase 3", rep.phase3}} {
		if o.o.Started == 0 && (o.name != "phase 3" || rep.flip.ran) {
			rep.fail("%s started no workflow", o.name)
		}
		for i, f := range o.o.Failed {
			if i == 20 {
				rep.fail("%s: %d more unexpected outcomes", o.name, len(o.o.Failed)-20)
				break
			}
			rep.fail("%s: workflow %s", o.name, f)
		}
	}
	if rep.cfg.kind == noScavenger {
		return
	}
	if rep.p1.tasks() == 0 {
		rep.fail("phase 1: the scavenger deleted no task beside the live server: the run proves nothing")
	}
	if rep.p2pass.QueuesDeleted+rep.p2.QueuesDeleted == 0 {
		rep.fail("phase 2: the scavenger deleted no queue: the run proves nothing")
	}
	if rep.abandoned == 0 {
		rep.fail("phase 2: no abandoned queue row (dead-*, late-*) was in place before the pass")
	} else if rep.abandonedOK == 0 {
		rep.fail("phase 2: the pass deleted none of the %d abandoned queue rows (dead-*, late-*)", rep.abandoned)
	}
	for _, l := range rep.abandonedLeft {
		rep.fail("phase 2: abandoned queue row left: %s", l)
	}
	for _, c := range []struct {
		name string
		c    counts
	}{{"phase 1", rep.p1}, {"phase 2 pass", rep.p2pass}, {"phase 2", rep.p2}, {"final pass", rep.final}} {
		if c.c.Failed > 0 || c.c.PermanentErrors > 0 {
			rep.fail("%s: %d failed passes, %d permanent store errors", c.name, c.c.Failed, c.c.PermanentErrors)
		}
	}
}

// compare adds a failed check for every kind tqscavenger could cause that
// the run shows and its control does not (see noiseKind for the kinds that
// are reported instead, with both runs' counts). In phase 2, where queue
// rows are deleted, one family is told apart: a queue row deleted (fenced,
// correctly) between matching's read of it and its conditional takeover
// update makes that takeover fail with "Task queue does not exists";
// matching retries and creates the queue afresh. No fence can prevent it
// (the row was idle and unowned when it was deleted); such kinds are
// reported as takeover races, and only when they are no more than the
// queue rows tqscavenger deleted.
func (rep *report) compare(control *report) {
	all := kinds{}
	all.add(control.kinds)
	all.add(control.windowKinds)
	rep.takeoverRaces, rep.sqliteBusy = kinds{}, kinds{}
	rep.noise, rep.controlNoise, rep.unattributed, rep.stoppingSpools = kinds{}, kinds{}, kinds{}, kinds{}
	for _, k := range []kinds{rep.kinds, rep.windowKinds} {
		for n, c := range k.persistence() {
			if noiseKind(n) {
				rep.noise[n] += c
			}
		}
	}
	for n, c := range all.persistence() {
		if noiseKind(n) {
			rep.controlNoise[n] += c
		}
	}
	for _, k := range []struct {
		k      kinds
		window bool
	}{{rep.kinds.beyond(all).persistence(), false}, {rep.windowKinds.beyond(all).persistence(), true}} {
		for n, c := range k.k {
			switch {
			case noiseKind(n):
			case rep.cfg.engine == "sqlite" && sqliteBusy(n):
				rep.sqliteBusy[n] += c
			case strings.HasPrefix(n, kindQueueMgrPrefix) && rep.queueStops > 0:
				// Matching's queue managers count a refused write of a
				// loaded queue's row and, as much, every task spooled
				// into a queue already stopping (after a failed takeover,
				// say). A refused write also stops its queue for a
				// conflict (kindConflictStop, compared here like every
				// kind), so the count alone is reported.
				rep.stoppingSpools[n] += c
			case !k.window && takeoverRace(n) && queueRowCondition(n) && rep.p1.QueuesDeleted == 0 && rep.phase2Kinds[n] > 0 && rep.phase2Kinds[n] < c:
				// Some in phase 1, where tqscavenger deleted no queue row
				// (Temporal's own, as in the next case), the rest in phase
				// 2, where serve's queue deletes race with takeovers (as
				// below): each part under its own phase's rule. Neither
				// rule takes such a kind whole: CI's run at 5f5508a failed
				// on 2 of them (PostgreSQL, fairness on) outside the
				// window, fewer than 2 in phase 2.
				rep.unattributed[n] += c - rep.phase2Kinds[n]
				rep.takeoverRaces[n] += rep.phase2Kinds[n]
			case !k.window && queueRowCondition(n) && rep.p1.QueuesDeleted == 0 && rep.phase2Kinds[n] == 0:
				// All in phase 1, where tqscavenger deleted no queue row:
				// it never writes one otherwise, so it cannot have moved a
				// range_id; Temporal makes these alone (unload races).
				rep.unattributed[n] += c
			case !k.window && (queueRowCondition(n) || n == kindTxDone) && rep.phase3Kinds[n] >= c:
				// All in phase 3, the fairness flip, where tqscavenger
				// does not run: matching's own unload and reload on the
				// config change (a draining manager's takeover against the
				// unloading manager's last write). The rows tqscavenger
				// deleted before were idle and held by nobody, so no
				// stale holder of one is left to be refused. The same for
				// a transaction whose context the unload cancelled
				// (kindTxDone).
				rep.unattributed[n] += c
			case takeoverRace(n) && (k.window || rep.phase2Kinds[n] >= c):
				// In the first pass's window, or later in phase 2: serve's
				// queue deletes there race with takeovers too.
				rep.takeoverRaces[n] += c
			case k.window:
				rep.fail("Temporal error kind not seen without tqscavenger (phase 2, first pass): %6d  %s", c, n)
			default:
				rep.fail("Temporal error kind not seen without tqscavenger: %6d  %s", c, n)
			}
		}
	}
	if n, d := rep.takeoverRaces[kindTakeoverMetric], rep.p2pass.QueuesDeleted+rep.p2.QueuesDeleted; int64(n) > d {
		rep.fail("phase 2: %d matching takeovers failed on a missing row, more than the %d queue rows tqscavenger deleted (each can break at most one)", n, d)
	}
	if len(rep.sqliteBusy) > 0 && os.Getenv("TQS_INTEROP_SQLITE_STRICT") == "1" {
		for _, l := range rep.sqliteBusy.lines() {
			rep.fail("SQLite write conflict (TQS_INTEROP_SQLITE_STRICT=1): %s", strings.TrimSpace(l))
		}
	}
}

// sqliteBusy says whether a kind is one of Temporal's SQLite writes failing
// with SQLITE_BUSY, and the metrics that count them. Temporal's plugin opens
// deferred transactions (its connect attributes become pragmas, so
// _txlock=immediate cannot be set): one that read before another process's
// commit cannot upgrade to a write, and busy_timeout does not apply to that.
// Temporal reports Unavailable and retries.
func sqliteBusy(kind string) bool {
	return strings.Contains(kind, "SQLITE_BUSY") || strings.Contains(kind, "database is locked") ||
		strings.HasPrefix(kind, "metric ") && (strings.Contains(kind, "error_type=serviceerror_Unavailable") || strings.HasPrefix(kind, "metric persistence_errors{"))
}

// kindTakeoverMetric counts failed conditional updates of a queue row.
const kindTakeoverMetric = "metric persistence_error_with_type{error_type=persistence_ConditionFailedError,operation=UpdateTaskQueue,service_name=matching}"

// queueRowCondition says whether a kind is a condition failure on a queue
// row: a write refused because the row's range_id moved or the row is gone
// (matching's conditional updates and appends, its queue managers' count
// of them, and the stop of a loaded queue that met one). tqscavenger can
// cause one only by deleting a queue row: it writes no queue row otherwise.
func queueRowCondition(kind string) bool {
	return kind == kindTakeoverMetric ||
		strings.HasPrefix(kind, "metric persistence_error_with_type{error_type=persistence_ConditionFailedError,operation=CreateTasks,") ||
		strings.HasPrefix(kind, kindQueueMgrPrefix) || kind == kindConflictStop ||
		strings.HasPrefix(kind, "log ") && strings.Contains(kind, "Task queue range ID was")
}

func takeoverRace(kind string) bool {
	if kind == kindTakeoverMetric {
		return true
	}
	if !strings.HasPrefix(kind, "log ") || !strings.HasSuffix(kind, "Task queue does not exists") {
		return false
	}
	// The messages of a failed load and of the requests that waited on it
	// (matching, frontend, history, Temporal's own workers); not those of
	// a loaded queue losing its row (its writer, reader or state sync).
	_, msg, _ := strings.Cut(kind, ": ")
	for _, m := range []string{"Unable to call matching.", "error fetching user data from parent", "failed to load child partition",
		"masked service failures", "service failures", "Fail to process task", "Failed to poll for task."} {
		if strings.HasPrefix(msg, m) {
			return true
		}
	}
	return false
}

func (rep *report) summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s (mode %s) in %s:\n", rep.cfg.tag(), rep.cfg.mode.name, rep.took.Round(time.Second))
	fmt.Fprintf(&b, "  phase 1 (%s): workflows %d/%d as expected (slowest %s %s; activities dispatched but never received, run again: %d); scavenger: %s\n", rep.phaseTook[0].Round(time.Second), rep.phase1.Completed, rep.phase1.Started, rep.phase1.SlowestID, rep.phase1.Slowest.Round(time.Second), rep.phase1.DispatchLost, rep.p1)
	if rep.cfg.kind == realServe {
		fmt.Fprintf(&b, "    serve's --temporal-metrics: dropped for a pass %d times in phase 1 (3 failed scrapes of 1 s in a row; that pass paced on its probe and commits)\n", rep.p1Dropped)
	}
	b.WriteString(rep.slowest[0])
	fmt.Fprintf(&b, "  at the stop: %s\n", rep.shape)
	fmt.Fprintf(&b, "  phase 2 (%s): %d queue rows aged 72h; workflows %d/%d as expected (slowest %s %s; dispatched but never received: %d)\n", rep.phaseTook[1].Round(time.Second), rep.aged, rep.phase2.Completed, rep.phase2.Started, rep.phase2.SlowestID, rep.phase2.Slowest.Round(time.Second), rep.phase2.DispatchLost)
	b.WriteString(rep.slowest[1])
	if rep.flip.ran {
		fmt.Fprintf(&b, "  phase 3, the fairness flip (%s): workflows %d/%d as expected; %s\n", rep.phaseTook[2].Round(time.Second), rep.phase3.Completed, rep.phase3.Started, rep.flip)
		fmt.Fprintf(&b, "    Temporal error/warning kinds in phase 3: %d kinds, %d occurrences\n", len(rep.phase3Kinds), rep.phase3Kinds.total())
		for _, l := range rep.phase3Kinds.lines() {
			fmt.Fprintf(&b, "      %s\n", l)
		}
	}
	if rep.cfg.kind != noScavenger {
		fmt.Fprintf(&b, "    fence race on %s: held %t, refused %t: %s\n", rep.target, rep.fenceHeld, rep.fenceKept, rep.fenceDetail)
		fmt.Fprintf(&b, "    first pass: %s; abandoned rows deleted %d/%d\n", rep.p2pass, rep.abandonedOK, rep.abandoned)
		for _, k := range rep.abandonedKept {
			fmt.Fprintf(&b, "      kept (re-leased or live): %s\n", k)
		}
		fmt.Fprintf(&b, "    serve: %s\n", rep.p2)
		fmt.Fprintf(&b, "    the other table version: %s\n", rep.other)
		for _, r := range rep.other.recreated {
			fmt.Fprintf(&b, "      re-created by a drain: %s\n", r)
		}
		fmt.Fprintf(&b, "  final pass: %s\n  final read: %s\n", rep.final, rep.finalSummary)
	}
	fmt.Fprintf(&b, "  Temporal error/warning kinds outside the first pass of phase 2: %d kinds, %d occurrences (persistence-related: %d kinds, %d)\n",
		len(rep.kinds), rep.kinds.total(), len(rep.kinds.persistence()), rep.kinds.persistence().total())
	for _, l := range rep.kinds.lines() {
		fmt.Fprintf(&b, "    %s\n", l)
	}
	fmt.Fprintf(&b, "  in phase 2 from the restart to 5 s after the first pass (%s): %d kinds, %d occurrences\n",
		rep.window[1].Sub(rep.window[0]).Round(time.Second), len(rep.windowKinds), rep.windowKinds.total())
	for _, l := range rep.windowKinds.lines() {
		fmt.Fprintf(&b, "    %s\n", l)
	}
	fmt.Fprintf(&b, "  during the server's shutdowns (not compared): %d kinds, %d occurrences\n", len(rep.shutdownKinds), rep.shutdownKinds.total())
	if len(rep.takeoverRaces) > 0 {
		fmt.Fprintf(&b, "  of which takeover races (a fenced delete between matching's read and its update; matching retried): %d kinds, %d occurrences\n",
			len(rep.takeoverRaces), rep.takeoverRaces.total())
	}
	if len(rep.unattributed) > 0 {
		fmt.Fprintf(&b, "  queue-row condition failures in phase 1, where tqscavenger deleted no queue row, or in phase 3, where it does not run (not its doing; reported): %d kinds, %d occurrences\n",
			len(rep.unattributed), rep.unattributed.total())
		for _, l := range rep.unattributed.lines() {
			fmt.Fprintf(&b, "    %s\n", l)
		}
	}
	fmt.Fprintf(&b, "  physical queues matching stopped (its info lines, any cause): %d; for a conflict (a refused write of a loaded queue's row): %d outside the window, %d in it, %d in the shutdowns\n",
		rep.queueStops, rep.kinds[kindConflictStop], rep.windowKinds[kindConflictStop], rep.shutdownKinds[kindConflictStop])
	if len(rep.stoppingSpools) > 0 {
		fmt.Fprintf(&b, "  queue managers' condition failures the control lacks (a refused row write among them shows as a conflict stop, compared; the rest are tasks spooled into a stopping queue; reported; %d queue stops read): %d kinds, %d occurrences\n",
			rep.queueStops, len(rep.stoppingSpools), rep.stoppingSpools.total())
		for _, l := range rep.stoppingSpools.lines() {
			fmt.Fprintf(&b, "    %s\n", l)
		}
	}
	if len(rep.noise)+len(rep.controlNoise) > 0 {
		fmt.Fprintf(&b, "  timing and transport kinds (reported, not compared): with tqscavenger / without\n")
		names := kinds{}
		names.add(rep.noise)
		names.add(rep.controlNoise)
		var ns []string
		for n := range names {
			ns = append(ns, n)
		}
		sort.Strings(ns)
		for _, n := range ns {
			fmt.Fprintf(&b, "    %6d / %6d  %s\n", rep.noise[n], rep.controlNoise[n], n)
		}
	}
	if len(rep.sqliteBusy) > 0 {
		fmt.Fprintf(&b, "  SQLite write conflicts (Temporal's deferred transactions met tqscavenger's commits; Temporal retried): %d kinds, %d occurrences\n",
			len(rep.sqliteBusy), rep.sqliteBusy.total())
		for _, l := range rep.sqliteBusy.lines() {
			fmt.Fprintf(&b, "    %s\n", l)
		}
	}
	if len(rep.problems) == 0 {
		b.WriteString("  checks: all passed\n")
	} else {
		fmt.Fprintf(&b, "  checks: %d failed:\n", len(rep.problems))
		for _, p := range rep.problems {
			fmt.Fprintf(&b, "    - %s\n", p)
		}
	}
	return b.String()
}

func writeReport(s settings, name, text string) {
	_ = os.WriteFile(filepath.Join(s.work, name), []byte(text), 0o644)
}
