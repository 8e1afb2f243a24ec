package daemon_test

import (
	"strings"
	"testing"
	"time"

	"github.com/tqscavenger/tqscavenger/daemon"
	"github.com/tqscavenger/tqscavenger/scavenger"
	"github.com/tqscavenger/tqscavenger/seed"
)

// TestReconfigureRateLimitLive: a pass held by a rate limit of one
// statement per 1000 s finishes once a reload lifts the limit: the running
// pass takes the new limit, not only the next one.
func TestReconfigureRateLimitLive(t *testing.T) {
	db := seeded(t, seed.Spec{Queues: 5, TasksPerQueue: 20, Expired: 1})
	h := &hookDB{DB: db}
	clock := newFakeClock()
	slow := scavenger.Config{Pace: scavenger.Pace{MaxStatementsPerSecond: 0.001}}
	d := newDaemon(t, daemon.Config{DB: h, RunAtStart: true, Clock: clock, Scavenger: slow})
	start(t, d)
	waitFor(t, "the pass to start", func() bool { return d.Status().Current != nil && h.calls.Load() > 0 })
	calls := h.calls.Load()
	if d.Status().State != daemon.Running {
		t.Fatalf("state %s, want running", d.Status().State)
	}
	if err := d.Reconfigure(daemon.Reconfig{Scavenger: scavenger.Config{}, Schedule: mustEvery(t, time.Hour)}); err != nil {
		t.Fatal(err)
	}
	clock.waitTimers(t, 1) // the pass is over, the next one armed
	ps := d.Passes()
	if len(ps) != 1 || ps[0].Outcome != daemon.Completed || ps[0].Stats.TasksDeleted != 100 {
		t.Fatalf("passes: %+v", ps)
	}
	t.Logf("%d statements before the reload, %d in all", calls, h.calls.Load())
}

// TestReconfigure: a reload replaces the schedule at once (the next pass
// is planned again), the settings on the status page and when they were
// loaded; a refused one changes nothing and is counted by result.
func TestReconfigure(t *testing.T) {
	db := seeded(t, seed.Spec{Queues: 2, TasksPerQueue: 5, Expired: 1})
	clock := newFakeClock()
	var logs logBuffer
	d := newDaemon(t, daemon.Config{DB: db, Clock: clock, Logger: logs.logger(),
		Settings: []daemon.Setting{{Name: "every", Value: "1h", Source: "default"}}})
	start(t, d)
	clock.waitTimers(t, 1)
	reg := d.Registry()
	if st := d.Status(); !st.Next.Equal(epoch.Add(time.Hour)) || !st.ConfigLoaded.Equal(epoch) || st.LastReload != nil {
		t.Fatalf("at start: next %s, loaded %s, last reload %+v", st.Next, st.ConfigLoaded, st.LastReload)
	}
	if got := metric(t, reg, "tqscavenger_config_loaded_timestamp_seconds"); got != float64(epoch.Unix()) {
		t.Errorf("config_loaded_timestamp_seconds = %v, want %d", got, epoch.Unix())
	}

	clock.Advance(10 * time.Minute)
	reloaded := epoch.Add(10 * time.Minute)
	err := d.Reconfigure(daemon.Reconfig{Schedule: mustEvery(t, 5*time.Minute),
		Settings: []daemon.Setting{{Name: "every", Value: "5m", Source: "file"}}})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the next pass planned on the new schedule", func() bool { return d.Status().Next.Equal(reloaded.Add(5 * time.Minute)) })
	st := d.Status()
	if !st.ConfigLoaded.Equal(reloaded) || st.LastReload == nil || st.LastReload.Result != daemon.ReloadApplied || !strings.Contains(st.Schedule, "5m") {
		t.Errorf("after the reload: loaded %s, last %+v, schedule %s", st.ConfigLoaded, st.LastReload, st.Schedule)
	}
	if len(st.Settings) != 1 || st.Settings[0].Value != "5m" {
		t.Errorf("settings on the status page: %+v", st.Settings)
	}

	// Refused: a grace under the floor, and one the command refused.
	if err := d.Reconfigure(daemon.Reconfig{Schedule: mustEvery(t, time.Minute), Scavenger: scavenger.Config{Rules: scavenger.Rules{Grace: time.Hour}}}); err == nil {
		t.Error("a reload with a 1h grace was applied")
	}
	d.ReloadRefused(daemon.ReloadNeedsRestart, errString("--db changed"))
	st = d.Status()
	if !st.Next.Equal(reloaded.Add(5*time.Minute)) || !st.ConfigLoaded.Equal(reloaded) || st.Settings[0].Value != "5m" {
		t.Errorf("a refused reload changed the settings: next %s, loaded %s, %+v", st.Next, st.ConfigLoaded, st.Settings)
	}
	if st.LastReload.Result != daemon.ReloadNeedsRestart || st.LastReload.Err != "--db changed" {
		t.Errorf("last reload %+v", st.LastReload)
	}
	for result, want := range map[string]float64{daemon.ReloadApplied: 1, daemon.ReloadInvalid: 1, daemon.ReloadNeedsRestart: 1} {
		if got := metric(t, reg, "tqscavenger_config_reloads_total", "result", result); got != want {
			t.Errorf("config_reloads_total{%s} = %v, want %v", result, got, want)
		}
	}
	if got := metric(t, reg, "tqscavenger_config_loaded_timestamp_seconds"); got != float64(reloaded.Unix()) {
		t.Errorf("config_loaded_timestamp_seconds = %v, want %d", got, reloaded.Unix())
	}
	// The pass runs on the new schedule.
	clock.Advance(5 * time.Minute)
	clock.waitTimers(t, 1)
	if ps := d.Passes(); len(ps) != 1 || !ps[0].Start.Equal(reloaded.Add(5*time.Minute)) {
		t.Errorf("passes: %+v", ps)
	}
}

type errString string

func (e errString) Error() string { return string(e) }
