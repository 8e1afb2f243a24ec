package daemon

// The readiness check behind /readyz: the database's schema check, run
// apart from the probe so that the probe is answered within
// Config.ReadyTimeout whatever the database does, and at most one at a
// time so that probes of a database that does not answer do not pile up
// connections and goroutines.

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/tqscavenger/tqscavenger/store"
)

// DefaultReadyTimeout is Config.ReadyTimeout's default: under the 6 s
// timeoutSeconds of the shipped Kubernetes readiness probe, so that the
// probe reads the answer rather than timing out.
const DefaultReadyTimeout = 5 * time.Second

// readyCheck is one schema check for /readyz; done is closed once info
// and err are set.
type readyCheck struct {
	done chan struct{}
	info store.SchemaInfo
	err  error
}

// readiness shares the schema check in flight among the probes.
type readiness struct {
	mu       sync.Mutex
	inFlight *readyCheck
}

// check returns the check the probes share: the one in flight, or a new
// one on check, bounded by timeout. The check runs on a goroutine of its
// own, not under a probe's context, so that a probe that gives up does
// not cancel it for the others.
func (r *readiness) check(timeout time.Duration, check func(context.Context) (store.SchemaInfo, error)) *readyCheck {
	r.mu.Lock()
	defer r.mu.Unlock()
	if c := r.inFlight; c != nil {
		return c
	}
	c := &readyCheck{done: make(chan struct{})}
	r.inFlight = c
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		c.info, c.err = check(ctx)
		r.mu.Lock()
		r.inFlight = nil
		r.mu.Unlock()
		close(c.done)
	}()
	return c
}

// serveReady answers 200 when the database answers and its schema check
// passes, 503 otherwise, while shutting down, and when the check has not
// answered within Config.ReadyTimeout (the driver may take longer to give
// up on a server that does not answer: the probe does not wait for it).
func (d *Daemon) serveReady(w http.ResponseWriter, r *http.Request) {
	d.mu.Lock()
	state := d.state
	d.mu.Unlock()
	if state == Stopping || state == Stopped {
		http.Error(w, "not ready: shutting down", http.StatusServiceUnavailable)
		return
	}
	bound := time.NewTimer(d.cfg.ReadyTimeout)
	defer bound.Stop()
	c := d.ready.check(d.cfg.ReadyTimeout, d.cfg.DB.Check)
	select {
	case <-c.done:
	case <-bound.C:
		http.Error(w, fmt.Sprintf("not ready: the database did not answer the schema check within %s", d.cfg.ReadyTimeout), http.StatusServiceUnavailable)
		return
	case <-r.Context().Done():
		return // the prober left: nobody reads an answer
	}
	if c.err != nil {
		http.Error(w, "not ready: "+oneLine(c.err.Error()), http.StatusServiceUnavailable)
		return
	}
	fmt.Fprintf(w, "ok: %s, task tables %s\n", c.info.Engine, tableList(c.info.Tables))
}
