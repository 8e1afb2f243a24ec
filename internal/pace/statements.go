package pace

import "context"

// Run runs f, a statement of the store method method, in a slot, and
// observes its latency as a signal of its kind (signals.go); f returns
// the rows it read or deleted. It returns f's error, or the wait's:
// ErrStopped once Config.Stop is closed, or ctx's error.
func (p *Pacer) Run(ctx context.Context, method string, f func() (int, error)) error {
	t, err := p.acquire(ctx)
	if err != nil {
		return err
	}
	start := p.now()
	n, err := f()
	d := p.now().Sub(start)
	if err == nil {
		// A failed statement says nothing of the database's pace that
		// the retry's backoff does not already act on.
		p.observe(method, n, d, t.quiet)
	} else if t.quiet {
		p.quietDone()
	}
	p.release(ctx, d, t)
	return err
}
