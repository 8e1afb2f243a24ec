package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tqscavenger/tqscavenger/sqlstore"
)

// The database cost of a pass: what the server spent on it, measured
// from outside while it runs beside the live-load workload.
//
// startCost starts a costSampler on the database a pass works on; its
// stop returns a Cost for the span between the two. The sampler ticks in a
// goroutine of its own (every costInterval on PostgreSQL and MariaDB,
// every sqliteInterval on SQLite), and stop ends it within a second.
//
// The pass's server sessions are told from the workload's and anyone
// else's by passIdent: the client ports of its processes' TCP connections
// (PostgreSQL's pg_stat_activity.client_port, MariaDB's PROCESSLIST.HOST),
// or on PostgreSQL an application_name of its own. Nothing of the pass is
// changed to be measured.
//
// Every figure is a pointer: nil when it could not be measured here (no
// privilege, the server's processes not readable, an engine without it),
// with the reason in Cost.Why. A sampler never fails a pass.

// Cost is what the database spent between a costSampler's start and stop.
// A nil figure is unavailable: Why says why, where it applies to the
// engine (see each field for the engines that have it).
type Cost struct {
	Engine sqlstore.Engine
	// Span is the time from startCost's call to stop's.
	Span time.Duration
	// Samples is how many ticks the sampler took, Interval the time it
	// aimed to leave between them.
	Samples  int
	Interval time.Duration
	// FailedSamples is how many ticks' statements failed (a timeout under
	// load, say): the sampled figures miss their stretch. Past half of
	// the ticks, those figures are unavailable.
	FailedSamples int

	// PassCPU (PostgreSQL, MariaDB) is the CPU time, user plus system in
	// seconds, of what served the pass's sessions: PostgreSQL's backend
	// processes (/proc/PID/stat), MariaDB's connection threads
	// (/proc/SERVER/task/TID/stat, TID from PROCESSLIST). Each is read at
	// every tick and counts its last value less its value at the start
	// (0 for a backend or thread started within the span): the work of a
	// session between its last tick and its end is missed, one interval
	// at most. Resolution: 10 ms per process or thread.
	PassCPU *float64
	// PassSessions is how many pass sessions the sampler saw.
	PassSessions int
	// ServerCPU (PostgreSQL, MariaDB) is the whole server's CPU time over
	// the span, seconds: PostgreSQL's postmaster with every process it
	// started (those that ended by the postmaster's cutime and cstime),
	// MariaDB's mariadbd with all its threads. It holds the workload's,
	// the background's (autovacuum, checkpoints, InnoDB's purge, which a
	// pass's deletes feed) and the sampler's own: compare it with a span
	// without a pass, as a rate (ServerCPU / Span).
	ServerCPU *float64
	// WALBytes (PostgreSQL, MariaDB) is the server's log written over the
	// span, bytes: PostgreSQL's WAL (pg_current_wal_insert_lsn()'s
	// advance), MariaDB's InnoDB redo log (Innodb_os_log_written's).
	// Server-wide, the workload's too, like ServerCPU.
	WALBytes *int64
	// BlockedSeconds (PostgreSQL, MariaDB) is the time other sessions
	// spent waiting for a lock a pass session held, in seconds, sampled:
	// at each tick every non-pass session waiting on a lock (PostgreSQL:
	// wait_event_type Lock, with a pass backend among pg_blocking_pids;
	// MariaDB: INNODB_LOCK_WAITS, with a pass connection's transaction
	// among the blocking ones) adds the time since the previous tick.
	// Heavyweight and row locks only: not PostgreSQL's LWLocks, not
	// MariaDB's metadata locks. BlockedInterval is the time between two
	// looks: Interval on PostgreSQL, myWaitsInterval on MariaDB.
	BlockedSeconds  *float64
	BlockedInterval time.Duration
	// BlockedSessions is how many distinct sessions were seen so blocked.
	BlockedSessions int
	// PassBlockedSeconds (PostgreSQL, MariaDB) is the same for the pass
	// sessions waiting on a lock anyone else held, sampled alike.
	PassBlockedSeconds *float64
	// RunDelay (PostgreSQL, MariaDB) is the time the server's processes
	// (PostgreSQL) or threads (MariaDB) spent runnable, waiting for a CPU,
	// over the span, seconds (/proc/…/schedstat's run delay): those that
	// lived through the whole span, less the pass's (its backends, its
	// connection threads). The workload's sessions and the server's
	// background are among them: compare it with a span without a pass,
	// as ServerCPU. Where the server's CPU is the contended resource, a
	// pass shows here as the workload's statements queue for a CPU.
	RunDelay *float64
	// Waits (PostgreSQL) is the time the sessions other than the pass's
	// spent active, sampled (each tick adds the time since the last to
	// each active session's class), by what pg_stat_activity said they
	// waited on: "CPU" (no wait event: running or waiting for a CPU),
	// "WAL", "Lock", "LWLock", "IO", "other" (waitClass), seconds.
	Waits map[string]float64
	// WriteLockSeconds (SQLite) is the time the pass held the database's
	// write lock, seconds, sampled: each tick that finds a process of the
	// pass holding it in /proc/locks (WAL mode: byte 120 of the -shm
	// file, WAL_WRITE_LOCK; rollback journal: the main file's RESERVED
	// byte) adds the time since the previous tick. WriteLockShare divides
	// it by Span.
	WriteLockSeconds *float64
	// WorkloadBusyCommits (SQLite) is the workload's commits that failed
	// or were retried on SQLITE_BUSY during the span. The workload counts
	// them; the caller sets it (nil: not counted).
	WorkloadBusyCommits *int64
	// Why maps a field's name ("PassCPU", …) to why it is nil.
	Why map[string]string
}

