package daemon_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/tqscavenger/tqscavenger/daemon"
	"github.com/tqscavenger/tqscavenger/internal/testdb"
	"github.com/tqscavenger/tqscavenger/scavenger"
	"github.com/tqscavenger/tqscavenger/seed"
	"github.com/tqscavenger/tqscavenger/sqlstore"
)

// TestDryRunDaemon: a daemon's dry run runs beside a held lock (it takes
// none), deletes nothing, shows a DRY RUN banner on the running pass and
// on its row of the last passes, and is counted in the dry_run_* series,
// never in the real passes' ones.
func TestDryRunDaemon(t *testing.T) {
	db := seeded(t, seed.Spec{Queues: 3, TasksPerQueue: 10, Expired: 1})
	other := testdb.OpenDSN(t, "sqlite:"+db.DSN().Path)
	unlock, err := other.Lock(context.Background(), false)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock.Unlock()
	h := &hookDB{DB: db}
	entered, release := blockReads(h)
	defer release()
	clock := newFakeClock()
	d := newDaemon(t, daemon.Config{DB: h, RunAtStart: true, Clock: clock, Scavenger: scavenger.Config{Rules: scavenger.Rules{DryRun: true}}})
	srv := httptest.NewServer(d.Handler())
	defer srv.Close()
	page := func() string {
		t.Helper()
		resp, err := http.Get(srv.URL + "/")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	stop := start(t, d)
	defer stop()
	recv(t, entered, "the dry run's first read (with the lock held elsewhere)")
	if p := page(); !strings.Contains(p, `id="dry-run-banner"`) || !strings.Contains(p, "DRY RUN") || !strings.Contains(p, `id="tasks-would-delete"`) || strings.Contains(p, `id="tasks-deleted"`) {
		t.Errorf("the running dry run's page has no DRY RUN banner, or counts tasks deleted:\n%s", p)
	}
	release()
	clock.waitTimers(t, 1)
	ps := d.Passes()
	if len(ps) != 1 || ps[0].Outcome != daemon.Completed || !ps[0].DryRun || ps[0].Stats.TasksDeleted != 0 || ps[0].Stats.WouldDeleteTasks != 30 {
		t.Fatalf("passes: %+v", ps)
	}
	if n := countRows(t, db, "tasks"); n != 30 {
		t.Errorf("%d tasks left after a dry run, want 30", n)
	}
	p := page()
	if !strings.Contains(p, "(DRY RUN)") || !strings.Contains(p, "would delete 30") || !strings.Contains(p, `id="dry-run-mode"`) {
		t.Errorf("the finished dry run's row does not say DRY RUN and would delete 30:\n%s", p)
	}
	reg := d.Registry()
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"tqscavenger_passes_started_total", nil, 0},
		{"tqscavenger_passes_completed_total", nil, 0},
		{"tqscavenger_last_success_timestamp_seconds", nil, 0},
		{"tqscavenger_tasks_deleted_total", []string{"table", "v1", "reason", "expired"}, 0},
		{"tqscavenger_queues_deleted_total", []string{"table", "v1"}, 0},
		{"tqscavenger_dry_run_passes_total", []string{"outcome", "completed"}, 1},
		{"tqscavenger_dry_run_tasks_would_delete_total", []string{"table", "v1", "reason", "expired"}, 30},
		{"tqscavenger_dry_run_queues_would_delete_total", []string{"table", "v1"}, 3},
	} {
		if got := metric(t, reg, c.name, c.labels...); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	if metric(t, reg, "tqscavenger_dry_run_last_success_timestamp_seconds") == 0 {
		t.Error("dry_run_last_success_timestamp_seconds is 0 after a completed dry run")
	}
}

func countRows(t *testing.T, db *sqlstore.DB, table string) int {
	t.Helper()
	var n int
	if err := testdb.SQL(t, db).QueryRowContext(context.Background(), "SELECT count(*) FROM "+table).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
