// Package daemon runs the scavenger as a long-running service, the way
// `tqscavenger serve` does.
//
// A Daemon owns what a service needs beyond one pass: the schedule of
// passes (an interval or a cron expression, with jitter, never two passes
// at once), the database-wide "one scavenger at a time" lock, taken for
// each pass and released after it so that replicas can stand by, the
// Prometheus metrics (live counters read from the running pass), the HTTP
// status page and health endpoints, and the shutdown sequence. What a pass
// deletes is package scavenger's business; flags, configuration files and
// signals are the command's (internal/cli).
package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tqscavenger/tqscavenger/scavenger"
)

// Log messages an operator can grep for. They do not change between
// releases; the details are in the attributes.
const (
	// MsgLockHeld is logged when another replica (or a `tqscavenger run`)
	// holds the lock; this replica tries again at its next scheduled pass.
	MsgLockHeld = "lock held by another tqscavenger, skipping pass"
	// MsgLockError is logged when the lock could not be taken for another
	// reason (the database is unreachable, say); the pass is skipped.
	MsgLockError = "cannot take the lock, skipping pass"
	// MsgNextPass is logged after each pass (and at start) with the time
	// of the next one.
	MsgNextPass = "next pass scheduled"
	// MsgMissed is logged when a pass outlasted its interval; the passes
	// it overlapped are skipped, not run back to back.
	MsgMissed = "pass overran the schedule, skipping missed passes"
	// MsgShuttingDown is logged when the daemon's context ended (SIGTERM,
	// SIGINT); no pass is started after it.
	MsgShuttingDown = "shutting down"
	// MsgDraining is logged when shutdown began during a pass: it takes no
	// new work, and its statements in flight have until the shutdown
	// timeout.
	MsgDraining = "shutting down: pass stops taking new work"
	// MsgShutdownTimeout is logged when statements were still in flight
	// at the shutdown timeout and are being cancelled.
	MsgShutdownTimeout = "shutdown timeout reached, cancelling in-flight statements"
	// MsgSchemaFailed is logged when the schema check before a pass
	// failed.
	MsgSchemaFailed = "schema check failed, pass not run"
)

// The defaults of Config, which serve's flags show.
const (
	DefaultShutdownTimeout = 30 * time.Second
	DefaultHistory         = 20
)

// Setting is one line of the configuration in effect, as shown on the
// status page. Secrets must already be masked.
type Setting struct {
	Name, Value string
	// Source is where the value came from: flag, env, file or default.
	Source string
}

// Build describes the running binary.
type Build struct {
	Version, Revision, GoVersion string
}

// Config configures a Daemon.
type Config struct {
	// DB is the database to scavenge (a *sqlstore.DB): what a pass
	// needs of it, and the schema check of the status page. Required.
	DB scavenger.PassDB
	// Scavenger configures every pass. Its Logger is replaced by the
	// daemon's, with the pass number added. Nil Tables means the tables
	// the schema check finds before each pass, so tables created by a
	// Temporal upgrade are picked up without a restart.
	Scavenger scavenger.Config
	// Schedule says when passes are due. Required.
	Schedule Schedule
	// Jitter is the largest random delay added to each scheduled pass, so
	// that replicas, and databases scavenged on the same schedule, do not
	// start together. 0 adds none.
	Jitter time.Duration
	// RunAtStart runs the first pass at once instead of at the first
	// scheduled time.
	RunAtStart bool
	// ShutdownTimeout is how long the statements in flight when shutdown
	// begins may run before they are cancelled. Default
	// DefaultShutdownTimeout, 30s.
	ShutdownTimeout time.Duration
	// ReadyTimeout bounds the answer of /readyz: a schema check that
	// has not answered by then is a 503, whatever the database does.
	// Default DefaultReadyTimeout, 5s.
	ReadyTimeout time.Duration
	// History is how many passes the status page lists. Default
	// DefaultHistory, 20.
	History int
	// DSN is the database's name with its password masked, for the
	// status page.
	DSN string
	// Settings is the configuration in effect, for the status page.
	Settings []Setting
	// Build is the running binary's version, for the status page and the
	// tqscavenger_build_info metric.
	Build Build
	// Logger receives the daemon's and the passes' logs. Default
	// slog.Default().
	Logger *slog.Logger
	// Clock is the source of time for the schedule. Default the wall
	// clock.
	Clock Clock
	// Rand returns a random number in [0, n) for the jitter. Default
	// math/rand/v2.Int64N.
	Rand func(n int64) int64
}

// State is what the daemon is doing.
type State string

// The states of a daemon.
const (
	Starting State = "starting"
	Idle     State = "idle"
	Running  State = "running"
	Stopping State = "stopping"
	Stopped  State = "stopped"
)

// Daemon schedules passes over one database. Create it with New, start it
// with Run or Serve.
type Daemon struct {
	cfg     Config
	log     *slog.Logger
	clock   Clock
	created time.Time
	reg     *prometheus.Registry
	ready   readiness // the /readyz check in flight, under its own lock
	// est follows the running pass for the status page's time left,
	// under its own lock (each view of the page updates it).
	estMu sync.Mutex
	est   scavenger.Estimator

	mu        sync.Mutex
	state     State
	current   *scavenger.Scavenger // the running pass, or nil
	currentID int64
	currentAt time.Time
	next      time.Time // the next pass, zero when none is scheduled
	lastID    int64
	passes    []PassRecord // newest last, at most cfg.History
	totals    totals       // counts of finished passes
	lastRun   *PassRecord  // the last pass that ran (not skipped)
	lastOK    *PassRecord  // the last completed pass
	lastDryOK *PassRecord  // the last completed dry run
	// failedByCause counts failed passes by failureCause.
	failedByCause map[string]int64

	// lock follows the lock while another instance holds it.
	lock lockWatch

	// loaded is when the configuration in effect was loaded: at New, or
	// at the last applied reload. schedVersion counts the schedules, so
	// that Run plans again after a reload; replan wakes it.
	loaded       time.Time
	schedVersion int64
	reloads      map[string]int64
	lastReload   *ReloadRecord
	replan       chan struct{}
}