// WriteLockShare is the share of the span the pass held SQLite's write
// lock, 0 to 1; ok is false when it was not measured.
func (c Cost) WriteLockShare() (share float64, ok bool) {
	if c.WriteLockSeconds == nil || c.Span <= 0 {
		return 0, false
	}
	return min(*c.WriteLockSeconds/c.Span.Seconds(), 1), true
}

// unavailable records why figure (a field's name) is nil; the first reason
// is kept.
func (c *Cost) unavailable(figure string, why error) {
	if c.Why == nil {
		c.Why = map[string]string{}
	}
	if _, ok := c.Why[figure]; !ok {
		c.Why[figure] = why.Error()
	}
}

// passIdent says which processes are the pass's, and so which server
// sessions: those whose client TCP port is one of theirs, or on
// PostgreSQL those of AppName. The zero passIdent is no one.
type passIdent struct {
	// Exe names the pass's executable: its processes are those among
	// this process's descendants that run it (the lab starts the pass
	// through `lab measure`), with their own descendants.
	Exe string
	// Pids are processes of the pass, with their descendants.
	Pids []int
	// AppName (PostgreSQL): sessions of this application_name are the
	// pass's wherever they connect from (a Unix socket too). The lab sets
	// it in the pass's DSN (?application_name=…).
	AppName string
}

// procs returns the pass's processes now.
func (id passIdent) procs() (map[int]bool, error) {
	set := map[int]bool{}
	if id.Exe == "" && len(id.Pids) == 0 {
		return set, nil
	}
	parents, err := procParents()
	if err != nil {
		return nil, err
	}
	add := func(pid int) {
		set[pid] = true
		for _, d := range descendants(parents, pid) {
			set[d] = true
		}
	}
	for _, pid := range id.Pids {
		add(pid)
	}
	if id.Exe != "" {
		exe := samePath(id.Exe)
		for _, pid := range descendants(parents, os.Getpid()) {
			if p, err := exePath(pid); err == nil && p == exe {
				add(pid)
			}
		}
	}
	return set, nil
}

// ports returns the local TCP ports of the pass's processes: the client
// ports of its sessions.
func (id passIdent) ports() (map[int]bool, error) {
	procs, err := id.procs()
	if err != nil {
		return nil, err
	}
	ports := map[int]bool{}
	var errs []error
	for pid := range procs {
		ps, err := tcpPorts(pid)
		if err != nil {
			if _, gone := os.Stat("/proc/" + fmt.Sprint(pid)); gone != nil {
				continue // it ended since
			}
			errs = append(errs, err)
			continue
		}
		for p := range ps {
			ports[p] = true
		}
	}
	return ports, errors.Join(errs...)
}

