package interop

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// step is one step of a workflow: an optional timer, then an optional
// activity on a queue, with the outcome the workload expects of it.
type step struct {
	Sleep          time.Duration
	Queue          string        // activity task queue ("" for a timer only)
	StartTimeout   time.Duration // schedule-to-start
	Priority       int           // 1..5, 0 = default (3)
	FairnessKey    string
	FairnessWeight float32
	// ExpectTimeout: the queue has no worker; the activity must end in a
	// schedule-to-start timeout (its task expires in the table).
	ExpectTimeout bool
}

// spec is a workflow's input: every step and its expected outcome. A
// workflow that completes returns "done:<ID>"; any step that does not end
// as expected fails the workflow, so a lost task shows as a failed or
// unfinished workflow, never hidden by a retry (MaximumAttempts is 1).
type spec struct {
	ID    string
	Steps []step
}

func jobWorkflow(ctx workflow.Context, sp spec) (string, error) {
	lost := 0
	for i, s := range sp.Steps {
		if s.Sleep > 0 {
			if err := workflow.Sleep(ctx, s.Sleep); err != nil {
				return "", err
			}
		}
		if s.Queue == "" {
			continue
		}
		actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
			TaskQueue:              s.Queue,
			ScheduleToStartTimeout: s.StartTimeout,
			StartToCloseTimeout:    20 * time.Second,
			RetryPolicy:            &temporal.RetryPolicy{MaximumAttempts: 1},
			Priority:               temporal.Priority{PriorityKey: s.Priority, FairnessKey: s.FairnessKey, FairnessWeight: s.FairnessWeight},
		})
		var out string
		err := workflow.ExecuteActivity(actx, "Echo", sp.ID, i).Get(ctx, &out)
		// A start-to-close timeout means matching dispatched the task and
		// history recorded its start, but the worker never got it: a poll
		// response lost between Temporal's services under load (the control
		// runs show it too). The task was not lost from the table, so it is
		// run again as a new activity and counted; a task lost from the
		// table still shows as a schedule-to-start timeout or no outcome.
		for attempt := 0; err != nil && isStartToClose(err) && attempt < 3; attempt++ {
			lost++
			err = workflow.ExecuteActivity(actx, "Echo", sp.ID, i).Get(ctx, &out)
		}
		if s.ExpectTimeout {
			var te *temporal.TimeoutError
			if !errors.As(err, &te) || te.TimeoutType() != enumspb.TIMEOUT_TYPE_SCHEDULE_TO_START {
				return "", fmt.Errorf("step %d on %s: want a schedule-to-start timeout, got %v (result %q)", i, s.Queue, err, out)
			}
			continue
		}
		if err != nil {
			return "", fmt.Errorf("step %d on %s: %w", i, s.Queue, err)
		}
		if want := fmt.Sprintf("%s/%d", sp.ID, i); out != want {
			return "", fmt.Errorf("step %d on %s: got %q, want %q", i, s.Queue, out, want)
		}
	}
	if lost > 0 {
		return fmt.Sprintf("done:%s dispatch-lost:%d", sp.ID, lost), nil
	}
	return "done:" + sp.ID, nil
}

func isStartToClose(err error) bool {
	var te *temporal.TimeoutError
	return errors.As(err, &te) && te.TimeoutType() == enumspb.TIMEOUT_TYPE_START_TO_CLOSE
}

func echoActivity(ctx context.Context, id string, i int) (string, error) {
	_ = activity.GetInfo(ctx)
	return fmt.Sprintf("%s/%d", id, i), nil
}

// workerKind says what a worker polls.
type workerKind int

const (
	workflowsAndActivities workerKind = iota
	activitiesOnly
)

// workers are the SDK workers of a run, by task queue; they start and stop
// as the workload says, so that queues load, unload and are taken over.
type workers struct {
	c       client.Client
	mu      sync.Mutex
	running map[string]worker.Worker
	starts  int
}

func newWorkers(c client.Client) *workers {
	return &workers{c: c, running: map[string]worker.Worker{}}
}

