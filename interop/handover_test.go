package interop

// Issue 26 end to end, at the default settings (no page-size override,
// the default heartbeat timeout and checkpoint interval): `tqscavenger
// worker` processes scavenge a PostgreSQL or MariaDB database for a real
// Temporal server. One worker is SIGKILLed mid-pass: the retry resumes at
// the position its attempt last recorded, and the result names the killed
// attempt's unknown tail. Another is SIGTERMed mid-pass: its partitions
// hand over to a second worker within seconds (not the heartbeat
// timeout), and the totals are exact. Both leave the rows a clean pass
// leaves.

import (
	"context"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/tqscavenger/tqscavenger/internal/testdb"
	"github.com/tqscavenger/tqscavenger/scavenger"
	"github.com/tqscavenger/tqscavenger/seed"
	"github.com/tqscavenger/tqscavenger/sqlstore"
	"github.com/tqscavenger/tqscavenger/store"
	"github.com/tqscavenger/tqscavenger/temporalworker"
)

// handoverBound is the bound on the time from a worker's SIGTERM
// to the next attempt of its partitions on another worker.
const handoverBound = 10 * time.Second

func TestWorkerHandOver(t *testing.T) {
	s := loadSettings(t)
	var engines []sqlstore.Engine
	for _, e := range s.engines {
		switch e {
		case "postgres":
			engines = append(engines, sqlstore.Postgres)
		case "mysql":
			engines = append(engines, sqlstore.MySQL)
		}
	}
	if len(engines) == 0 {
		t.Skip("no PostgreSQL or MariaDB configured")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	const tag = "handover"
	tdb := newEngineDB(t, s, "sqlite", tag)
	ts := newTemporalServer(t, s, tdb, false, tag)
	if err := ts.start(ctx); err != nil {
		t.Fatal(err)
	}
	c, err := client.Dial(client.Options{HostPort: ts.frontend(), Namespace: namespace})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, e := range engines {
		t.Run(string(e), func(t *testing.T) {
			for _, sig := range []syscall.Signal{syscall.SIGKILL, syscall.SIGTERM} {
				handOver(ctx, t, s, ts, c, e, sig)
			}
		})
	}
}

// handOver runs one pass of 3 partitions over a seeded database of engine
// e, signals its first worker sig once a partition recorded a position,
// lets a second worker finish, and checks the hand-over.
func handOver(ctx context.Context, t *testing.T, s settings, ts *temporalServer, c client.Client, e sqlstore.Engine, sig syscall.Signal) {
	name := "term"
	if sig == syscall.SIGKILL {
		name = "kill"
	}
	tag := "handover"
	if err := os.MkdirAll(logPath(s, tag, ""), 0o755); err != nil {
		t.Fatal(err)
	}
	queue := "tqs-" + string(e) + "-" + name
	dsnA, dsnB := testdb.DSN(t, e), testdb.DSN(t, e)
	dbA, dbB := testdb.OpenDSN(t, dsnA), testdb.OpenDSN(t, dsnB)
	seedWorkerStore(t, dbA)
	seedWorkerStore(t, dbB)
	id, err := dbA.Identity(ctx)
	if err != nil {
		t.Fatal(err)
	}
	desc := temporalworker.PassDescription{
		DatabaseIdentity: id, Partitions: 3, Now: workerNow,
		Rules: scavenger.Rules{PastLiveHead: true},
		// The default settings, paced so that a pass lasts long enough to
		// be stopped in the middle.
		MaxStatementsPerSecond: 20,
	}
	hbTimeout := temporalworker.DefaultHeartbeatTimeout
	w1 := startWorkerDSN(t, s, ts, dsnA, queue, logPath(s, tag, string(e)+"-"+name+"-1.log"))
	t0 := time.Now()
	run, err := temporalworker.StartPass(ctx, c, queue+"-pass", queue, desc)
	if err != nil {
		t.Fatal(err)
	}
	beat := waitForCheckpoint(ctx, t, c, run.GetID())
	w2log := logPath(s, tag, string(e)+"-"+name+"-2.log")
	w2 := startWorkerDSN(t, s, ts, dsnA, queue, w2log)
	defer w2.kill()
	waitForLog(ctx, t, w2log, "worker started")
	stopAt := time.Now()
	w1.cmd.Process.Signal(sig)
	<-w1.done
	exited := time.Since(stopAt)
	var res temporalworker.PassResult
	if err := run.Get(ctx, &res); err != nil {
		t.Fatalf("%s: pass: %v", name, err)
	}
	t.Logf("%s %s: position seen at +%s (partition %d), signal at +%s, worker 1 exited %s after it; pass %s at +%s",
		e, sig, stopAt.Sub(t0).Round(time.Millisecond), beat.Partition, stopAt.Sub(t0).Round(time.Millisecond), exited.Round(time.Millisecond), res.Outcome, time.Since(t0).Round(time.Millisecond))

	// What the history says of each partition's last attempt.
	starts := lastStarts(ctx, t, c, run.GetID(), run.GetRunID())
	retried := 0
	for _, p := range res.Partitions {
		st, ok := starts[p.Partition]
		if !ok || p.Attempt < 2 {
			continue
		}
		retried++
		after := st.at.Sub(stopAt)
		t.Logf("  partition %d: attempt %d started %s after the signal (heartbeat timeout %s), last failure %q; resumed %t from %+v; earlier attempts %+v, unknown tails %v",
			p.Partition, p.Attempt, after.Round(time.Millisecond), hbTimeout, st.failure, p.Resumed, p.ResumedFrom, p.Attempts, p.UnknownTails)
		if sig == syscall.SIGTERM {
			if after > handoverBound || !strings.Contains(st.failure, temporalworker.ErrTypeWorkerShutdown) {
				t.Errorf("partition %d: after SIGTERM the next attempt started %s later, last failure %q: want within %s, after %s", p.Partition, after, st.failure, handoverBound, temporalworker.ErrTypeWorkerShutdown)
			}
			if p.LowerBound {
				t.Errorf("partition %d: after SIGTERM the totals are a lower bound (%v): the final heartbeat should make them exact", p.Partition, p.UnknownTails)
			}
		}
		// The retry resumes exactly at the position the killed or
		// stopped attempt last recorded: it redoes no queue before it.
		if st.recorded != nil && st.recorded.Checkpoint != nil && (!p.Resumed || !reflect.DeepEqual(p.ResumedFrom, st.recorded.Checkpoint.Walks)) {
			t.Errorf("partition %d resumed %t from %+v: want the recorded position %+v", p.Partition, p.Resumed, p.ResumedFrom, st.recorded.Checkpoint.Walks)
		}
	}
	if retried == 0 {
		t.Errorf("%s: no partition was retried after the signal", sig)
	}
	clean := cleanStorePass(t, dbB, desc)
	t.Logf("%s %s: reported %d tasks and %d queues deleted (lower bound %t, unknown tails %v); really (a clean pass) %d and %d",
		e, sig, res.Totals.TasksDeleted, res.Totals.QueuesDeleted, res.LowerBound, res.UnknownTails, clean.TasksDeleted, clean.QueuesDeleted)
	exact := res.Totals.TasksDeleted == clean.TasksDeleted && res.Totals.QueuesDeleted == clean.QueuesDeleted
	switch {
	case res.Totals.TasksDeleted > clean.TasksDeleted || res.Totals.QueuesDeleted > clean.QueuesDeleted:
		t.Errorf("reported more deletes than were made")
	case !exact && !res.LowerBound:
		t.Errorf("reported deletes short of the real ones without saying the totals are a lower bound")
	case res.LowerBound != (len(res.UnknownTails) > 0):
		t.Errorf("lower bound %t, unknown tails %v", res.LowerBound, res.UnknownTails)
	}
	if sig == syscall.SIGKILL && !res.LowerBound {
		t.Logf("the killed attempt's last heartbeat came after its last delete: exact totals")
	}
	if a, b := testdb.Digest(t, dbA), testdb.Digest(t, dbB); a != b {
		t.Errorf("the handed-over pass left digest %s, a clean pass %s", a, b)
	}
}

// start is what the history says of a partition's last attempt: when it
// started, the failure of the attempt before, and that attempt's last
// recorded heartbeat (a timeout's details) or its final one (a failure's
// details).
type start struct {
	at       time.Time
	failure  string
	recorded *temporalworker.Progress
}

// lastStarts reads the history of the pass: each partition activity's
// last ActivityTaskStarted (Temporal writes one per activity, for its last
// attempt, with the failure of the one before).
func lastStarts(ctx context.Context, t *testing.T, c client.Client, id, runID string) map[int]start {
	t.Helper()
	scheduled := map[int64]int{} // scheduled event id: partition
	out := map[int]start{}
	it := c.GetWorkflowHistory(ctx, id, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	dc := converter.GetDefaultDataConverter()
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		switch a := ev.Attributes.(type) {
		case *historypb.HistoryEvent_ActivityTaskScheduledEventAttributes:
			var in temporalworker.PartitionInput
			if err := dc.FromPayloads(a.ActivityTaskScheduledEventAttributes.GetInput(), &in); err == nil {
				scheduled[ev.GetEventId()] = in.Partition
			}
		case *historypb.HistoryEvent_ActivityTaskStartedEventAttributes:
			at := a.ActivityTaskStartedEventAttributes
			st := start{at: ev.GetEventTime().AsTime()}
			if f := at.GetLastFailure(); f != nil {
				st.failure = f.GetMessage()
				if ai := f.GetApplicationFailureInfo(); ai != nil {
					st.failure += " (" + ai.GetType() + ")"
					st.recorded = progressOf(dc, ai.GetDetails())
				}
				if ti := f.GetTimeoutFailureInfo(); ti != nil {
					st.failure += " (" + ti.GetTimeoutType().String() + ")"
					st.recorded = progressOf(dc, ti.GetLastHeartbeatDetails())
				}
			}
			out[scheduled[at.GetScheduledEventId()]] = st
		}
	}
	return out
}

func progressOf(dc converter.DataConverter, p *commonpb.Payloads) *temporalworker.Progress {
	if p == nil {
		return nil
	}
	var pr temporalworker.Progress
	if err := dc.FromPayloads(p, &pr); err != nil {
		return nil
	}
	return &pr
}

// waitForLog waits until the file holds s.
func waitForLog(ctx context.Context, t *testing.T, path, s string) {
	t.Helper()
	for {
		if b, _ := os.ReadFile(path); strings.Contains(string(b), s) {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s: no %q", path, s)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// seedWorkerStore writes seedWorkerDB's queues and tasks into db.
func seedWorkerStore(t *testing.T, db *sqlstore.DB) {
	t.Helper()
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

// cleanStorePass makes the description's pass over the whole of db in one
// go, as `run` does.
func cleanStorePass(t *testing.T, db *sqlstore.DB, d temporalworker.PassDescription) scavenger.Stats {
	t.Helper()
	d.MaxStatementsPerSecond = 0
	cfg, err := d.Config(0)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Partition = scavenger.Partition{}
	st, err := scavenger.New(db, cfg).Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// startWorkerDSN starts `tqscavenger worker` on the database dsn.
func startWorkerDSN(t *testing.T, s settings, ts *temporalServer, dsn, queue, log string) *workerProc {
	t.Helper()
	f, err := os.Create(log)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(s.tqs, "worker", "--db", dsn, "--temporal-address", ts.frontend(),
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
