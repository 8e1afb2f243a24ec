package daemon_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tqscavenger/tqscavenger/daemon"
	"github.com/tqscavenger/tqscavenger/seed"
)

// TestReadyzBounded: /readyz answers while the database's schema check
// does not (a check that waits past every context, as a driver giving a
// silent server its cancel request does), and the probes of that time
// share the one check in flight.
//
// Invariant: a probe is answered 503 once Config.ReadyTimeout passes,
// whatever the check does; a database that does not answer gets one
// check at a time, not one per probe; once it answers, /readyz is 200.
func TestReadyzBounded(t *testing.T) {
	db := seeded(t, seed.Spec{Queues: 1})
	h := &hookDB{DB: db}
	release, returned := make(chan struct{}), make(chan struct{}, 8)
	var checks atomic.Int64
	var hold atomic.Bool
	hold.Store(true)
	h.check = func() error {
		checks.Add(1)
		if hold.Load() {
			<-release
			returned <- struct{}{}
		}
		return nil
	}
	d := newDaemon(t, daemon.Config{DB: h, Clock: newFakeClock(), ReadyTimeout: 50 * time.Millisecond})
	srv := httptest.NewServer(d.Handler())
	defer srv.Close()
	// A guard against a hang, not a timed assertion: a probe unanswered
	// for a minute is the failure this test is about.
	client := &http.Client{Timeout: time.Minute}
	get := func() (int, string) {
		resp, err := client.Get(srv.URL + "/readyz")
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	var wg sync.WaitGroup
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if code, body := get(); code != 503 || !strings.Contains(body, "did not answer the schema check within 50ms") {
				t.Errorf("GET /readyz while the check does not answer: %d %q; want 503 naming the bound", code, body)
			}
		}()
	}
	wg.Wait()
	if n := checks.Load(); n != 1 {
		t.Errorf("%d schema checks for 3 probes of a database that does not answer; want 1 (shared)", n)
	}
	hold.Store(false)
	close(release)
	recv(t, returned, "the held check's return")
	// The held check answered: the next probe reads it or a new one. A
	// new check of the real database may itself outlast the test's tight
	// 50ms bound on a loaded machine (a 503 then is true), so probe until
	// one answers 200; a minute of 503s is the failure.
	deadline := time.Now().Add(time.Minute)
	for {
		code, body := get()
		if code == 200 && strings.Contains(body, "ok: sqlite") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET /readyz once the database answers: %d %q for a minute; want 200", code, body)
		}
	}
}