func (w *workers) start(queue string, kind workerKind) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.running[queue]; ok {
		return nil
	}
	wk := worker.New(w.c, queue, worker.Options{
		MaxConcurrentWorkflowTaskPollers: 2,
		MaxConcurrentActivityTaskPollers: 1,
		WorkerStopTimeout:                2 * time.Second,
	})
	if kind == workflowsAndActivities {
		wk.RegisterWorkflowWithOptions(jobWorkflow, workflow.RegisterOptions{Name: "Job"})
	}
	wk.RegisterActivityWithOptions(echoActivity, activity.RegisterOptions{Name: "Echo"})
	if err := wk.Start(); err != nil {
		return fmt.Errorf("worker on %s: %w", queue, err)
	}
	w.running[queue] = wk
	w.starts++
	return nil
}

func (w *workers) startAll(queues []string, kind workerKind) error {
	for _, q := range queues {
		if err := w.start(q, kind); err != nil {
			return err
		}
	}
	return nil
}

func (w *workers) stop(queues ...string) {
	var wg sync.WaitGroup
	w.mu.Lock()
	for _, q := range queues {
		if wk, ok := w.running[q]; ok {
			delete(w.running, q)
			wg.Add(1)
			go func() { defer wg.Done(); wk.Stop() }()
		}
	}
	w.mu.Unlock()
	wg.Wait()
}

func (w *workers) stopAll() {
	w.mu.Lock()
	var qs []string
	for q := range w.running {
		qs = append(qs, q)
	}
	w.mu.Unlock()
	w.stop(qs...)
}

// queues names the task queues of the workload.
type queues struct {
	wf   []string // workflow (and activity) queues, workers always on in phase 1
	act  []string // activity queues, workers always on in phase 1
	flap []string // workflow+activity queues whose workers start and stop
	late []string // activity queues whose workers come late in phase 1 (a backlog builds)
	dead []string // activity queues nobody ever polls: short schedule-to-start, tasks expire
	rwf  []string // phase 2: workflow queues with a backlog while the server is down
	ract []string // phase 2: activity queues with a backlog while the server is down
}

func names(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%02d", prefix, i)
	}
	return out
}

func newQueues(short bool) queues {
	k := 2
	if short {
		k = 1
	}
	return queues{
		wf: names("wf", 4*k), act: names("act", 8*k), flap: names("flap", 3*k),
		late: names("late", 4*k), dead: names("dead", 8*k),
		rwf: names("rwf", 2*k), ract: names("ract", 4*k),
	}
}

// run is one workflow and what became of it.
type run struct {
	id, queue, phase string
	sp               spec
	started          time.Time
	done             bool
	result           string
	err              error
	took             time.Duration
}

// workload starts workflows and collects their outcomes.
type workload struct {
	c  client.Client
	w  *workers
	q  queues
	mu sync.Mutex
	rs []*run
	wg sync.WaitGroup
	// bound is how long a workflow may take from its start to its outcome.
	bound time.Duration
}

