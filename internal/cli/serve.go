package cli

import (
	"context"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/tqscavenger/tqscavenger/daemon"
	"github.com/tqscavenger/tqscavenger/internal/buildinfo"
	"github.com/tqscavenger/tqscavenger/scavenger"
)

// serveFlags are serve's own flags, beside scavengeFlags and logFlags.
type serveFlags struct {
	every           time.Duration
	cron            string
	jitter          string
	runAtStart      bool
	listen          string
	shutdownTimeout time.Duration
	history         int
	unsafeInterval  bool
}

func (f *serveFlags) register(fs *pflag.FlagSet) {
	durationVar(fs, &f.every, "every", 12*time.Hour, "time between passes, as Temporal's scavenger (unless --cron)")
	fs.StringVar(&f.cron, "cron", "", `cron expression for passes instead of --every, e.g. "0 */12 * * *" (local time; start with TZ=UTC for another zone)`)
	fs.StringVar(&f.jitter, "jitter", "10%", "largest random delay added to each pass: a duration, or a share of the interval such as 10%")
	fs.BoolVar(&f.runAtStart, "run-at-start", false, "run the first pass at start instead of at the first scheduled time")
	fs.StringVar(&f.listen, "listen", "127.0.0.1:9464", `address for the status page, /metrics, /healthz and /readyz ("" for none)`)
	durationVar(fs, &f.shutdownTimeout, "shutdown-timeout", daemon.DefaultShutdownTimeout, "on SIGTERM, how long statements in flight may run before they are cancelled")
	fs.IntVar(&f.history, "history", daemon.DefaultHistory, "passes listed on the status page")
	capFlag(fs, "history", maxHistory)
	fs.BoolVar(&f.unsafeInterval, "unsafe-short-interval", false, "allow passes less than "+shortDuration(MinEvery)+" apart (--every, --cron): for a test or a lab, where passes back to back are wanted")
}

// schedule returns the schedule and the jitter the flags ask for.
func (f *serveFlags) schedule() (daemon.Schedule, time.Duration, error) {
	var (
		s   daemon.Schedule
		err error
	)
	if f.cron != "" {
		s, err = daemon.Cron(f.cron)
	} else {
		s, err = daemon.Every(f.every)
	}
	if err != nil {
		return nil, 0, usagef("--every/--cron: %v", err)
	}
	if err := checkInterval(daemon.Interval(s, time.Now()), f.unsafeInterval); err != nil {
		return nil, 0, err
	}
	jitter, err := parseJitter(f.jitter, daemon.Interval(s, time.Now()))
	if err != nil {
		return nil, 0, err
	}
	if f.shutdownTimeout <= 0 {
		return nil, 0, usagef("--shutdown-timeout %s: must be positive", f.shutdownTimeout)
	}
	if f.history <= 0 {
		return nil, 0, usagef("--history %d: must be positive", f.history)
	}
	return s, jitter, nil
}

// parseJitter reads "10%" (of interval) or a duration.
func parseJitter(s string, interval time.Duration) (time.Duration, error) {
	if p, ok := strings.CutSuffix(strings.TrimSpace(s), "%"); ok {
		pct, err := strconv.ParseFloat(p, 64)
		if err != nil || pct < 0 || pct > 100 {
			return 0, usagef("--jitter %q: use a share from 0%% to 100%% of the interval, or a duration", s)
		}
		return time.Duration(float64(interval) * pct / 100), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, usagef("--jitter %q: use a duration such as 30m, or a share of the interval such as 10%%", s)
	}
	return d, nil
}

// serveSettings are the flags of serve (and of config, which shows them),
// and where each value came from.
type serveSettings struct {
	fs      *pflag.FlagSet
	origins map[string]origin
	sf      scavengeFlags
	cf      connFlags
	lf      logFlags
	df      serveFlags
}

func (s *serveSettings) register(g *flagGroups) {
	s.fs = g.fs
	s.cf.register(g.Conn)
	s.sf.register(g)
	s.df.register(g.Daemon)
	s.lf.register(g.Output)
	configFlag(g.Other)
}

// newServeSettings returns serve's flags on a flag set of their own, as a
// reload reads them again.
func newServeSettings() *serveSettings {
	s := &serveSettings{}
	g := newFlagGroups(newFlagSet("serve"))
	s.register(g)
	g.done()
	return s
}

// resolved is what serve runs with once flags, environment and config
// file are read and checked.
type resolved struct {
	cfg      scavenger.Config
	log      *slog.Logger
	level    slog.Level
	sched    daemon.Schedule
	jitter   time.Duration
	settings []daemon.Setting
}

