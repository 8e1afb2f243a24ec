package daemon_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tqscavenger/tqscavenger/daemon"
	"github.com/tqscavenger/tqscavenger/scavenger"
	"github.com/tqscavenger/tqscavenger/seed"
)

// TestStatusPageProgress: with a pass held inside its one page of queues,
// after the listing, the status page shows the queues done so far (not 0
// until the page ends), the share done, and the rate and time left the
// command's progress line computes from the same counts.
func TestStatusPageProgress(t *testing.T) {
	const queues, tasks = 30, 20
	db := seeded(t, seed.Spec{Queues: queues, TasksPerQueue: tasks, Expired: 1})
	h := &hookDB{DB: db}
	var scans atomic.Int64
	held := make(chan struct{})
	release := make(chan struct{})
	h.readTasks = func(ctx context.Context) error {
		if scans.Add(1) != 4 {
			return nil
		}
		close(held)
		select {
		case <-release:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	d := newDaemon(t, daemon.Config{DB: h, RunAtStart: true, Clock: newFakeClock(),
		// One page; 100 tasks (5 queues) per scan.
		Scavenger: scavenger.Config{Pace: scavenger.Pace{TaskBatchSize: 100, Workers: 2}}})
	srv := httptest.NewServer(d.Handler())
	defer srv.Close()
	stop := start(t, d)
	defer stop()
	recv(t, held, "the pass's fourth scan")
	waitFor(t, "the listing to end", func() bool {
		c := d.Status().Current
		return c != nil && c.Stats.ListingDone
	})

	before := d.Status().Current.Stats.Progress()
	resp, err := http.Get(srv.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	after := d.Status().Current.Stats.Progress()
	page := string(b)
	close(release)

	if before.Done != after.Done || before.Done == 0 || before.Done >= queues {
		t.Fatalf("queues done %d then %d while the pass was held, want the same, between 1 and %d", before.Done, after.Done, queues-1)
	}
	field := func(id string) string {
		t.Helper()
		m := regexp.MustCompile(`id="` + id + `"[^>]*>([^<]*)<`).FindStringSubmatch(page)
		if m == nil {
			t.Fatalf("the page has no #%s:\n%s", id, page)
		}
		return strings.TrimSpace(m[1])
	}
	for id, want := range map[string]string{
		"queues-done":   strconv.FormatInt(before.Done, 10),
		"queues-listed": strconv.Itoa(queues),
		"percent":       strconv.Itoa(before.Percent),
		"pace-mode":     "gentle",
	} {
		if got := field(id); got != want {
			t.Errorf("#%s = %q, want %q", id, got, want)
		}
	}
	if want := int(100 * before.Done / queues); before.Percent != want {
		t.Errorf("percent %d, want %d", before.Percent, want)
	}
	if !strings.Contains(page, `<progress id="progress" value="`+strconv.FormatInt(before.Done, 10)+`" max="30">`) {
		t.Errorf("the progress bar is not at %d of 30:\n%s", before.Done, page)
	}
	// The counts stand still, the clock does not: the page's rate lies
	// between the rates computed after and before it was made, its time
	// left between theirs.
	rate, err := strconv.ParseFloat(strings.ReplaceAll(field("rate"), "\u202f", ""), 64)
	if err != nil || rate < after.Rate-0.5 || rate > before.Rate+0.5 || rate == 0 {
		t.Errorf("rate %q (%v), want a non-zero rate between %.1f and %.1f", field("rate"), err, after.Rate, before.Rate)
	}
	if !before.HasLeft || !after.HasLeft {
		t.Fatalf("no time left estimated once listed: %+v, %+v", before, after)
	}
	left, err := time.ParseDuration(strings.TrimPrefix(field("left"), "~"))
	if err != nil || left < before.Left || left > after.Left {
		t.Errorf("time left %q (%v), want between %s and %s", field("left"), err, before.Left, after.Left)
	}
}
