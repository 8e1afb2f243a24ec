package interop

// The Temporal worker of issue 16 end to end: `tqscavenger worker`
// processes on a real Temporal server run a pass as partition activities;
// one is SIGKILLed mid-pass and another started, the pass resumes from the
// activities' heartbeats and leaves the database as a clean pass does; and
// a Schedule made with `tqscavenger schedule` fires a pass.

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/tqscavenger/tqscavenger/internal/testdb"
	"github.com/tqscavenger/tqscavenger/scavenger"
	"github.com/tqscavenger/tqscavenger/seed"
	"github.com/tqscavenger/tqscavenger/sqlstore"
	"github.com/tqscavenger/tqscavenger/store"
	"github.com/tqscavenger/tqscavenger/temporalworker"
)

// workerNow is the pinned clock of the passes, so that the killed pass and
// the clean one decide alike.
var workerNow = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)

// TestWorkerOnTemporal runs `tqscavenger worker` processes beside one real
// Temporal server, at the worker's default settings (page size, heartbeat
// timeout, checkpoint interval; paced by a statement rate so that a pass
// can be stopped in the middle): on SQLite a SIGKILLed worker's pass
// resumes and a Schedule fires a pass; on PostgreSQL and MariaDB a worker
// is SIGKILLed and another SIGTERMed mid-pass (handOver: the work redone,
// the hand-over time, the totals).
func TestWorkerOnTemporal(t *testing.T) {
	s := loadSettings(t)
	s.sideBySide(t) // beside TestInterop: servers of its own
	// Cleanups, not defers: the engines' subtests run in parallel, after
	// this function has returned.
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	t.Cleanup(cancel)
	const tag = "worker"
	// Temporal's own persistence: SQLite, the quickest to set up; the
	// scavenged databases are seeded files or databases of their own, so
	// that the rows a pass leaves can be compared.
	tdb := newEngineDB(t, s, "sqlite", tag)
	ts := newTemporalServer(t, s, tdb, false, tag)
	if err := ts.start(ctx); err != nil {
		t.Fatal(err)
	}
	c, err := client.Dial(client.Options{HostPort: ts.frontend(), Namespace: namespace})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	// The engines side by side on the one server: queues, workflow ids,
	// files and databases of their own.
	t.Run("sqlite", func(t *testing.T) {
		s.sideBySide(t)
		workerOnSQLite(ctx, t, s, ts, c)
	})
	for _, e := range s.engines {
		var engine sqlstore.Engine
		switch e {
		case "postgres":
			engine = sqlstore.Postgres
		case "mysql":
			engine = sqlstore.MySQL
		default:
			continue
		}
		t.Run(e, func(t *testing.T) {
			s.sideBySide(t)
			for _, sig := range []syscall.Signal{syscall.SIGKILL, syscall.SIGTERM} {
				handOver(ctx, t, s, ts, c, engine, sig)
			}
		})
	}
}

