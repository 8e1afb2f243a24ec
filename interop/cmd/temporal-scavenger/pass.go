package main

// This file owns the pass: one run of Temporal's own task queue scavenger
// (service/worker/scanner/taskqueue), started and awaited as Temporal's
// TaskQueueScavengerActivity does, with what it reports gathered from the
// metrics it emits, the errors it logs and the calls it makes.

import (
	"context"
	"sync"
	"time"

	"go.temporal.io/server/common/metrics"
	p "go.temporal.io/server/common/persistence"
	"go.temporal.io/server/service/worker/scanner/taskqueue"
)

// aliveCheck is how often the pass's end is looked for. Temporal's
// activity looks every 10 s (tlScavengerHBInterval); the scavenger offers
// no signal of its end but Alive, and a coarse check would add up to its
// period to the measured time.
const aliveCheck = 5 * time.Millisecond

// passResult is what one pass did.
type passResult struct {
	// complete: the scavenger ended on its own (it had gone over every
	// queue), not stopped by a signal or the timeout.
	complete bool
	// wall is from Start to the scavenger's end: what the pass takes as
	// Temporal runs it, including its executor's wait (it checks once a
	// minute whether its queued work is done).
	wall time.Duration
	// work is from Start to the end of its last persistence call: when
	// the last of its work was done.
	work time.Duration
	// Temporal's own counts, from the gauges it emits at the end of a
	// pass (task_processed, task_deleted, taskqueue_processed,
	// taskqueue_deleted).
	tasksProcessed, tasksDeleted, queuesProcessed, queuesDeleted int64
	calls                                                        map[string]int64
	callErrors                                                   int64
	lastCallError                                                string
	// errors counts what the scavenger logged at level error; firstError
	// is the first such line.
	errors     int64
	firstError string
}

// runPass runs one pass of Temporal's scavenger over tm and waits for its
// end, or for ctx's (the pass is then stopped, as Temporal's activity
// stops it when its context ends).
func runPass(ctx context.Context, tm p.TaskManager, logger *lineLogger) passResult {
	stats := newStatsHandler()
	calls := &countingTaskManager{TaskManager: tm, calls: map[string]int64{}}
	s := taskqueue.NewScavenger(calls, stats, logger)

	start := time.Now()
	calls.start = start
	s.Start()
	tick := time.NewTicker(aliveCheck)
	defer tick.Stop()
	complete := true
wait:
	for s.Alive() {
		select {
		case <-ctx.Done():
			// Stop returns once the pass's goroutine has emitted its stats.
			s.Stop()
			complete = false
			break wait
		case <-tick.C:
		}
	}
	res := passResult{complete: complete, wall: time.Since(start)}
	// Alive turns false in Stop, which the pass's goroutine calls after
	// emitting its stats: they are all in.
	res.tasksProcessed = stats.get(metrics.TaskProcessedCount.Name())
	res.tasksDeleted = stats.get(metrics.TaskDeletedCount.Name())
	res.queuesProcessed = stats.get(metrics.TaskQueueProcessedCount.Name())
	res.queuesDeleted = stats.get(metrics.TaskQueueDeletedCount.Name())
	res.work, res.calls, res.callErrors, res.lastCallError = calls.snapshot()
	res.errors, res.firstError = logger.errorCount()
	return res
}

// statsHandler is a metrics.Handler that keeps the last value of each
// gauge and drops everything else: the scavenger reports its counts only
// as gauges, once, when its pass ends.
type statsHandler struct {
	metrics.Handler
	mu     *sync.Mutex
	gauges map[string]float64
}

func newStatsHandler() *statsHandler {
	return &statsHandler{Handler: metrics.NoopMetricsHandler, mu: &sync.Mutex{}, gauges: map[string]float64{}}
}

func (h *statsHandler) WithTags(...metrics.Tag) metrics.Handler { return h }

func (h *statsHandler) Gauge(name string) metrics.GaugeIface {
	return metrics.GaugeFunc(func(v float64, _ ...metrics.Tag) {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.gauges[name] = v
	})
}

func (h *statsHandler) get(name string) int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return int64(h.gauges[name])
}

// countingTaskManager counts the scavenger's calls by method and notes
// when the last one ended. The scavenger uses four methods; the others
// pass through uncounted.
type countingTaskManager struct {
	p.TaskManager
	start time.Time

	mu        sync.Mutex
	calls     map[string]int64
	errors    int64
	lastError string
	lastEnd   time.Time
}

func (c *countingTaskManager) done(method string, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls[method]++
	c.lastEnd = time.Now()
	if err != nil {
		c.errors++
		c.lastError = method + ": " + err.Error()
	}
}

func (c *countingTaskManager) snapshot() (time.Duration, map[string]int64, int64, string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var work time.Duration
	if !c.lastEnd.IsZero() {
		work = c.lastEnd.Sub(c.start)
	}
	calls := make(map[string]int64, len(c.calls))
	for k, v := range c.calls {
		calls[k] = v
	}
	return work, calls, c.errors, c.lastError
}

func (c *countingTaskManager) ListTaskQueue(ctx context.Context, r *p.ListTaskQueueRequest) (*p.ListTaskQueueResponse, error) {
	resp, err := c.TaskManager.ListTaskQueue(ctx, r)
	c.done("ListTaskQueue", err)
	return resp, err
}

func (c *countingTaskManager) GetTasks(ctx context.Context, r *p.GetTasksRequest) (*p.GetTasksResponse, error) {
	resp, err := c.TaskManager.GetTasks(ctx, r)
	c.done("GetTasks", err)
	return resp, err
}

func (c *countingTaskManager) CompleteTasksLessThan(ctx context.Context, r *p.CompleteTasksLessThanRequest) (int, error) {
	n, err := c.TaskManager.CompleteTasksLessThan(ctx, r)
	c.done("CompleteTasksLessThan", err)
	return n, err
}

func (c *countingTaskManager) DeleteTaskQueue(ctx context.Context, r *p.DeleteTaskQueueRequest) error {
	err := c.TaskManager.DeleteTaskQueue(ctx, r)
	c.done("DeleteTaskQueue", err)
	return err
}
