package interop

// Issue 26 end to end (TestWorkerOnTemporal's PostgreSQL and MariaDB
// subtests), at the default settings (no page-size override,
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
	"sync"
	"syscall"
	"testing"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
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

// handoverBound is the bound on the time from a worker's SIGTERM
// to the next attempt of its partitions on another worker.
const handoverBound = 10 * time.Second

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
		Pace: scavenger.Pace{MaxStatementsPerSecond: 20},
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
	beats := watchBeats(ctx, t, c, run.GetID())
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

	// What the history says of each partition's last attempt; a killed
	// attempt's timeout carries no heartbeat there: its last recorded one
	// is the last the pass's description showed.
	starts := lastStarts(ctx, t, c, run.GetID(), run.GetRunID())
	seen := beats()
	for pt, st := range starts {
		if st.recorded == nil {
			if b, ok := seen[pt]; ok {
				st.recorded = &b
				starts[pt] = st
			}
		}
	}
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
		switch {
		case st.recorded == nil:
			t.Errorf("partition %d: the stopped attempt's recorded heartbeat was not seen", p.Partition)
		case st.recorded.Attempt != p.Attempt-1:
			t.Errorf("partition %d: the heartbeat seen last is of attempt %d, want %d", p.Partition, st.recorded.Attempt, p.Attempt-1)
		case st.recorded.Checkpoint == nil && p.Resumed:
			t.Errorf("partition %d resumed from %+v: its attempt recorded no position", p.Partition, p.ResumedFrom)
		case st.recorded.Checkpoint != nil && (!p.Resumed || !reflect.DeepEqual(p.ResumedFrom, st.recorded.Checkpoint.Walks)):
			t.Errorf("partition %d resumed %t from %+v: want the recorded position %+v", p.Partition, p.Resumed, p.ResumedFrom, st.recorded.Checkpoint.Walks)
		}
	}
	if retried == 0 {
		t.Errorf("%s: no partition was retried after the signal", sig)
	}
	// The rows as the pass found them (dbB is an identical copy, not yet
	// scavenged), then a clean pass over it, partition by partition.
	rows := queueKeys(ctx, t, dbB)
	clean, cleanParts := cleanStorePass(t, dbB, desc)
	for _, p := range res.Partitions {
		checkRedone(t, e, sig, p, rows, desc, cleanParts)
	}
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