// The sampler's ticks and bounds.
const (
	// costInterval is the tick on PostgreSQL and MariaDB: blocked time is
	// sampled at it, CPU read at it.
	costInterval = 25 * time.Millisecond
	// sqliteInterval is the tick on SQLite: a write lock is held for a
	// transaction of a few milliseconds. Reading /proc/locks at it costs
	// the sampler 3.5% of a core (8.8% at 2 ms).
	sqliteInterval = 5 * time.Millisecond
	// tickTimeout bounds one tick's statements.
	tickTimeout = 300 * time.Millisecond
	// stopWait is how long stop lets the tick in flight finish before it
	// cancels it; finalTimeout bounds the figures read at the end.
	// stop takes stopWait and finalTimeout at most, when the server has
	// stopped answering.
	stopWait     = 350 * time.Millisecond
	finalTimeout = 350 * time.Millisecond
)

// costProbe is one engine's side of a costSampler.
type costProbe interface {
	// tick takes one sample, dt after the previous (or the start), and
	// returns how many sessions it saw waiting on a lock: -1 when it did
	// not look.
	tick(ctx context.Context, dt time.Duration) (waiting int)
	// finish reads the figures at the end into c and releases what the
	// probe holds.
	finish(ctx context.Context, c *Cost)
}

// costSampler measures a pass's cost between startCost and stop.
type costSampler struct {
	probe    costProbe
	cost     Cost // what start found unavailable; the rest at stop
	interval time.Duration
	start    time.Time
	// last is the time of the last tick: run's until done is closed.
	last   time.Time
	cancel context.CancelFunc
	quit   chan struct{} // closed by stop
	done   chan struct{} // closed when the ticks end
	ticks  atomic.Int64
	// waiting is how many sessions the last look at lock waits saw
	// waiting, -1 before one (for the tests).
	waiting  atomic.Int64
	stopOnce sync.Once
}

// startCost starts measuring what the database at adminDSN spends on the
// pass that id names: a PostgreSQL or MySQL DSN with the privileges to
// read every session (PostgreSQL: superuser or pg_read_all_stats;
// MariaDB: PROCESS), or the SQLite file the pass works on. The error is
// for a DSN that is not of engine only: a server that cannot be reached,
// a privilege missing or /proc unreadable make figures unavailable in the
// Cost that stop returns.
func startCost(ctx context.Context, engine sqlstore.Engine, adminDSN string, id passIdent) (*costSampler, error) {
	d, err := sqlstore.ParseDSN(adminDSN)
	if err != nil {
		return nil, err
	}
	if d.Engine != engine {
		return nil, fmt.Errorf("bench: cost: %s is a %s DSN, not %s", d, d.Engine, engine)
	}
	// The span starts before the probe reads its first figures (the
	// server's CPU, its log's position), so that they fall within it.
	s := &costSampler{cost: Cost{Engine: engine}, start: time.Now(), quit: make(chan struct{}), done: make(chan struct{})}
	switch engine {
	case sqlstore.Postgres:
		s.interval = costInterval
		s.probe = startPostgresCost(ctx, d, id, &s.cost)
	case sqlstore.MySQL:
		s.interval = costInterval
		s.probe = startMySQLCost(ctx, d, id, &s.cost)
	case sqlstore.SQLite:
		s.interval = sqliteInterval
		s.probe = startSQLiteCost(d.Path, id, &s.cost)
	default:
		return nil, fmt.Errorf("bench: cost: unknown engine %q", engine)
	}
	s.cost.Interval = s.interval
	s.waiting.Store(-1)
	tctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s.cancel = cancel
	go s.run(tctx)
	return s, nil
}

