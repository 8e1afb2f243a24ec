package daemon_test

import (
	"context"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tqscavenger/tqscavenger/daemon"
	"github.com/tqscavenger/tqscavenger/internal/testdb"
	"github.com/tqscavenger/tqscavenger/scavenger"
	"github.com/tqscavenger/tqscavenger/seed"
	"github.com/tqscavenger/tqscavenger/store"
)

// chromiumPath is Debian's chromium, which .ci/browser installs.
const chromiumPath = "/usr/bin/chromium"

// chromium runs headless Debian chromium with the flags this machine
// needs (no sandbox as root; no background connections, which the closed
// network refuses) and returns what it printed.
func chromium(t *testing.T, args ...string) string {
	t.Helper()
	if _, err := os.Stat(chromiumPath); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is missing (CI=true: the browser test must run; .ci/browser installs it)", chromiumPath)
		}
		t.Skipf("browser test skipped: %s is missing (apt-get install chromium, or run .ci/browser)", chromiumPath)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-dev-shm-usage", "--user-data-dir=" + t.TempDir()}
	cmd := exec.CommandContext(ctx, chromiumPath, append(base, args...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium %v: %v\n%s", args, err, stderr.String())
	}
	return string(out)
}

// text returns the text content of the element with id in an HTML dump.
func text(t *testing.T, dom, id string) string {
	t.Helper()
	m := regexp.MustCompile(`id="` + id + `"[^>]*>(.*?)</`).FindStringSubmatch(dom)
	if m == nil {
		t.Fatalf("the page has no element #%s:\n%s", id, dom)
	}
	return strings.TrimSpace(m[1])
}

// TestStatusPageInBrowser loads the status page in headless chromium
// while a pass runs, held in the middle of its listing by the store, and
// checks what it shows. With TQS_UPDATE_SCREENSHOT=1 it also saves the
// screenshot for docs/running.md as docs/status-page.png.
func TestStatusPageInBrowser(t *testing.T) {
	chromium(t, "--version") // skip early without a browser
	db := seeded(t, seed.Spec{NamePrefix: "billing-abandoned", Queues: 6, TasksPerQueue: 40, Expired: 1})
	h := &hookDB{DB: db}
	hold := make(chan struct{})
	signalHold := sync.OnceFunc(func() { close(hold) })
	var holding atomic.Bool
	release := make(chan struct{})
	h.listQueues = func(ctx context.Context, after *store.QueueKey) error {
		// Hold the third pass at its second page of queues.
		if after == nil || !holding.Load() {
			return nil
		}
		signalHold()
		select {
		case <-release:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	// The first pass is refused the lock, the second deletes the first
	// batch, the third is held while the page loads.
	other := newLockHolder(t, db.DSN().Path)
	clock := newFakeClock()
	d := newDaemon(t, daemon.Config{
		DB: h, RunAtStart: true, Clock: clock, Jitter: 72 * time.Minute,
		Rand:      func(n int64) int64 { return int64(17 * time.Minute) },
		Schedule:  mustEvery(t, 12*time.Hour),
		Scavenger: scavenger.Config{Pace: scavenger.Pace{ListPageSize: 10, Workers: 4}},
		DSN:       "postgres://temporal:xxxxx@postgres.internal:5432/temporal",
		Settings: []daemon.Setting{
			{Name: "db", Value: "postgres://temporal:xxxxx@postgres.internal:5432/temporal", Source: "env"},
			{Name: "every", Value: "12h0m0s", Source: "default"},
			{Name: "jitter", Value: "10%", Source: "default"},
			{Name: "listen", Value: ":9464", Source: "file"},
			{Name: "workers", Value: "4", Source: "flag"},
			{Name: "grace", Value: "48h0m0s", Source: "default"},
		},
	})
	srv := httptest.NewServer(d.Handler())
	defer srv.Close()
	start(t, d)

	clock.waitTimers(t, 1) // pass 1 skipped
	other.unlock()
	clock.Advance(12*time.Hour + 17*time.Minute)
	clock.waitTimers(t, 1) // pass 2 completed
	mustSeed(t, db, seed.Spec{NamePrefix: "orders-activities", Queues: 14, TasksPerQueue: 60, Expired: 0.8, NoExpiry: 0.2})
	holding.Store(true)
	clock.Advance(12 * time.Hour)
	recv(t, hold, "the third pass to list its second page")
	waitFor(t, "the first page of queues to be done", func() bool {
		c := d.Status().Current
		return c != nil && c.Stats.QueuesProcessed == 10
	})

	dom := chromium(t, "--dump-dom", srv.URL+"/")
	checks := map[string]string{
		"state":          "running",
		"pass-id":        "#3",
		"queues-done":    "10",
		"queues-listed":  "10",
		"queues-deleted": "0",
		"tasks-deleted":  "480",
		"pace-mode":      "gentle",
		"dsn":            "postgres://temporal:xxxxx@postgres.internal:5432/temporal",
	}
	for id, want := range checks {
		if got := text(t, dom, id); got != want {
			t.Errorf("#%s shows %q, want %q", id, got, want)
		}
	}
	for _, want := range []string{
		// Held in its listing: the total is not known, the bar says so.
		`<progress id="progress" title="still listing`, "of listed so far (still listing)", "after the listing",
		`class="outcome-completed">completed`, // pass 2
		`class="outcome-skipped">skipped`,     // pass 1
		"lock held by another tqscavenger",
		"<code>workers</code>", "after the running pass",
	} {
		if !strings.Contains(dom, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if strings.Contains(dom, "<script") {
		t.Error("the page has a script; it is meant to work without JavaScript")
	}
	if t.Failed() {
		t.Logf("page:\n%s", dom)
	}

	shot := filepath.Join(t.TempDir(), "status-page.png")
	if os.Getenv("TQS_UPDATE_SCREENSHOT") == "1" {
		shot = filepath.Join("..", "docs", "status-page.png")
	}
	chromium(t, "--screenshot="+shot, "--window-size=1200,1000", "--hide-scrollbars", srv.URL+"/")
	if fi, err := os.Stat(shot); err != nil || fi.Size() < 10000 {
		t.Errorf("screenshot %s: %v (%v bytes)", shot, err, fi)
	}
	close(release)
	clock.waitTimers(t, 1)
	if ps := d.Passes(); len(ps) != 3 || ps[2].Outcome != daemon.Completed {
		t.Errorf("passes: %+v", ps)
	}
}

// lockHolder holds the scavenger lock of a SQLite file from another
// handle, as another replica would.
type lockHolder struct{ unlock func() }

func newLockHolder(t *testing.T, path string) *lockHolder {
	t.Helper()
	unlock, err := testdb.OpenDSN(t, "sqlite:"+path).Lock(context.Background(), false)
	if err != nil {
		t.Fatal(err)
	}
	return &lockHolder{unlock: func() { unlock.Unlock() }}
}
