package cli

// serve's live reconfiguration: on SIGHUP it reads its settings again,
// as at start (flag > environment > config file > default: a flag given
// on the command line keeps its value whatever the file says), runs every
// start-up check again, and hands the result to the daemon.

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"

	"github.com/spf13/pflag"

	"github.com/tqscavenger/tqscavenger/daemon"
	"github.com/tqscavenger/tqscavenger/sqlstore"
)

// restartOnly are the settings a reload does not change: the database
// (and so the lock and the database's identity), its pool, the listener,
// the log format and the history's length. A reload that changes one is
// refused whole, so that the settings in effect are always one reading of
// the file, and the log says which need a restart.
var restartOnly = slices.Concat(dsnSource, temporalSource, sqlToolSource, tlsFlags,
	[]string{"max-conns", "listen", "history", "log-format"})

// reread returns serve's settings read again: the command line's values
// as they were given, the environment and the config file as they are now.
func (s *serveSettings) reread() (*serveSettings, error) {
	n := newServeSettings()
	var err error
	s.fs.VisitAll(func(f *pflag.Flag) {
		if s.origins[f.Name].layer == fromFlag && err == nil {
			err = n.fs.Set(f.Name, f.Value.String())
		}
	})
	if err != nil {
		return nil, err
	}
	n.origins, err = layer(n.fs)
	return n, err
}

// reloader applies serve's configuration again at each SIGHUP.
type reloader struct {
	log   *slog.Logger
	level *slog.LevelVar
	d     *daemon.Daemon
	db    *sqlstore.DB

	ss  *serveSettings // in effect
	cur resolved
}

// watch reloads at each SIGHUP until stop is called.
func (r *reloader) watch() (stop func()) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGHUP)
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		for {
			select {
			case <-done:
				return
			case <-ch:
				r.reload()
			}
		}
	}()
	return func() {
		signal.Stop(ch)
		close(done)
		<-finished
	}
}

// reload reads the settings again and applies them, or refuses them with
// a log line and keeps those in effect.
func (r *reloader) reload() {
	r.log.Info("SIGHUP: reloading the configuration", "config", r.ss.fs.Lookup("config").Value.String())
	fresh, err := r.ss.reread()
	var next resolved
	if err == nil {
		next, err = fresh.resolve(io.Discard)
	}
	if err == nil {
		// A namespace name no longer in the table would fail every pass:
		// refuse the reload instead, as serve refuses it at start.
		err = checkNamespaceNames(context.Background(), r.db, next.cfg)
	}
	// Each refusal is recorded before it is logged: whoever reads the log
	// line finds it on the status page and in the metrics.
	if err != nil {
		r.d.ReloadRefused(daemon.ReloadInvalid, err)
		r.log.Error(daemon.MsgReloadRefused, "result", daemon.ReloadInvalid, "err", oneLine(advise(err)))
		return
	}
	var restart []string
	for _, name := range restartOnly {
		if r.ss.fs.Lookup(name).Value.String() != fresh.fs.Lookup(name).Value.String() {
			restart = append(restart, name)
		}
	}
	if len(restart) > 0 {
		err := fmt.Errorf("%s changed: a restart applies %s", strings.Join(restart, ", "), map[bool]string{true: "it", false: "them"}[len(restart) == 1])
		r.d.ReloadRefused(daemon.ReloadNeedsRestart, err)
		r.log.Error(daemon.MsgReloadRefused, "result", daemon.ReloadNeedsRestart, "err", err.Error())
		return
	}
	if err := r.d.Reconfigure(daemon.Reconfig{Scavenger: next.cfg, Schedule: next.sched, Jitter: next.jitter,
		ShutdownTimeout: fresh.df.shutdownTimeout, Settings: next.settings}); err != nil {
		r.log.Error(daemon.MsgReloadRefused, "result", daemon.ReloadInvalid, "err", err.Error())
		return
	}
	r.db.SetStatementTimeout(fresh.sf.stmtTO)
	// Logged at the level in effect until now, then the new one applies.
	r.log.Info(daemon.MsgReloaded, "changed", changedSettings(r.cur.settings, next.settings),
		"schedule", next.sched.String(), "jitter", next.jitter.String())
	r.level.Set(next.level)
	r.ss, r.cur = fresh, next
}

// changedSettings lists the settings whose value or source differs, as
// "name=value (source)", values masked.
func changedSettings(old, cur []daemon.Setting) string {
	was := map[string]daemon.Setting{}
	for _, s := range old {
		was[s.Name] = s
	}
	var out []string
	for _, s := range cur {
		if w := was[s.Name]; w != s {
			out = append(out, fmt.Sprintf("%s=%s (%s, was %s)", s.Name, s.Value, s.Source, w.Value))
		}
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, "; ")
}
