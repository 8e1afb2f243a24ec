package scavenger

import "time"

// Estimate is what a running pass's counts say about its progress: the
// figures that both the command's progress line and the daemon's status
// page show. It lives beside Stats, of which it is a pure function, so
// every reader of a pass's counts can tell its progress the same way.
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
	// Left is the time left, estimated from the queues done per second so
	// far; it is known (HasLeft) only once the listing is over and some
	// queue is done, and only while queues remain.
	Left    time.Duration
	HasLeft bool
}

// Progress estimates the progress of a pass from its live counts.
func (st Stats) Progress() Estimate {
	e := Estimate{Done: st.QueuesProcessed, Listed: st.QueuesListed, Final: st.ListingDone}
	if e.Listed > 0 {
		e.Percent = int(min(100, 100*e.Done/e.Listed))
	}
	if secs := st.Elapsed.Seconds(); secs > 0 {
		tasks, _ := st.Removed()
		e.Rate = float64(tasks) / secs
	}
	if e.Final && e.Done > 0 && e.Done < e.Listed && st.Elapsed > 0 {
		// Queues done per second so far; the listing, which the first
		// queues waited for, is part of the pass's pace.
		perQueue := float64(st.Elapsed) / float64(e.Done)
		e.Left = time.Duration(perQueue * float64(e.Listed-e.Done)).Round(time.Second)
		e.HasLeft = true
	}
	return e
}

// Finishing reports whether every listed queue is done but the pass still
// runs: it deletes the last pages' empty queues or scans for orphans.
func (e Estimate) Finishing() bool { return e.Final && e.Done >= e.Listed }