// run ticks until stop.
func (s *costSampler) run(ctx context.Context) {
	defer close(s.done)
	t := time.NewTicker(s.interval)
	defer t.Stop()
	s.last = s.start
	for {
		select {
		case <-s.quit:
			return
		case <-t.C:
		}
		now := time.Now()
		tctx, cancel := context.WithTimeout(ctx, tickTimeout)
		if w := s.probe.tick(tctx, now.Sub(s.last)); w >= 0 {
			s.waiting.Store(int64(w))
		}
		cancel()
		s.last = now
		s.ticks.Add(1)
	}
}

// stop ends the sampling and returns the cost of the span since start.
// It returns within a second, having ended every goroutine of the
// sampler. Figures that could not be measured are nil in the Cost (see
// Cost.Why), never an error: the error is for a second call only.
func (s *costSampler) stop() (Cost, error) {
	first := false
	s.stopOnce.Do(func() { first = true })
	if !first {
		return Cost{}, errors.New("bench: cost: stop called twice")
	}
	close(s.quit)
	select {
	case <-s.done:
	case <-time.After(stopWait):
		s.cancel() // a tick stuck on the server: end its statement
		<-s.done
	}
	s.cancel()
	ctx, cancel := context.WithTimeout(context.Background(), finalTimeout)
	defer cancel()
	// A last tick: the pass's processes' CPU as late as it can be read.
	now := time.Now()
	s.probe.tick(ctx, now.Sub(s.last))
	c := s.cost
	c.Span = now.Sub(s.start)
	c.Samples = int(s.ticks.Load()) + 1
	s.probe.finish(ctx, &c)
	return c, nil
}

// cpuTracker sums the CPU time of processes or threads while they serve
// the pass, from stat files read at each tick.
type cpuTracker struct {
	// since is the span's start, in ticks since boot: a process that
	// started after it counts from 0.
	since int64
	// seen holds each key's value when first read and its last.
	seen map[cpuKey]*cpuSpan
}

// cpuKey names a process or thread (and its start, against pid reuse)
// serving one session.
type cpuKey struct {
	session string
	pid     int
	start   int64
}

type cpuSpan struct{ first, last int64 }

func newCPUTracker() (*cpuTracker, error) {
	up, err := uptimeTicks()
	if err != nil {
		return nil, err
	}
	return &cpuTracker{since: up, seen: map[cpuKey]*cpuSpan{}}, nil
}

// read reads the stat file at path of the process or thread pid serving
// session. It counts from 0 if it started after the span's start and has
// served no other session; else from its first reading. A file that
// cannot be read (the process ended) is skipped.
func (t *cpuTracker) read(session string, pid int, path string) {
	st, err := readProcStat(path)
	if err != nil {
		return
	}
	k := cpuKey{session, pid, st.start}
	sp := t.seen[k]
	if sp == nil {
		sp = &cpuSpan{first: st.cpu()}
		if st.start >= t.since && !t.servedOther(k) {
			sp.first = 0
		}
		t.seen[k] = sp
	}
	sp.last = st.cpu()
}

// servedOther reports whether k's process or thread was seen serving
// another session (a MariaDB thread from its cache).
func (t *cpuTracker) servedOther(k cpuKey) bool {
	for o := range t.seen {
		if o.pid == k.pid && o.start == k.start && o.session != k.session {
			return true
		}
	}
	return false
}

// seconds is the CPU time counted, seconds.
func (t *cpuTracker) seconds() float64 {
	var ticks int64
	for _, sp := range t.seen {
		ticks += max(sp.last-sp.first, 0)
	}
	return float64(ticks) / clockTicks
}

// blockTally sums sampled lock waits.
type blockTally struct {
	seconds, passSeconds float64
	blocked              map[string]bool
}

// add counts one tick's waits, dt after the previous: byPass are the
// sessions waiting on a pass session, passWaiting how many of the pass's
// own sessions wait on another's.
func (b *blockTally) add(dt time.Duration, byPass []string, passWaiting int) {
	if b.blocked == nil {
		b.blocked = map[string]bool{}
	}
	for _, w := range byPass {
		b.seconds += dt.Seconds()
		b.blocked[w] = true
	}
	b.passSeconds += float64(passWaiting) * dt.Seconds()
}