func (wl *workload) startWorkflow(ctx context.Context, phase, queue string, sp spec, prio int) error {
	opts := client.StartWorkflowOptions{
		ID:                       sp.ID,
		TaskQueue:                queue,
		WorkflowExecutionTimeout: 0,
		Priority:                 temporal.Priority{PriorityKey: prio},
	}
	var (
		we  client.WorkflowRun
		err error
	)
	for attempt := 0; ; attempt++ {
		we, err = wl.c.ExecuteWorkflow(ctx, opts, "Job", sp)
		var nf *serviceerror.NamespaceNotFound
		if err == nil || !errors.As(err, &nf) && !isUnavailable(err) || attempt > 50 {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err != nil {
		return fmt.Errorf("start %s: %w", sp.ID, err)
	}
	r := &run{id: sp.ID, queue: queue, phase: phase, sp: sp, started: time.Now()}
	wl.mu.Lock()
	wl.rs = append(wl.rs, r)
	wl.mu.Unlock()
	wl.wg.Add(1)
	go func() {
		defer wl.wg.Done()
		wl.await(ctx, r, we.GetRunID())
	}()
	return nil
}

// await waits for a workflow's outcome up to the bound, surviving a server
// restart in between (phase 2).
func (wl *workload) await(ctx context.Context, r *run, runID string) {
	deadline := r.started.Add(wl.bound)
	for {
		cctx, cancel := context.WithDeadline(ctx, deadline)
		var res string
		err := wl.c.GetWorkflow(cctx, r.id, runID).Get(cctx, &res)
		cancel()
		if err == nil || !retryableGet(err) || time.Now().After(deadline) || ctx.Err() != nil {
			wl.mu.Lock()
			r.done, r.result, r.err, r.took = true, res, err, time.Since(r.started)
			wl.mu.Unlock()
			return
		}
		time.Sleep(time.Second)
	}
}

// retryableGet says whether waiting for an outcome failed only because the
// server was away (restarting in phase 2).
func retryableGet(err error) bool {
	var ae *temporal.ApplicationError
	var te *temporal.TimeoutError
	var ce *temporal.CanceledError
	var we *temporal.WorkflowExecutionError
	if errors.As(err, &we) || errors.As(err, &ae) || errors.As(err, &te) || errors.As(err, &ce) {
		return false
	}
	return isUnavailable(err) || errors.Is(err, context.DeadlineExceeded) || strings.Contains(err.Error(), "context deadline exceeded")
}

func isUnavailable(err error) bool {
	var u *serviceerror.Unavailable
	var dl *serviceerror.DeadlineExceeded
	return errors.As(err, &u) || errors.As(err, &dl) || strings.Contains(err.Error(), "connection refused") || strings.Contains(err.Error(), "Unavailable")
}

// waitPhase waits until every workflow of the phase has an outcome.
func (wl *workload) waitPhase(ctx context.Context, phase string) {
	for ctx.Err() == nil {
		if len(wl.pending(phase)) == 0 {
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func (wl *workload) pending(phase string) []*run {
	wl.mu.Lock()
	defer wl.mu.Unlock()
	var out []*run
	for _, r := range wl.rs {
		if r.phase == phase && !r.done {
			out = append(out, r)
		}
	}
	return out
}

// outcome is a phase's summary.
type outcome struct {
	Started, Completed int
	Failed             []string // unexpected outcomes, one line each
	Slowest            time.Duration
	SlowestID          string
	// DispatchLost counts activities whose start Temporal recorded but
	// whose worker never got them (start-to-close timeouts), run again.
	DispatchLost int
}

func (wl *workload) outcome(phase string) outcome {
	wl.mu.Lock()
	defer wl.mu.Unlock()
	var o outcome
	for _, r := range wl.rs {
		if phase != "" && r.phase != phase {
			continue
		}
		o.Started++
		switch {
		case !r.done:
			o.Failed = append(o.Failed, fmt.Sprintf("%s (queue %s): no outcome yet", r.id, r.queue))
		case r.err != nil:
			o.Failed = append(o.Failed, fmt.Sprintf("%s (queue %s): %v after %s", r.id, r.queue, r.err, r.took.Round(time.Second)))
		case r.result != "done:"+r.id && !strings.HasPrefix(r.result, "done:"+r.id+" dispatch-lost:"):
			o.Failed = append(o.Failed, fmt.Sprintf("%s: result %q", r.id, r.result))
		default:
			if _, n, ok := strings.Cut(r.result, " dispatch-lost:"); ok {
				k, _ := strconv.Atoi(n)
				o.DispatchLost += k
			}
			o.Completed++
			if r.took > o.Slowest {
				o.Slowest, o.SlowestID = r.took, r.id
			}
		}
	}
	sort.Strings(o.Failed)
	return o
}

// pick returns the i-th name of a list, cyclically.
func pick(list []string, i int) string { return list[i%len(list)] }

// phase1 starts the first phase's workflows, spread over spread, and
// drives the workers: wf/act always on, flap on and off, late from 25 s.
func (wl *workload) phase1(ctx context.Context, t *testing.T, n int, spread time.Duration, fairness bool) error {
	q := wl.q
	if err := wl.w.startAll(q.wf, workflowsAndActivities); err != nil {
		return err
	}
	if err := wl.w.startAll(q.act, activitiesOnly); err != nil {
		return err
	}
	// Flap workers: off 10 s, on 12 s, off 25 s (past matching's 20 s idle
	// unload), ... until the phase is done.
	flapCtx, stopFlap := context.WithCancel(ctx)
	var flapWG sync.WaitGroup
	flapWG.Add(1)
	go func() {
		defer flapWG.Done()
		on := false
		for wait := 10 * time.Second; ; {
			select {
			case <-flapCtx.Done():
				wl.w.stop(q.flap...)
				return
			case <-time.After(wait):
			}
			if on {
				wl.w.stop(q.flap...)
				on, wait = false, 25*time.Second
			} else {
				if err := wl.w.startAll(q.flap, workflowsAndActivities); err != nil {
					t.Errorf("flap workers: %v", err)
				}
				on, wait = true, 12*time.Second
			}
		}
	}()
	lateTimer := time.AfterFunc(25*time.Second, func() {
		if err := wl.w.startAll(q.late, activitiesOnly); err != nil {
			t.Errorf("late workers: %v", err)
		}
	})
	defer lateTimer.Stop()

	gap := spread / time.Duration(n)
	for i := 0; i < n; i++ {
		queue, sp := phase1Spec(q, i, fairness)
		if err := wl.startWorkflow(ctx, "phase1", queue, sp, 1+(i/5)%5); err != nil {
			stopFlap()
			return err
		}
		time.Sleep(gap)
	}
	wl.waitPhase(ctx, "phase1")
	stopFlap()
	flapWG.Wait()
	return nil
}

// phase1Spec is the i-th workflow of phase 1 and its workflow queue.
func phase1Spec(q queues, i int, fairness bool) (string, spec) {
	prio := 1 + i%5 // 3 is the default: subqueue 0; the others make subqueues k > 0
	var fk string
	var fw float32
	if fairness {
		fk, fw = fmt.Sprintf("tenant-%d", i%7), float32(1+i%3)
	}
	live := func(queue string, sleep time.Duration) step {
		return step{Sleep: sleep, Queue: queue, StartTimeout: 20 * time.Minute, Priority: prio, FairnessKey: fk, FairnessWeight: fw}
	}
	expire := func(queue string, timeout time.Duration) step {
		return step{Queue: queue, StartTimeout: timeout, Priority: prio, FairnessKey: fk, ExpectTimeout: true}
	}
	id := fmt.Sprintf("p1-%03d", i)
	switch i % 5 {
	case 0: // live activities, a timer between
		wq := pick(q.wf, i)
		return wq, spec{ID: id + "-live", Steps: []step{live(pick(q.act, i), 0), live(wq, time.Duration(3+i%6)*time.Second)}}
	case 1: // an activity on a queue nobody polls: its task expires
		return pick(q.wf, i), spec{ID: id + "-expire", Steps: []step{
			expire(pick(q.dead, i), time.Duration(2+i%3)*time.Second), live(pick(q.act, i), 2*time.Second)}}
	case 2: // workflow and activity on queues whose workers come and go
		fq := pick(q.flap, i)
		return fq, spec{ID: id + "-flap", Steps: []step{live(fq, 0), live(pick(q.act, i), 4*time.Second)}}
	case 3: // a backlog on a queue whose workers come late
		return pick(q.wf, i), spec{ID: id + "-late", Steps: []step{live(pick(q.late, i), 0), {Sleep: 2 * time.Second}}}
	default: // a timer across several passes, then live and expiring activities
		return pick(q.wf, i), spec{ID: id + "-timer", Steps: []step{
			live(pick(q.act, i), 10*time.Second), expire(pick(q.dead, i+3), time.Second)}}
	}
}

// phase2Backlog starts the workflows that will be waiting while the server
// is down: workflow tasks on rwf queues (no worker), activity tasks on ract
// queues (no worker, 30 min schedule-to-start), and timers that fire after
// the restart. It returns once every backlog task is in the table.
func (wl *workload) phase2Backlog(ctx context.Context, n int, fairness bool) error {
	q := wl.q
	var needActivity []string
	for i := 0; i < n; i++ {
		prio := 1 + i%5
		var fk string
		if fairness {
			fk = fmt.Sprintf("tenant-%d", i%5)
		}
		id := fmt.Sprintf("p2-%03d", i)
		var queue string
		var sp spec
		switch i % 3 {
		case 0: // a workflow task backlog
			queue = pick(q.rwf, i)
			sp = spec{ID: id + "-rwf", Steps: []step{{Queue: pick(q.act, i), StartTimeout: 20 * time.Minute, Priority: prio, FairnessKey: fk}}}
		case 1: // an activity task backlog
			queue = pick(q.wf, i)
			sp = spec{ID: id + "-ract", Steps: []step{
				{Queue: pick(q.ract, i), StartTimeout: 30 * time.Minute, Priority: prio, FairnessKey: fk},
				{Sleep: time.Second, Queue: pick(q.act, i), StartTimeout: 20 * time.Minute}}}
			needActivity = append(needActivity, sp.ID)
		default: // an expiring activity, then a timer that fires after the restart
			queue = pick(q.wf, i)
			sp = spec{ID: id + "-timer", Steps: []step{
				{Queue: pick(q.dead, i), StartTimeout: time.Second, ExpectTimeout: true},
				{Sleep: 45 * time.Second, Queue: pick(q.act, i), StartTimeout: 20 * time.Minute}}}
		}
		if err := wl.startWorkflow(ctx, "phase2", queue, sp, prio); err != nil {
			return err
		}
	}
	// Wait until every ract workflow has scheduled its activity (its task
	// is then in the ract queue's backlog, as no worker polls it) and the
	// timer workflows have had their activities time out.
	deadline := time.Now().Add(90 * time.Second)
	for _, id := range needActivity {
		for {
			d, err := wl.c.DescribeWorkflowExecution(ctx, id, "")
			if err == nil && len(d.PendingActivities) > 0 {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("phase 2 backlog: %s has not scheduled its activity (%v)", id, err)
			}
			time.Sleep(300 * time.Millisecond)
		}
	}
	time.Sleep(5 * time.Second)
	return nil
}

// phase2Fresh starts workflows after the restart, on queues whose rows the
// scavenger may just have deleted or matching re-created.
func (wl *workload) phase2Fresh(ctx context.Context, n int) error {
	q := wl.q
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("p2f-%03d", i)
		var queue string
		var sp spec
		if i%2 == 0 {
			queue = pick(q.flap, i)
			sp = spec{ID: id + "-flap", Steps: []step{{Queue: queue, StartTimeout: 20 * time.Minute, Priority: 1 + i%5}, {Sleep: 2 * time.Second, Queue: pick(q.act, i), StartTimeout: 20 * time.Minute}}}
		} else {
			queue = pick(q.wf, i)
			sp = spec{ID: id + "-wf", Steps: []step{{Queue: pick(q.act, i), StartTimeout: 20 * time.Minute}, {Queue: pick(q.dead, i), StartTimeout: time.Second, ExpectTimeout: true}}}
		}
		if err := wl.startWorkflow(ctx, "phase2", queue, sp, 0); err != nil {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
	return nil
}

// history is a workflow's events in one line each, with the time since its
// start and the task queue of every scheduled task: why a workflow was slow.
func (wl *workload) history(ctx context.Context, id string) string {
	it := wl.c.GetWorkflowHistory(ctx, id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	var b strings.Builder
	var t0 time.Time
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			fmt.Fprintf(&b, "      (history: %v)\n", err)
			break
		}
		at := ev.GetEventTime().AsTime()
		if t0.IsZero() {
			t0 = at
		}
		detail := ""
		switch {
		case ev.GetWorkflowTaskScheduledEventAttributes() != nil:
			a := ev.GetWorkflowTaskScheduledEventAttributes()
			detail = a.GetTaskQueue().GetName() + " " + a.GetTaskQueue().GetKind().String()
		case ev.GetWorkflowTaskTimedOutEventAttributes() != nil:
			detail = ev.GetWorkflowTaskTimedOutEventAttributes().GetTimeoutType().String()
		case ev.GetActivityTaskScheduledEventAttributes() != nil:
			detail = ev.GetActivityTaskScheduledEventAttributes().GetTaskQueue().GetName()
		case ev.GetActivityTaskTimedOutEventAttributes() != nil:
			detail = ev.GetActivityTaskTimedOutEventAttributes().GetFailure().GetMessage()
		case ev.GetTimerStartedEventAttributes() != nil:
			detail = ev.GetTimerStartedEventAttributes().GetStartToFireTimeout().AsDuration().String()
		}
		fmt.Fprintf(&b, "      +%5.1fs %s %s\n", at.Sub(t0).Seconds(), ev.GetEventType(), detail)
	}
	return b.String()
}