// resolve checks every value of s, layered, as serve does at start and at
// each reload; config shows the same values, so it never prints a
// configuration serve would refuse.
func (s *serveSettings) resolve(logOut io.Writer) (resolved, error) {
	var r resolved
	// The database's settings as serve would check them, reading a
	// Temporal config but running none of its commands.
	t, err := s.cf.target(context.Background(), s.fs, s.origins, false)
	if err != nil {
		return r, err
	}
	// As serve will find them at start, for config too: the TLS files
	// read (nothing connected) and --listen's form (serve may hold it).
	if err := checkTLS(t); err != nil {
		return r, err
	}
	if err := checkListen(s.df.listen); err != nil {
		return r, err
	}
	// An empty cron is no cron: `config` prints it among the defaults.
	if s.df.cron != "" && s.origins["every"].layer != fromDefault {
		return r, usagef("--every and --cron both given (%s, %s): keep one", s.origins["every"].name, s.origins["cron"].name)
	}
	if r.cfg, err = s.sf.config(); err != nil {
		return r, err
	}
	if r.level, err = s.lf.parseLevel(); err != nil {
		return r, err
	}
	if r.log, err = s.lf.logger(logOut); err != nil {
		return r, err
	}
	if r.sched, r.jitter, err = s.df.schedule(); err != nil {
		return r, err
	}
	r.settings = withDefaults(s.fs, effectiveSettings(s.fs, s.origins), r.cfg, &s.cf)
	return r, nil
}

func serveCmdFlags(g *flagGroups) runFunc {
	ss := &serveSettings{}
	ss.register(g)
	return func(ctx context.Context, inv *invocation) error {
		ss.origins = inv.origins
		return serveCmd(ctx, inv.env, ss)
	}
}

func serveCmd(ctx context.Context, e *env, ss *serveSettings) error {
	sf, df := &ss.sf, &ss.df
	// The log level is a variable, so that a reload changes it.
	level := new(slog.LevelVar)
	ss.lf.live = level
	r, err := ss.resolve(e.stderr)
	if err != nil {
		return err
	}
	cfg, log, sched, jitter, settings := r.cfg, r.log, r.sched, r.jitter, r.settings
	// A database that cannot be reached or is not Temporal's stops serve at
	// once (exit status 2): a service manager shows the error and retries.
	// Failures after start fail single passes instead.
	db, info, err := ss.cf.openChecked(ctx, &invocation{env: e, fs: ss.fs, origins: ss.origins}, sf.storeOptions(), func(w string) { log.Warn(w) })
	if err != nil {
		return err
	}
	defer db.Close()
	if err := checkNamespaceNames(ctx, db, cfg); err != nil {
		return err
	}
	d, err := daemon.New(daemon.Config{
		DB:              db,
		Scavenger:       cfg,
		Schedule:        sched,
		Jitter:          jitter,
		RunAtStart:      df.runAtStart,
		ShutdownTimeout: df.shutdownTimeout,
		History:         df.history,
		DSN:             db.DSN().String(),
		Settings:        settings,
		Logger:          log,
		Build:           daemon.Build(buildinfo.Read()),
	})
	if err != nil {
		return usageError{err}
	}
	var ln net.Listener
	if df.listen != "" {
		if ln, err = net.Listen("tcp", df.listen); err != nil {
			// A port in use or an address not this host's: retrying the
			// same flag will not help.
			return usagef("--listen %s: %v (pick a free port, or --listen \"\" for no page)", df.listen, err)
		}
	}
	addr := ""
	if ln != nil {
		addr = ln.Addr().String()
	}
	bi := buildinfo.Read()
	log.Info("serve started", "version", bi.Version, "revision", bi.Revision, "listen", addr, "db", db.DSN().String(), "engine", string(info.Engine),
		"schedule", sched.String(), "jitter", jitter, "run_at_start", df.runAtStart, "dry_run", cfg.DryRun)
	stop := exitOnSecondSignal(log, os.Exit)
	defer stop()
	stopReloads := (&reloader{log: log, level: level, d: d, db: db, ss: ss, cur: r}).watch()
	defer stopReloads()
	if ln != nil {
		err = d.Serve(ctx, ln)
	} else {
		err = d.Run(ctx)
	}
	if err != nil {
		return err
	}
	log.Info("serve stopped")
	return nil
}

// exitOnSecondSignal exits at once on the second SIGINT or SIGTERM, for
// an operator who will not wait for the drain. The first one is Main's:
// its context ends, and the daemon shuts down gracefully.
func exitOnSecondSignal(log *slog.Logger, exit func(int)) (stop func()) {
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		first := true
		for {
			select {
			case <-done:
				return
			case s := <-ch:
				if first {
					first = false
					log.Debug("signal received; send it again to exit at once", "signal", s.String())
					continue
				}
				log.Warn("second signal, exiting at once", "signal", s.String())
				exit(signalError{s}.status())
			}
		}
	}()
	return func() {
		signal.Stop(ch)
		close(done)
		<-finished
	}
}
