package scavenger

import (
	"testing"
	"time"
)

// TestTune: Tune changes the limits and the retry budget Config reports,
// and refuses an invalid configuration without changing anything.
func TestTune(t *testing.T) {
	s := New(nil, Config{Pace: Pace{MaxDeletesPerSecond: 5}})
	if err := s.Tune(Config{Rules: Rules{Grace: 72 * time.Hour}, Pace: Pace{MaxDeletesPerSecond: 50, MaxStatementsPerSecond: 7, RetryFor: time.Minute}}); err != nil {
		t.Fatal(err)
	}
	c := s.Config()
	if c.MaxDeletesPerSecond != 50 || c.MaxStatementsPerSecond != 7 || c.RetryFor != time.Minute || c.RetryInitial != TemporalRetryInitial {
		t.Errorf("after Tune: %+v", c)
	}
	if c.Grace != TemporalGrace {
		t.Errorf("Tune changed the grace of the pass to %s", c.Grace)
	}
	if err := s.Tune(Config{Rules: Rules{Grace: time.Hour}, Pace: Pace{MaxDeletesPerSecond: 1}}); err == nil {
		t.Error("Tune took a grace under the floor")
	}
	if s.Config().MaxDeletesPerSecond != 50 {
		t.Errorf("a refused Tune changed the limit to %v", s.Config().MaxDeletesPerSecond)
	}
}
