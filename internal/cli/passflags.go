package cli

// The flags of a pass, shared by run, serve, config and schedule create
// and update: what they register, and the scavenger.Config they make.

import (
	"time"

	"github.com/tqscavenger/tqscavenger/scavenger"
	"github.com/tqscavenger/tqscavenger/sqlstore"
	"github.com/tqscavenger/tqscavenger/store"
)

// scavengeFlags are the flags that make a scavenger.Config, shared by run
// and serve.
type scavengeFlags struct {
	// knobs holds the pace settings a row binds directly to their field
	// of scavenger.Pace (the workers, batch sizes, rate limits, retries):
	// pace() takes them as they are.
	knobs scavenger.Pace

	compat          string
	dryRun          bool
	now             string
	grace           time.Duration
	unsafe          bool
	protect         multiFlag
	tables          string
	stmtTO          time.Duration
	maxConns        int
	paceMode        string
	temporalMetrics multiFlag

	pastLiveHead  bool
	closed        closedFlags
	belowAckLevel bool
	orphans       string
	namespaces    multiFlag
	queueGlob     string
	partition     string
}

// maxClockSkew is how far --now may be ahead of the real clock.
const maxClockSkew = time.Minute

// register registers the flags of a pass (passSettings) in their help
// groups.
func (f *scavengeFlags) register(g *flagGroups) {
	for _, s := range passSettings {
		fs := g.Scope
		if s.group == groupPace {
			fs = g.Pace
		}
		s.register(fs, f)
	}
}

// writeTxBudget is the shared write transaction's bound on a
// rollback-journal SQLite file (sqlstore.Options.WriteTxBudget), used only
// by passes at the full pace: the bound measured in docs/benchmarks.md.
const writeTxBudget = 100 * time.Millisecond

// config returns the pass's config the flags make, or a usage error: its
// parts each built in one place, the Rules (what is deleted: rules), the
// partition, the clock and the Pace.
func (f *scavengeFlags) config() (scavenger.Config, error) {
	var c scavenger.Config
	if err := f.checkNumbers(); err != nil {
		return c, err
	}
	var err error
	if c.Rules, err = f.rules(); err != nil {
		return c, err
	}
	if c.Partition, err = f.partitionOf(); err != nil {
		return c, err
	}
	if c.Now, err = f.clock(); err != nil {
		return c, err
	}
	if c.Pace, err = f.pace(); err != nil {
		return c, err
	}
	if err := c.Validate(); err != nil {
		return c, usageError{err}
	}
	return c, nil
}

// checkNumbers refuses negative counts, rates and durations: the flags'
// values as a caller of config set them, which checkRanges has not seen
// (it checks the flag set after its layers).
func (f *scavengeFlags) checkNumbers() error {
	for _, s := range passSettings {
		switch v := s.bind(f).(type) {
		case *int:
			if *v < 0 {
				return usagef("--%s %d: must be positive (or 0 for the default)", s.flag, *v)
			}
		case *float64:
			if *v < 0 {
				return usagef("--%s %g: must not be negative", s.flag, *v)
			}
		case *time.Duration:
			if *v < 0 {
				return usagef("--%s %s: must not be negative", s.flag, *v)
			}
		}
	}
	return nil
}

