package pace

import "context"

// background runs f in a goroutine of its own with a context derived from
// ctx, and returns the func that cancels that context and returns once f
// has: how each signal source (the probe, Temporal's metrics, the alone
// watch) runs beside a pass.
func background(ctx context.Context, f func(ctx context.Context)) (wait func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(ctx)
	}()
	return func() {
		cancel()
		<-done
	}
}
