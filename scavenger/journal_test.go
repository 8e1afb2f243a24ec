package scavenger

import (
	"testing"
	"time"
)

func TestForJournal(t *testing.T) {
	cases := []struct {
		name      string
		cfg       Config
		mode      string
		wantBatch int
		wantSlow  time.Duration
	}{
		{"rollback journal", Config{}, "delete", RollbackTaskBatchSize, RollbackSlowStatement},
		{"truncate is a rollback journal too", Config{}, "truncate", RollbackTaskBatchSize, RollbackSlowStatement},
		{"WAL keeps the defaults", Config{}, "wal", 0, 0},
		{"other engines keep the defaults", Config{}, "", 0, 0},
		{"the caller's values stay", Config{TaskBatchSize: 300, SlowStatement: time.Second}, "delete", 300, time.Second},
		{"within tasks per job", Config{TasksPerJob: 2000}, "delete", 2000, RollbackSlowStatement},
		{"Temporal's knob values stay", Config{Compat: CompatTemporal}, "delete", 0, 0},
	}
	for _, c := range cases {
		got := c.cfg.ForJournal(c.mode)
		if got.TaskBatchSize != c.wantBatch || got.SlowStatement != c.wantSlow {
			t.Errorf("%s: batch %d slow %s, want %d %s", c.name, got.TaskBatchSize, got.SlowStatement, c.wantBatch, c.wantSlow)
		}
		if err := got.Validate(); err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
	}
}