// rules returns the Rules the flags make: everything that decides what
// a pass deletes (the mode, the grace, the protected prefixes, the
// opt-in rules, the orphan policy, dry run) and which rows it looks at
// (the tables, the namespaces, the queue glob). It is the one place the
// command builds a scavenger.Rules: run, serve and a schedule's pass
// description all take theirs from it.
func (f *scavengeFlags) rules() (scavenger.Rules, error) {
	var r scavenger.Rules
	switch f.compat {
	case "", "none", "tqscavenger":
	case "temporal":
		r.Compat = scavenger.CompatTemporal
	default:
		return r, usagef("--compat %q: use \"temporal\" or leave it out", f.compat)
	}
	r.Grace, r.UnsafeShortGrace, r.DryRun = f.grace, f.unsafe, f.dryRun
	r.PastLiveHead, r.BelowAckLevel, r.QueueGlob = f.pastLiveHead, f.belowAckLevel, f.queueGlob
	r.ProtectedPrefixes = f.protected()
	switch scavenger.OrphanPolicy(f.orphans) {
	case scavenger.OrphansExpired, scavenger.OrphansAll, scavenger.OrphansNone:
		r.Orphans = scavenger.OrphanPolicy(f.orphans)
	default:
		return r, usagef("--orphans %q: use expired, all or none", f.orphans)
	}
	if r.Compat == scavenger.CompatTemporal && (r.PastLiveHead || r.BelowAckLevel || f.orphans == string(scavenger.OrphansAll)) {
		return r, usagef("--past-live-head, --below-ack-level and --orphans=all are tqscavenger's rules: leave out --compat=temporal to use them")
	}
	var err error
	if r.Tables, err = tablesOf(f.tables); err != nil {
		return r, err
	}
	if err := namespaceScope(&r, f.namespaces.vals); err != nil {
		return r, err
	}
	return r, f.closed.apply(&r)
}

// protected returns --protect's prefixes: nil (the default list) unless
// it is given; "none" protects nothing.
func (f *scavengeFlags) protected() []string {
	if !f.protect.set {
		return nil
	}
	out := []string{}
	for _, p := range f.protect.vals {
		if p != "none" {
			out = append(out, p)
		}
	}
	return out
}

// tablesOf returns --tables' table versions: nil for all present.
func tablesOf(v string) ([]store.Table, error) {
	switch v {
	case "", "all":
		return nil, nil
	case "v1":
		return []store.Table{store.V1}, nil
	case "v2":
		return []store.Table{store.V2}, nil
	}
	return nil, usagef("--tables %q: use v1, v2 or all", v)
}

// clock returns the pretend clock of --now, never ahead of the real one;
// nil without --now.
func (f *scavengeFlags) clock() (func() time.Time, error) {
	if f.now == "" {
		return nil, nil
	}
	t, err := time.Parse(time.RFC3339Nano, f.now)
	if err != nil {
		return nil, usagef("--now %q: use RFC 3339, e.g. 2026-11-30T12:00:00Z", f.now)
	}
	// A time ahead makes tasks that are not expired look expired.
	if real := time.Now(); t.After(real.Add(maxClockSkew)) {
		return nil, usagef("--now %s is %s ahead of the clock: a pretend time in the future would delete tasks that have not expired", f.now, t.Sub(real).Round(time.Second))
	}
	return func() time.Time { return t }, nil
}

// partitionOf returns the part of the range_hash space of --partition
// (the whole space without it).
func (f *scavengeFlags) partitionOf() (scavenger.Partition, error) {
	if f.partition == "" {
		return scavenger.Partition{}, nil
	}
	p, err := scavenger.ParsePartition(f.partition)
	if err != nil {
		return p, usagef("--partition: %v", err)
	}
	return p, nil
}

// pace returns how fast a pass goes: workers, batch sizes, limits,
// retries, the pace mode.
func (f *scavengeFlags) pace() (scavenger.Pace, error) {
	p := f.knobs
	mode, err := scavenger.ParsePaceMode(f.paceMode)
	if err != nil {
		return p, usagef("--pace: %v", err)
	}
	if p.YieldToLoad && mode == scavenger.PaceFull {
		return p, usagef("--yield-to-load (deprecated) asks for the gentle pace: it cannot go with --pace full")
	}
	p.Mode = mode
	p.TemporalMetrics = f.temporalMetrics.vals
	return p, nil
}

func (f *scavengeFlags) storeOptions() sqlstore.Options {
	// A pass shares commits only at the full pace (scavenger.PaceFull
	// turns group commit on, per pass): the budget makes it possible.
	return sqlstore.Options{StatementTimeout: f.stmtTO, MaxConns: f.maxConns, WriteTxBudget: writeTxBudget}
}