// watchBeats polls the pass's pending activities until the returned
// function is called, and keeps each partition's recorded heartbeat of
// its first attempt as last seen: after a SIGKILL it no longer changes, and
// it stays visible until the retry records its own (the server gives it
// to the retry, but a timeout in the history carries none).
func watchBeats(ctx context.Context, t *testing.T, c client.Client, id string) func() map[int]temporalworker.Progress {
	var mu sync.Mutex
	last := map[int]temporalworker.Progress{}
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			d, err := c.WorkflowService().DescribeWorkflowExecution(ctx, &workflowservice.DescribeWorkflowExecutionRequest{
				Namespace: namespace, Execution: &commonpb.WorkflowExecution{WorkflowId: id}})
			if err == nil {
				for _, a := range d.GetPendingActivities() {
					var p temporalworker.Progress
					if a.GetHeartbeatDetails() == nil || converter.GetDefaultDataConverter().FromPayloads(a.GetHeartbeatDetails(), &p) != nil || p.Attempt != 1 {
						continue
					}
					mu.Lock()
					last[p.Partition] = p
					mu.Unlock()
				}
			}
			select {
			case <-quit:
				return
			case <-ctx.Done():
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	return func() map[int]temporalworker.Progress {
		close(quit)
		<-done
		mu.Lock()
		defer mu.Unlock()
		return last
	}
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

// cleanStorePass makes the description's pass over db, unpaced, one
// partition after the other (partitions leave the rows a whole pass
// leaves: scavenger's partition tests), and returns the sum and each
// partition's counts.
func cleanStorePass(t *testing.T, db *sqlstore.DB, d temporalworker.PassDescription) (scavenger.Stats, []scavenger.Stats) {
	t.Helper()
	d.MaxStatementsPerSecond = 0
	d = d.WithDefaults()
	var sum scavenger.Stats
	parts := make([]scavenger.Stats, d.Partitions)
	for i := range parts {
		cfg, err := d.Config(i)
		if err != nil {
			t.Fatal(err)
		}
		st, err := scavenger.New(db, cfg).Run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		parts[i] = st
		sum.QueuesProcessed += st.QueuesProcessed
		sum.QueuesDeleted += st.QueuesDeleted
		sum.TasksProcessed += st.TasksProcessed
		sum.TasksDeleted += st.TasksDeleted
	}
	return sum, parts
}

// queueKeys lists the queue rows of both tables of db, in key order.
func queueKeys(ctx context.Context, t *testing.T, db *sqlstore.DB) map[store.Table][]store.QueueKey {
	t.Helper()
	out := map[store.Table][]store.QueueKey{}
	for _, tb := range []store.Table{store.V1, store.V2} {
		var after *store.QueueKey
		for {
			page, err := db.ListQueues(ctx, tb, after, 500)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range page {
				out[tb] = append(out[tb], r.QueueKey)
			}
			if len(page) < 500 {
				break
			}
			after = &page[len(page)-1].QueueKey
		}
	}
	return out
}

// maxRedoneQueues bounds the work a retry redoes beyond the position its
// attempt last recorded: the queues that heartbeat counted as processed
// but its position had not passed yet. The bound, one queue: the
// position records, beside its low-water mark, the runs of queues the
// other workers finished past it (scavenger.WalkPosition.Finished), and a
// heartbeat's counts are read after its position is taken (before them,
// one low-water mark over 4 workers' jobs: 0 to 4 redone).
const maxRedoneQueues = 1

// checkRedone measures, for a partition the signal made retry once, how
// much work the retry redid beyond the position the stopped attempt last
// recorded, and how much it did at all, against the rows the pass found
// (rows). The recorded heartbeat is the one the retry was given: its
// position is the result's ResumedFrom (none: from the start), its counts
// the earlier attempt's entry in Attempts.
//
//   - redone: queues the recorded heartbeat counted as processed that its
//     position does not pass (after its mark, outside its finished runs):
//     the retry does them again; those the attempt deleted are gone and
//     counted anyway, so this bounds the redo from above. The issue's
//     bound: at most one queue.
//   - the retry processed no queue the position passes: at most the rows
//     after its mark and outside its finished runs (a retry that ignored
//     the position would process the whole partition again).
//
// After a SIGKILL the attempt may also have worked after its last
// recorded heartbeat (its unknown tail, named in the result): that is
// redone too, and bounded by the heartbeat interval, not by this check; a
// SIGTERM's final heartbeat leaves none.
func checkRedone(t *testing.T, e sqlstore.Engine, sig syscall.Signal, p temporalworker.PartitionResult,
	rows map[store.Table][]store.QueueKey, d temporalworker.PassDescription, clean []scavenger.Stats) {
	t.Helper()
	cfg, err := d.Config(p.Partition)
	if err != nil {
		t.Fatal(err)
	}
	rng := cfg.Partition.Range()
	var total, at, after int64
	pos := map[store.Table]scavenger.WalkPosition{}
	for _, w := range p.ResumedFrom {
		if w.Walk == scavenger.WalkQueues {
			pos[w.Table] = w
		}
	}
	for tb, keys := range rows {
		w := pos[tb]
		for _, k := range keys {
			if !rng.Contains(k.RangeHash) {
				continue
			}
			total++
			passed := w.Done || (w.After != nil && !w.After.Less(k))
			for _, r := range w.Finished {
				passed = passed || r.Contains(k)
			}
			if passed {
				at++
			} else {
				after++
			}
		}
	}
	// A clean pass of the partition processes every row it found: what
	// the counts below are measured in.
	if c := clean[p.Partition].QueuesProcessed; c != total {
		t.Errorf("partition %d: a clean pass processed %d queues, the copy holds %d in its range", p.Partition, c, total)
	}
	if p.Attempt == 1 {
		return
	}
	var rec *temporalworker.Totals
	for i, a := range p.Attempts {
		if a.Attempt == p.Attempt-1 && a.From == 0 {
			rec = &p.Attempts[i].Totals
		}
	}
	if p.Attempt != 2 || rec == nil {
		t.Logf("  partition %d: attempt %d (earlier attempts %+v): redone work measured for a second attempt only", p.Partition, p.Attempt, p.Attempts)
		return
	}
	redone := rec.QueuesProcessed - at
	t.Logf("  partition %d redone work after %s: %d queues in range, %d passed by the recorded position (its mark and finished runs), %d not; the stopped attempt's recorded heartbeat counted %d queues processed (%d beyond its position: redone, bound %d) and %d tasks; the retry processed %d queues and %d tasks (a clean pass of the partition: %d queues, %d tasks); unknown tails %v",
		p.Partition, sig, total, at, after, rec.QueuesProcessed, redone, maxRedoneQueues, rec.TasksProcessed,
		p.ThisAttempt.QueuesProcessed, p.ThisAttempt.TasksProcessed, clean[p.Partition].QueuesProcessed, clean[p.Partition].TasksProcessed, p.UnknownTails)
	if redone > maxRedoneQueues {
		t.Errorf("partition %d (%s, %s): the stopped attempt's last heartbeat counted %d queues processed beyond its position: the retry redoes them, want at most %d",
			p.Partition, e, sig, redone, maxRedoneQueues)
	}
	if p.ThisAttempt.QueuesProcessed > after {
		t.Errorf("partition %d (%s, %s): the retry processed %d queues, only %d lie outside the recorded position: it redid recorded work",
			p.Partition, e, sig, p.ThisAttempt.QueuesProcessed, after)
	}
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
