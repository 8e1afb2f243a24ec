package scavenger_test

import (
	"math"
	"testing"

	"github.com/tqscavenger/tqscavenger/scavenger"
)

// TestConfigRanges is issue 25's finding 1 in the library: every knob is
// refused negative, not a number, infinite or over its cap, and 0 keeps
// meaning its default.
func TestConfigRanges(t *testing.T) {
	for _, c := range []struct {
		name string
		cfg  scavenger.Config
		ok   bool
	}{
		{"zero", scavenger.Config{}, true},
		{"caps", scavenger.Config{Pace: scavenger.Pace{Workers: scavenger.MaxWorkers, ListPageSize: scavenger.MaxListPageSize, TaskBatchSize: 1000, TasksPerJob: scavenger.MaxTasksPerJob, MaxDeferred: scavenger.MaxMaxDeferred, MaxDeletesPerSecond: scavenger.MaxRate, MaxStatementsPerSecond: scavenger.MinRate}}, true},
		{"workers over", scavenger.Config{Pace: scavenger.Pace{Workers: 99999999999}}, false},
		{"workers negative", scavenger.Config{Pace: scavenger.Pace{Workers: -1}}, false},
		{"page over", scavenger.Config{Pace: scavenger.Pace{ListPageSize: scavenger.MaxListPageSize + 1}}, false},
		{"batch over", scavenger.Config{Pace: scavenger.Pace{TaskBatchSize: scavenger.MaxTaskBatchSize + 1, TasksPerJob: scavenger.MaxTasksPerJob}}, false},
		{"per job negative", scavenger.Config{Pace: scavenger.Pace{TasksPerJob: -5}}, false},
		{"deferred over", scavenger.Config{Pace: scavenger.Pace{MaxDeferred: scavenger.MaxMaxDeferred + 1}}, false},
		{"deletes NaN", scavenger.Config{Pace: scavenger.Pace{MaxDeletesPerSecond: math.NaN()}}, false},
		{"statements Inf", scavenger.Config{Pace: scavenger.Pace{MaxStatementsPerSecond: math.Inf(1)}}, false},
		{"statements tiny", scavenger.Config{Pace: scavenger.Pace{MaxStatementsPerSecond: 1e-300}}, false},
		{"yield NaN", scavenger.Config{Pace: scavenger.Pace{YieldFactor: math.NaN()}}, false},
		{"yield Inf", scavenger.Config{Pace: scavenger.Pace{YieldFactor: math.Inf(1)}}, false},
		{"slow negative", scavenger.Config{Pace: scavenger.Pace{SlowStatement: -1}}, false},
		{"lock check negative", scavenger.Config{Pace: scavenger.Pace{LockCheckInterval: -1}}, false},
	} {
		err := c.cfg.Validate()
		if (err == nil) != c.ok {
			t.Errorf("%s: Validate() = %v, want ok %v", c.name, err, c.ok)
		}
	}
}