// workerOnSQLite: a worker SIGKILLed mid-pass over a SQLite file, the pass
// resumed by another and digest-equal to a clean pass; then a Schedule
// made with `tqscavenger schedule` fires a pass.
func workerOnSQLite(ctx context.Context, t *testing.T, s settings, ts *temporalServer, c client.Client) {
	const tag, queue = "worker", "tqs-e2e"
	dir := filepath.Join(s.work, tag)
	pathA, pathB := filepath.Join(dir, "scavenged.db"), filepath.Join(dir, "clean.db")
	for _, p := range []string{pathA, pathB} {
		seedWorkerDB(t, p)
	}
	id := dbIdentity(t, pathA)

	w1 := startWorker(t, s, ts, pathA, queue, logPath(s, tag, "worker-1.log"))
	desc := temporalworker.PassDescription{
		DatabaseIdentity: id, Partitions: 3, Now: workerNow, Rules: scavenger.Rules{PastLiveHead: true},
		// The default settings, paced so that a pass lasts long enough
		// to be killed in the middle.
		Pace: scavenger.Pace{MaxStatementsPerSecond: 30},
	}
	t0 := time.Now()
	run, err := temporalworker.StartPass(ctx, c, "tqs-e2e-pass", queue, desc)
	if err != nil {
		t.Fatal(err)
	}
	// A second start of the same id while it runs is refused: one pass
	// at a time per workflow id.
	var started *serviceerror.WorkflowExecutionAlreadyStarted
	if _, err := temporalworker.StartPass(ctx, c, "tqs-e2e-pass", queue, desc); !errors.As(err, &started) {
		t.Errorf("a second pass with the same workflow id while the first runs: %v, want WorkflowExecutionAlreadyStarted", err)
	}
	beat := waitForCheckpoint(ctx, t, c, run.GetID())
	killAt := time.Now()
	w1.kill()
	t.Logf("timeline: pass started %s; heartbeat with a position seen at +%s (partition %d, %d tasks examined so far, positions %+v); worker 1 SIGKILLed at +%s",
		t0.Format(time.TimeOnly), killAt.Sub(t0).Round(time.Millisecond), beat.Partition, beat.Counted.TasksProcessed, beat.Checkpoint.Walks, killAt.Sub(t0).Round(time.Millisecond))
	w2 := startWorker(t, s, ts, pathA, queue, logPath(s, tag, "worker-2.log"))
	defer w2.kill()
	restartAt := time.Now()
	var res temporalworker.PassResult
	if err := run.Get(ctx, &res); err != nil {
		t.Fatalf("pass: %v", err)
	}
	doneAt := time.Now()
	t.Logf("timeline: worker 2 started at +%s; pass completed at +%s: %s, %d tasks deleted, %d queues deleted",
		restartAt.Sub(t0).Round(time.Millisecond), doneAt.Sub(t0).Round(time.Millisecond), res.Outcome, res.Totals.TasksDeleted, res.Totals.QueuesDeleted)
	resumed := 0
	var final int64
	for _, p := range res.Partitions {
		t.Logf("  partition %d %s: attempt %d, resumed %t from %+v; tasks examined: earlier attempts %d, final attempt %d",
			p.Partition, p.Range, p.Attempt, p.Resumed, p.ResumedFrom, p.EarlierAttempts.TasksProcessed, p.ThisAttempt.TasksProcessed)
		if p.Resumed {
			resumed++
		}
		final += p.ThisAttempt.TasksProcessed
	}
	dbB, err := sqlstore.Open(ctx, "sqlite:"+pathB, sqlstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rows := queueKeys(ctx, t, dbB)
	clean, cleanParts := cleanStorePass(t, dbB, desc)
	dbB.Close()
	for _, p := range res.Partitions {
		checkRedone(t, "sqlite", syscall.SIGKILL, p, rows, desc, cleanParts)
	}
	t.Logf("clean pass: %d tasks examined, %d deleted; the killed pass's final attempts examined %d", clean.TasksProcessed, clean.TasksDeleted, final)
	if resumed == 0 {
		t.Error("no partition resumed from a heartbeat after the kill")
	}
	// The pass itself says it resumed: the new worker's log has the
	// scavenger's own line for each partition that went on from its
	// checkpoint (the result's Resumed only says a heartbeat was there).
	w2.kill()
	if log, err := os.ReadFile(logPath(s, tag, "worker-2.log")); err != nil {
		t.Error(err)
	} else if n := strings.Count(string(log), `"msg":"resuming from checkpoint"`); n < resumed {
		t.Errorf("%d partitions resumed by their results, %d passes logged resuming from a checkpoint", resumed, n)
	}
	if final >= clean.TasksProcessed {
		t.Errorf("the final attempts examined %d tasks, a clean pass %d: resuming saved nothing", final, clean.TasksProcessed)
	}
	if a, b := fileDigest(t, pathA), fileDigest(t, pathB); a != b {
		t.Errorf("the resumed pass left digest %s, a clean pass %s", a, b)
	} else {
		t.Logf("digest after the resumed pass equals the clean pass's: %s", a)
	}

	// The Schedule: created by the command, triggered, and its pass run
	// by a worker.
	w3 := startWorker(t, s, ts, pathA, queue, logPath(s, tag, "worker-3.log"))
	defer w3.kill()
	tqs := func(args ...string) string { return runTQS(ctx, t, s, ts, args...) }
	t.Log(strings.TrimSpace(tqs("schedule", "create", "--db", "sqlite:"+pathA, "--schedule-id", "tqs-e2e",
		"--temporal-task-queue", queue, "--every", "1h", "--jitter", "0s", "--partitions", "2", "--past-live-head")))
	defer tqs("schedule", "delete", "--schedule-id", "tqs-e2e")
	tqs("schedule", "trigger", "--schedule-id", "tqs-e2e")
	var st temporalworker.ScheduleState
	for st = (temporalworker.ScheduleState{}); len(st.Recent) == 0; {
		if st, err = temporalworker.DescribeSchedule(ctx, c, "tqs-e2e"); err != nil {
			t.Fatal(err)
		}
		if len(st.Recent) == 0 {
			select {
			case <-ctx.Done():
				t.Fatal("the triggered schedule started no pass")
			case <-time.After(200 * time.Millisecond):
			}
		}
	}
	if st.Overlap != "SCHEDULE_OVERLAP_POLICY_SKIP" || len(st.Every) != 1 || st.Every[0] != time.Hour || st.Pass == nil || st.Pass.Partitions != 2 {
		t.Errorf("schedule %+v", st)
	}
	var sres temporalworker.PassResult
	if err := c.GetWorkflow(ctx, st.Recent[0].WorkflowID, "").Get(ctx, &sres); err != nil {
		t.Fatalf("the scheduled pass: %v", err)
	}
	if sres.Outcome != "completed" || len(sres.Partitions) != 2 {
		t.Errorf("scheduled pass %+v", sres)
	}
	t.Logf("the schedule's pass %s: %s over %d partitions, %d tasks examined", st.Recent[0].WorkflowID, sres.Outcome, len(sres.Partitions), sres.Totals.TasksProcessed)
	if out := tqs("schedule", "describe", "--schedule-id", "tqs-e2e", "--output", "json"); !strings.Contains(out, `"overlap": "SCHEDULE_OVERLAP_POLICY_SKIP"`) {
		t.Errorf("schedule describe: %s", out)
	}
}

// seedWorkerDB writes the same queues and tasks into a new SQLite file.
func seedWorkerDB(t *testing.T, path string) {
	t.Helper()
	for _, suffix := range []string{"", "-wal", "-shm"} {
		os.Remove(path + suffix)
	}
	db, err := sqlstore.Open(context.Background(), "sqlite:"+path, sqlstore.Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Setup(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, sp := range []seed.Spec{
		{NamePrefix: "mixed", Queues: 300, TasksPerQueue: 20, Expired: 0.6, Layout: seed.Shuffled, Seed: 1, IdleAge: time.Hour},
		{NamePrefix: "idle", Queues: 100, TasksPerQueue: 5, Expired: 1, IdleAge: 72 * time.Hour},
		{Table: store.V2, NamePrefix: "fair", Queues: 100, TasksPerQueue: 10, Subqueues: 2, Expired: 0.5, Layout: seed.Shuffled, Seed: 2, IdleAge: time.Hour},
	} {
		sp.Now = workerNow
		if _, err := seed.Write(context.Background(), db, sp); err != nil {
			t.Fatal(err)
		}
	}
}

func dbIdentity(t *testing.T, path string) string {
	t.Helper()
	db, err := sqlstore.Open(context.Background(), "sqlite:"+path, sqlstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	id, err := db.Identity(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// fileDigest hashes every row of the SQLite file's task tables.
func fileDigest(t *testing.T, path string) string {
	t.Helper()
	db, err := sqlstore.Open(context.Background(), "sqlite:"+path, sqlstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	return testdb.Digest(t, db)
}

// workerProc is a `tqscavenger worker` child process.
type workerProc struct {
	cmd  *exec.Cmd
	done chan error
}

func startWorker(t *testing.T, s settings, ts *temporalServer, dbPath, queue, log string) *workerProc {
	t.Helper()
	f, err := os.Create(log)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(s.tqs, "worker", "--db", "sqlite:"+dbPath, "--temporal-address", ts.frontend(),
		"--temporal-namespace", namespace, "--temporal-task-queue", queue, "--max-partitions", "3", "--log-format", "json")
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		f.Close()
		t.Fatal(err)
	}
	p := &workerProc{cmd: cmd, done: make(chan error, 1)}
	go func() { p.done <- cmd.Wait(); f.Close() }()
	t.Cleanup(p.kill)
	return p
}

// kill SIGKILLs the worker and waits for it to exit.
func (p *workerProc) kill() {
	if p.cmd.ProcessState != nil {
		return
	}
	p.cmd.Process.Signal(syscall.SIGKILL)
	if err := <-p.done; err != nil {
		p.done <- err
	}
}

// stopAfterQueues is how many queues a partition's recorded heartbeat has
// counted as processed before its worker is stopped: a few per worker, so
// that a position that lagged the work (a page's, not a queue's, as issue
// 26 found, or one low-water mark over the jobs the workers run side by
// side, without the runs they finished past it) would show more queues
// redone than checkRedone's bound of one (maxRedoneQueues).
const stopAfterQueues = 3 * scavenger.DefaultWorkers

// waitForCheckpoint polls the pass until a partition activity's recorded
// heartbeat holds a position inside a walk and counts stopAfterQueues
// queues processed, and returns that heartbeat.
func waitForCheckpoint(ctx context.Context, t *testing.T, c client.Client, id string) temporalworker.Progress {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) {
		d, err := c.WorkflowService().DescribeWorkflowExecution(ctx, &workflowservice.DescribeWorkflowExecutionRequest{
			Namespace: namespace, Execution: &commonpb.WorkflowExecution{WorkflowId: id}})
		if err != nil {
			t.Fatal(err)
		}
		if d.GetWorkflowExecutionInfo().GetCloseTime() != nil {
			t.Fatal("the pass ended before a heartbeat with a position was seen: make it slower")
		}
		for _, a := range d.GetPendingActivities() {
			if a.GetHeartbeatDetails() == nil {
				continue
			}
			var p temporalworker.Progress
			if err := converter.GetDefaultDataConverter().FromPayloads(a.GetHeartbeatDetails(), &p); err != nil {
				t.Fatal(err)
			}
			if p.Checkpoint != nil && p.ThisAttempt.QueuesProcessed >= stopAfterQueues {
				for _, w := range p.Checkpoint.Walks {
					if w.After != nil || w.Done || len(w.Finished) > 0 {
						return p
					}
				}
			}
		}
		select {
		case <-ctx.Done():
			t.Fatal(errors.New("no heartbeat with a position before the deadline"))
		case <-time.After(100 * time.Millisecond):
		}
	}
	t.Fatal("no heartbeat with a position in 3 minutes")
	return temporalworker.Progress{}
}

// runTQS runs the tqscavenger binary with args against ts's frontend and
// namespace and returns its combined output, failing the test if it fails.
func runTQS(ctx context.Context, t *testing.T, s settings, ts *temporalServer, args ...string) string {
	t.Helper()
	args = append(args, "--temporal-address", ts.frontend(), "--temporal-namespace", namespace)
	out, err := exec.CommandContext(ctx, s.tqs, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("tqscavenger %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}
