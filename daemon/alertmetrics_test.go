package daemon_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/tqscavenger/tqscavenger/daemon"
	"github.com/tqscavenger/tqscavenger/internal/testdb"
	"github.com/tqscavenger/tqscavenger/seed"
	"github.com/tqscavenger/tqscavenger/store"
)

// TestLockHeldSeconds: lock_held_seconds counts from the attempt that
// found the lock held while each scrape's probe finds it held still, and
// falls to 0 once a probe finds it free. A standby replica that finds it
// held at every tick, by passes that end in between, never counts past
// the holding it sees: each tick starts the count anew.
func TestLockHeldSeconds(t *testing.T) {
	db := seeded(t, seed.Spec{Queues: 2, TasksPerQueue: 4, Expired: 0.5})
	other := testdb.OpenDSN(t, "sqlite:"+db.DSN().Path)
	held, err := other.Lock(context.Background(), false)
	if err != nil {
		t.Fatal(err)
	}
	clock := newFakeClock()
	d := newDaemon(t, daemon.Config{DB: db, RunAtStart: true, Clock: clock})
	start(t, d)
	reg := d.Registry()
	const name = "tqscavenger_lock_held_seconds"

	clock.waitTimers(t, 1) // the first attempt found it held
	clock.Advance(10 * time.Minute)
	if got := metric(t, reg, name); got != 600 {
		t.Errorf("held for 10 min: %s = %v, want 600", name, got)
	}
	// The other pass ends: the next scrape's probe gets the lock, and
	// releases it.
	if err := held.Unlock(); err != nil {
		t.Fatal(err)
	}
	if got := metric(t, reg, name); got != 0 {
		t.Errorf("after the holder released it: %s = %v, want 0", name, got)
	}
	// At the next tick the other replica holds it again: the count
	// starts at this tick, not at the first.
	if held, err = other.Lock(context.Background(), false); err != nil {
		t.Fatalf("the probe kept the lock: %v", err)
	}
	clock.Advance(50 * time.Minute) // the tick, 1h after the first
	clock.waitTimers(t, 1)
	clock.Advance(5 * time.Minute)
	if got := metric(t, reg, name); got != 300 {
		t.Errorf("held again since the second tick, 5 min ago: %s = %v, want 300", name, got)
	}
	if got := metric(t, reg, "tqscavenger_passes_skipped_total", "reason", "lock_held"); got != 2 {
		t.Errorf("passes_skipped_total{lock_held} = %v, want 2", got)
	}
	if err := held.Unlock(); err != nil {
		t.Fatal(err)
	}
	// This replica's own pass takes it: 0, and no probe runs.
	clock.Advance(time.Hour)
	clock.waitTimers(t, 1)
	if ps := d.Passes(); ps[len(ps)-1].Outcome != daemon.Completed {
		t.Fatalf("the third tick: %+v", ps[len(ps)-1])
	}
	if got := metric(t, reg, name); got != 0 {
		t.Errorf("after a pass of its own: %s = %v, want 0", name, got)
	}
}

// TestFailedByCause: a failed pass is counted under its cause, and the
// causes sum to passes_failed_total.
func TestFailedByCause(t *testing.T) {
	db := seeded(t, seed.Spec{Queues: 2, TasksPerQueue: 4, Expired: 0.5})
	h := &hookDB{DB: db}
	h.readTasks = func(context.Context) error { return fmt.Errorf("scan: %w", store.ErrReadOnly) }
	clock := newFakeClock()
	d := newDaemon(t, daemon.Config{DB: h, RunAtStart: true, Clock: clock})
	start(t, d)
	clock.waitTimers(t, 1)
	if ps := d.Passes(); len(ps) != 1 || ps[0].Outcome != daemon.Failed || ps[0].Cause != "read_only" {
		t.Fatalf("a pass on a read-only database: %+v", ps)
	}
	reg := d.Registry()
	var sum float64
	for _, c := range []string{"schema", "lock_lost", "read_only", "disk_full", "statement_timeout", "retries_exhausted", "error"} {
		got := metric(t, reg, "tqscavenger_passes_failed_by_cause_total", "cause", c)
		if want := map[bool]float64{true: 1}[c == "read_only"]; got != want {
			t.Errorf("passes_failed_by_cause_total{cause=%q} = %v, want %v", c, got, want)
		}
		sum += got
	}
	if total := metric(t, reg, "tqscavenger_passes_failed_total"); sum != total {
		t.Errorf("the causes sum to %v, passes_failed_total is %v", sum, total)
	}
}

// TestExpiredLeftByTable: tasks_expired_left counts, per table, the
// expired tasks the last completed pass left behind a live head, as
// tasks_expired_remaining does for both.
func TestExpiredLeftByTable(t *testing.T) {
	db := seeded(t, seed.Spec{Queues: 1, TasksPerQueue: 40, Expired: 0.75, NoExpiry: 0.25, Layout: seed.LiveFirst, IdleAge: 72 * time.Hour})
	clock := newFakeClock()
	cfg := daemon.Config{DB: db, RunAtStart: true, Clock: clock}
	cfg.Scavenger.MaxDeletesPerSecond = 5000
	d := newDaemon(t, cfg)
	start(t, d)
	clock.waitTimers(t, 1)
	reg := d.Registry()
	if got := metric(t, reg, "tqscavenger_max_deletes_per_second"); got != 5000 {
		t.Errorf("max_deletes_per_second = %v, want 5000", got)
	}
	if got := metric(t, reg, "tqscavenger_max_statements_per_second"); got != 0 {
		t.Errorf("max_statements_per_second = %v, want 0 (none)", got)
	}
	v1 := metric(t, reg, "tqscavenger_tasks_expired_left", "table", "v1")
	v2 := metric(t, reg, "tqscavenger_tasks_expired_left", "table", "v2")
	if v1 != 30 || v2 != 0 {
		t.Errorf("tasks_expired_left v1 %v, v2 %v; want 30 (the expired 3/4 of 40, behind live heads) and 0", v1, v2)
	}
	if all := metric(t, reg, "tqscavenger_tasks_expired_remaining"); all != v1+v2 {
		t.Errorf("tasks_expired_remaining %v, the tables sum to %v", all, v1+v2)
	}
	if got := metric(t, reg, "tqscavenger_schedule_interval_seconds"); got != 3600 {
		t.Errorf("schedule_interval_seconds = %v, want 3600 (every 1h, no jitter)", got)
	}
	if got := metric(t, reg, "tqscavenger_past_live_head"); got != 0 {
		t.Errorf("past_live_head = %v, want 0", got)
	}
}