// New returns a daemon for cfg.
func New(cfg Config) (*Daemon, error) {
	if cfg.DB == nil {
		return nil, errors.New("daemon: no database")
	}
	if cfg.Schedule == nil {
		return nil, errors.New("daemon: no schedule")
	}
	if cfg.Jitter < 0 {
		return nil, fmt.Errorf("daemon: negative jitter %s", cfg.Jitter)
	}
	if err := cfg.Scavenger.Validate(); err != nil {
		return nil, fmt.Errorf("daemon: %w", err)
	}
	if cfg.ShutdownTimeout <= 0 {
		cfg.ShutdownTimeout = DefaultShutdownTimeout
	}
	if cfg.ReadyTimeout <= 0 {
		cfg.ReadyTimeout = DefaultReadyTimeout
	}
	if cfg.History <= 0 {
		cfg.History = DefaultHistory
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Clock == nil {
		cfg.Clock = realClock{}
	}
	if cfg.Rand == nil {
		cfg.Rand = rand.Int64N
	}
	d := &Daemon{cfg: cfg, log: cfg.Logger, clock: cfg.Clock, state: Starting, totals: newTotals(),
		reloads: map[string]int64{}, replan: make(chan struct{}, 1), failedByCause: map[string]int64{}}
	d.created = d.clock.Now()
	d.loaded = d.created
	d.reg = newRegistry(d)
	return d, nil
}

// Serve runs the daemon (see Run) and serves Handler on ln while it runs.
// The HTTP server stays up until the last pass has stopped, so a final
// scrape sees it, and is shut down before Serve returns. A failure of the
// HTTP server stops the daemon too.
func (d *Daemon) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{
		Handler:           d.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(d.log.Handler(), slog.LevelWarn),
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	served := make(chan error, 1)
	go func() {
		err := srv.Serve(ln)
		if !errors.Is(err, http.ErrServerClosed) {
			cancel()
		}
		served <- err
	}()
	runErr := d.Run(ctx)
	sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer scancel()
	shutErr := srv.Shutdown(sctx)
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("http server on %s: %w", ln.Addr(), err)
	}
	if shutErr != nil {
		return errors.Join(runErr, fmt.Errorf("http server shutdown: %w", shutErr))
	}
	return runErr
}

// Run schedules passes until ctx ends, then stops: a running pass takes no
// new work, its in-flight statements may finish within the shutdown
// timeout, and the lock is released. Run returns nil after a clean stop.
func (d *Daemon) Run(ctx context.Context) error {
	sched, version := d.schedule()
	now := d.clock.Now()
	planned, fire := now, now
	if !d.cfg.RunAtStart {
		planned = sched.Next(now)
		fire = planned.Add(d.jitter())
	}
	defer d.setState(Stopped, time.Time{})
	for {
		d.setState(Idle, fire)
		d.log.Info(MsgNextPass, "at", fire, "in", fire.Sub(d.clock.Now()).Round(time.Millisecond))
		c, stop := d.clock.NewTimer(fire.Sub(d.clock.Now()))
		select {
		case <-ctx.Done():
			stop()
			d.log.Info(MsgShuttingDown)
			return nil
		case <-d.replan:
			stop()
			if s, v := d.schedule(); v != version {
				// A reload: plan the next pass on its schedule, from now.
				sched, version = s, v
				if planned = sched.Next(d.clock.Now()); planned.IsZero() {
					return errors.New("daemon: the schedule has no next pass")
				}
				fire = planned.Add(d.jitter())
			}
			continue
		case <-c:
		}
		d.pass(ctx)
		if ctx.Err() != nil {
			return nil
		}
		now = d.clock.Now()
		if s, v := d.schedule(); v != version {
			// Reloaded during the pass: its schedule from now.
			sched, version, planned = s, v, now
			select {
			case <-d.replan: // taken into account here
			default:
			}
		}
		planned = sched.Next(planned)
		missed := 0
		for !planned.After(now) && !planned.IsZero() {
			planned = sched.Next(planned)
			if missed++; missed > 1000 { // a tiny interval: restart from now
				planned = sched.Next(now)
				break
			}
		}
		if planned.IsZero() {
			return errors.New("daemon: the schedule has no next pass")
		}
		if missed > 0 {
			d.log.Warn(MsgMissed, "missed", missed)
		}
		fire = planned.Add(d.jitter())
	}
}

// schedule returns the schedule in effect and its version.
func (d *Daemon) schedule() (Schedule, int64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.cfg.Schedule, d.schedVersion
}

func (d *Daemon) jitter() time.Duration {
	d.mu.Lock()
	j := d.cfg.Jitter
	d.mu.Unlock()
	if j <= 0 {
		return 0
	}
	return time.Duration(d.cfg.Rand(int64(j)))
}

func (d *Daemon) setState(s State, next time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.state, d.next = s, next
}
