package scavenger

import "time"

// Estimate is what a running pass's counts say about its progress: the
// figures that both the command's progress line and the daemon's status
// page show. It lives beside Stats, of which it is a pure function, so
// every reader of a pass's counts can tell its progress the same way.
//
// A pass's work is the tasks it examines and the queues it processes, one
// unit each (the lab measured 3-30 µs for each: docs/benchmarks.md). The
// tasks left are what the listed queue rows say they hold
// (Stats.TasksBacklog), scaled by how far those of the queues done were
// off: a pass over a few queues with deep backlogs is measured by its
// tasks, one over many empty queues by its queues.
type Estimate struct {
	// Done and Listed are the queues processed and listed so far; Final
	// says the listing is over, so Listed is the pass's total.
	Done, Listed int64
	Final        bool
	// Percent is the share of listed queues done, 0..100.
	Percent int
	// Rate is tasks deleted (in a dry run: it would delete) per second, over
	// the whole pass so far.
	Rate float64
	// Left is the time the work that remains takes at the pace of the
	// work done so far, at least a second. It is known (HasLeft) only
	// once the listing is over and some work is done, and only while
	// queues remain: a pass past its estimate is finishing (Finishing),
	// never counting down past zero.
	Left    time.Duration
	HasLeft bool
}

// Progress estimates the progress of a pass from its live counts.
func (st Stats) Progress() Estimate {
	e := Estimate{Done: st.QueuesProcessed, Listed: st.QueuesListed, Final: st.ListingDone}
	if e.Listed > 0 {
		e.Percent = int(min(100, 100*e.Done/e.Listed))
	}
	done := st.TasksProcessed + st.QueuesProcessed
	total := done + st.tasksLeft() + st.QueuesListed - st.QueuesProcessed
	if secs := st.Elapsed.Seconds(); secs > 0 {
		tasks, _ := st.Removed()
		e.Rate = float64(tasks) / secs
	}
	if e.Final && done > 0 && e.Done < e.Listed && st.Elapsed > 0 {
		// The pace of the work done so far; the listing, which the first
		// queues waited for, is part of it.
		perUnit := float64(st.Elapsed) / float64(done)
		e.Left = max(time.Second, time.Duration(perUnit*float64(total-done)).Round(time.Second))
		e.HasLeft = true
	}
	return e
}

// tasksLeft estimates the tasks the pass has yet to examine: the listed
// rows' backlog counts not yet done, scaled by how far the done ones were
// off (matching keeps them roughly); without backlog counts, the tasks a
// queue held so far on average, for each queue left.
func (st Stats) tasksLeft() int64 {
	queuesLeft := max(0, st.QueuesListed-st.QueuesProcessed)
	switch {
	case st.TasksBacklog > 0 && st.TasksBacklogDone > 0:
		// Bounded both ways: a few queues done say little yet.
		scale := min(10, max(0.1, float64(st.TasksProcessed)/float64(st.TasksBacklogDone)))
		return int64(float64(max(0, st.TasksBacklog-st.TasksBacklogDone)) * scale)
	case st.TasksBacklog > 0:
		return max(0, st.TasksBacklog-st.TasksProcessed)
	case st.QueuesProcessed > 0:
		return st.TasksProcessed * queuesLeft / st.QueuesProcessed
	}
	return 0
}

// Finishing reports whether every listed queue is done but the pass still
// runs: it deletes the last pages' empty queues, judges again the rows
// that waited on the other table, or scans for orphans.
func (e Estimate) Finishing() bool { return e.Final && e.Done >= e.Listed }

// Estimator refines a running pass's estimate as the pass goes. It keeps
// the pass's counts each time it is updated and learns from the last
// estimatorWindow of them what a task and a queue each take, so that the
// time left is the tasks and the queues that remain, each at its own pace:
// the early queues of a pass may be empty and quick, and its last ones
// deep. Until it has learned them (a pass read once, or one whose work
// has kept the same mix of tasks and queues) it counts a task and a queue
// alike, as Stats.Progress does. Its zero value is ready; it is not safe
// for concurrent use.
type Estimator struct {
	started time.Time
	samples []estimatorSample // oldest first
}

// estimatorWindow is how far back an Estimator learns from: long enough to
// span a few jobs, short enough to follow the pace's changes.
const estimatorWindow = time.Minute

type estimatorSample struct {
	at            time.Duration // the pass's elapsed time
	tasks, queues int64         // examined, processed
}

// Update takes the pass's counts now and returns its estimate. A pass
// other than the one it last saw (another start) starts it afresh.
func (e *Estimator) Update(st Stats) Estimate {
	est := st.Progress()
	if !st.Started.Equal(e.started) || (len(e.samples) > 0 && st.Elapsed < e.samples[len(e.samples)-1].at) {
		e.started, e.samples = st.Started, e.samples[:0]
	}
	e.samples = append(e.samples, estimatorSample{at: st.Elapsed, tasks: st.TasksProcessed, queues: st.QueuesProcessed})
	for len(e.samples) > 2 && st.Elapsed-e.samples[1].at > estimatorWindow {
		e.samples = e.samples[1:]
	}
	if !est.HasLeft {
		return est
	}
	perTask, perQueue, ok := e.fit()
	if !ok {
		return est
	}
	left := time.Duration(perTask*float64(st.tasksLeft()) + perQueue*float64(st.QueuesListed-st.QueuesProcessed))
	est.Left = max(time.Second, left.Round(time.Second))
	return est
}

// fit finds the time a task and a queue take (ns) from the samples'
// steps, by least squares with neither negative. ok is false when the
// steps hold no work. Steps of one mix of tasks and queues cannot tell
// the two apart: then both take the window's time per unit of work.
func (e *Estimator) fit() (perTask, perQueue float64, ok bool) {
	var tt, qq, tq, td, qd, units, dur float64
	for i := 1; i < len(e.samples); i++ {
		a, b := e.samples[i-1], e.samples[i]
		dt, dq, d := float64(b.tasks-a.tasks), float64(b.queues-a.queues), float64(b.at-a.at)
		tt, qq, tq, td, qd = tt+dt*dt, qq+dq*dq, tq+dt*dq, td+dt*d, qd+dq*d
		units, dur = units+dt+dq, dur+d
	}
	if units <= 0 {
		return 0, 0, false
	}
	det := tt*qq - tq*tq
	if det <= 1e-9*tt*qq || tt == 0 || qq == 0 {
		// One mix (or one kind) of work: no telling them apart.
		return dur / units, dur / units, true
	}
	perTask, perQueue = (td*qq-qd*tq)/det, (qd*tt-td*tq)/det
	switch {
	case perTask < 0:
		return 0, qd / qq, true
	case perQueue < 0:
		return td / tt, 0, true
	}
	return perTask, perQueue, true
}
