package scavenger

// How a pass spreads its work: the commit pattern of its pace, and the
// windows a page's single-subqueue queues are split into.

import "github.com/tqscavenger/tqscavenger/store"

// commitPattern sets the store's commit sharing for a pass at the pace in
// effect, and returns how many window jobs a page's queues go to and how
// many deletes a window keeps running. Only PaceFull outside
// CompatTemporal shares commits (store.CommitSwitch): beside a live
// Temporal server on a rollback-journal SQLite file they made its
// workflows 70-130 % slower. The pattern holds
// for the whole pass, whatever pace Tune sets later.
func (s *Scavenger) commitPattern() (spread, pipeline int) {
	// CompatTemporal commits each statement on its own, as Temporal does,
	// at either pace.
	full := s.tune.pace() == PaceFull && s.cfg.Compat != CompatTemporal
	if sw, ok := s.st.(store.CommitSwitch); ok {
		sw.ShareCommits(full)
	}
	if cs, ok := s.st.(store.CommitSharer); ok && full && cs.SharesCommits() {
		return s.cfg.Workers, windowPipeline
	}
	return 1, 1
}

// windowPipeline is how many deletes a window keeps running while it
// scans on where the store shares commits: with two, the next delete joins
// the commit the last one waits for. Elsewhere a window runs one: on
// MariaDB beside a live workload at half its capacity, two (a second
// connection per window) took the workload's p99 from 77ms to 684ms for
// the same pass time (bench --live-load).
const windowPipeline = 2

// minWindow is the fewest queues a page is split into a window of: a
// window costs a few statements whatever its size.
const minWindow = 16

// windows splits a page's window queues into p.spread windows of at least
// minWindow queues each (none for no queues).
func (p *pass) windows(queues []*queueJob) [][]*queueJob {
	n := min(p.spread, len(queues)/minWindow)
	if n <= 1 {
		if len(queues) == 0 {
			return nil
		}
		return [][]*queueJob{queues}
	}
	out := make([][]*queueJob, 0, n)
	for i := range n {
		out = append(out, queues[i*len(queues)/n:(i+1)*len(queues)/n])
	}
	return out
}
