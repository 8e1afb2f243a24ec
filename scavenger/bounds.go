package scavenger

// The ranges of Config's numbers: each knob has a cap, so that no value
// can make a pass take unbounded memory or time (a worker is a goroutine
// and a slot, a batch is rows held at once, a rate a wait computed from
// it), and a number that is not one (NaN, ±Inf) or is negative is refused
// rather than taken for "the default" or "unlimited".

import (
	"fmt"
	"math"
)

// The caps of Config's knobs. Each is far above any useful setting: the
// database, not the scavenger, is the bottleneck well before them.
const (
	MaxWorkers       = 1024
	MaxListPageSize  = 100_000
	MaxTaskBatchSize = 100_000
	MaxTasksPerJob   = 100_000_000
	MaxMaxDeferred   = 10_000_000
	// MaxRate caps MaxDeletesPerSecond and MaxStatementsPerSecond; 0
	// stays "unlimited".
	MaxRate = 1e9
	// MinRate is the lowest rate that is not 0: one every 1000 s. Below
	// it a pass would wait for years between statements.
	MinRate = 0.001
	// MaxYieldFactor caps YieldFactor.
	MaxYieldFactor = 1000
)

// checkRanges refuses a knob out of its range: negative, not a number,
// or over its cap. Zero always means the knob's default (or unlimited).
func (c Config) checkRanges() error {
	for _, k := range []struct {
		name   string
		v, max int
	}{
		{"workers", c.Workers, MaxWorkers},
		{"list page size", c.ListPageSize, MaxListPageSize},
		{"task batch size", c.TaskBatchSize, MaxTaskBatchSize},
		{"tasks per job", c.TasksPerJob, MaxTasksPerJob},
		{"max deferred", c.MaxDeferred, MaxMaxDeferred},
	} {
		if k.v < 0 || k.v > k.max {
			return fmt.Errorf("%s %d: use 1 to %d (or 0 for the default)", k.name, k.v, k.max)
		}
	}
	for _, k := range []struct {
		name        string
		v, min, max float64
		zero        string
	}{
		{"max deletes per second", c.MaxDeletesPerSecond, MinRate, MaxRate, "unlimited"},
		{"max statements per second", c.MaxStatementsPerSecond, MinRate, MaxRate, "unlimited"},
		{"yield factor", c.YieldFactor, 1, MaxYieldFactor, "the default"},
	} {
		if math.IsNaN(k.v) || math.IsInf(k.v, 0) || k.v < 0 || (k.v > 0 && k.v < k.min) || k.v > k.max {
			return fmt.Errorf("%s %g: use a number from %g to %g (or 0: %s)", k.name, k.v, k.min, k.max, k.zero)
		}
	}
	for _, k := range []struct {
		name string
		v    int64
	}{
		{"slow statement", int64(c.SlowStatement)}, {"retry initial", int64(c.RetryInitial)}, {"retry max", int64(c.RetryMax)},
		{"lock check interval", int64(c.LockCheckInterval)}, {"lock check timeout", int64(c.LockCheckTimeout)},
		{"checkpoint interval", int64(c.CheckpointInterval)},
	} {
		if k.v < 0 {
			return fmt.Errorf("%s must not be negative", k.name)
		}
	}
	return nil
}
