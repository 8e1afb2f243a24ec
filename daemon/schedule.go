package daemon

import (
	"fmt"
	"time"

	"github.com/robfig/cron/v3"
)

// A Schedule says when passes are due.
type Schedule interface {
	// Next returns the first time after t that a pass is due.
	Next(t time.Time) time.Time
	// String describes the schedule for logs and the status page.
	String() string
}

// Every returns a schedule with a pass every d, counted from the daemon's
// start, like Temporal's own scavenger (every 12 hours).
func Every(d time.Duration) (Schedule, error) {
	if d <= 0 {
		return nil, fmt.Errorf("interval %s: must be positive", d)
	}
	return every(d), nil
}

type every time.Duration

func (e every) Next(t time.Time) time.Time { return t.Add(time.Duration(e)) }
func (e every) String() string             { return "every " + time.Duration(e).String() }

// Cron returns a schedule from a standard five-field cron expression
// ("0 */12 * * *") or a descriptor (@daily, @every 6h). Times are in the
// process's local time zone unless the spec starts with TZ=Zone.
func Cron(spec string) (Schedule, error) {
	s, err := cron.ParseStandard(spec)
	if err != nil {
		return nil, fmt.Errorf("cron %q: %w", spec, err)
	}
	// A spec such as "0 0 30 2 *" parses but never fires; the scheduler
	// would wait forever without saying so.
	if s.Next(time.Now()).IsZero() {
		return nil, fmt.Errorf("cron %q: never fires", spec)
	}
	return cronSchedule{s, spec}, nil
}

type cronSchedule struct {
	s    cron.Schedule
	spec string
}

func (c cronSchedule) Next(t time.Time) time.Time { return c.s.Next(t) }
func (c cronSchedule) String() string             { return "cron " + c.spec }

// Interval estimates the time between two passes of s after t: exact for
// Every, the first gap for a cron schedule. The default jitter is a share
// of it.
func Interval(s Schedule, t time.Time) time.Duration {
	a := s.Next(t)
	b := s.Next(a)
	if a.IsZero() || b.IsZero() {
		return 0
	}
	return b.Sub(a)
}

// Clock is the daemon's source of time. Tests replace it to drive the
// scheduler without waiting.
type Clock interface {
	Now() time.Time
	// NewTimer returns a channel that receives once d has passed, and a
	// function that stops the timer.
	NewTimer(d time.Duration) (c <-chan time.Time, stop func() bool)
}

// realClock is the wall clock.
type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }
func (realClock) NewTimer(d time.Duration) (<-chan time.Time, func() bool) {
	t := time.NewTimer(d)
	return t.C, t.Stop
}
