// Package cli implements the tqscavenger command: flag parsing, opening the
// store, and printing results. It wires the other packages together and
// holds no scavenging policy of its own.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"sort"
	"strings"
	"syscall"

	"github.com/tqscavenger/tqscavenger/internal/buildinfo"
	"github.com/tqscavenger/tqscavenger/scavenger"
	"github.com/tqscavenger/tqscavenger/sqlstore"
	"github.com/tqscavenger/tqscavenger/store"
)

// Exit statuses, for a scheduler to act on. A run stopped by a signal
// exits with 128 + the signal's number (130 SIGINT, 143 SIGTERM); serve
// stopped gracefully by one exits 0.
const (
	ExitOK          = 0 // success: every queue done
	ExitFailed      = 1 // the pass failed: a job failed after its retries, or the pass could not go on
	ExitUsage       = 2 // bad input: flags, DSN, config file, credentials, a missing database or schema (retrying will not help)
	ExitBadRows     = 3 // success, but some rows could not be read (they are kept)
	ExitUnavailable = 4 // the database could not be reached: retry later
	ExitLocked      = 5 // another tqscavenger holds the lock: skip this run
)

// exitStatusHelp is the exit statuses in one line, for help texts.
const exitStatusHelp = "Exit status: 0 success, 1 pass failed, 2 bad input, 3 success with unreadable rows, " +
	"4 database unreachable (retry later), 5 lock held by another tqscavenger, 128+N stopped by signal N."

// signalError is the cause of Main's context when a signal stopped it.
type signalError struct{ sig os.Signal }

func (e signalError) Error() string { return "stopped by " + e.sig.String() }

// status returns 128 + the signal's number.
func (e signalError) status() int {
	if s, ok := e.sig.(syscall.Signal); ok {
		return 128 + int(s)
	}
	return 128 + int(syscall.SIGINT)
}

// usageError is bad input: exit status 2.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, a ...any) error { return usageError{fmt.Errorf(format, a...)} }

type command struct {
	name, summary string
	run           func(ctx context.Context, env *env, args []string) error
}

// env is what a command runs with.
type env struct {
	stdout, stderr io.Writer
	exit           int // set by commands that finish with a non-zero status but no error
}

func commands() []command {
	return append([]command{
		{"run", "make one scavenger pass over a database", runCmd},
		{"report", "read-only inventory of a database, and what each mode would delete", reportCmd},
		{"demo", "create a demo SQLite database, scavenge it, show before and after", demoCmd},
		{"seed", "write synthetic Temporal-format queues and tasks", seedCmd},
		{"schema", "schema setup | schema check: create or inspect Temporal's task tables", schemaCmd},
		{"bench", "time passes against Temporal's settings and the raw bound on seeded databases", benchCmd},
		{"serve", "run passes on a schedule, with /metrics, a status page and health checks", serveCmd},
		{"config", "print the configuration serve would run with, and where each value came from", configCmd},
		{"version", "print the version, VCS revision and Go version of this build", versionCmd},
	}, temporalCommands...)
}

// Main runs the command line args and returns the exit status.
func Main(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "--version" {
		args[0] = "version"
	}
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		usage(stdout)
		if len(args) == 0 {
			return ExitUsage
		}
		return ExitOK
	}
	var cmd *command
	for _, c := range commands() {
		if c.name == args[0] {
			cmd = &c
			break
		}
	}
	if cmd == nil {
		fmt.Fprintf(stderr, "tqscavenger: unknown command %q: run `tqscavenger help` for the list\n", args[0])
		return ExitUsage
	}
	ctx, stop := signalContext()
	defer stop()
	e := &env{stdout: stdout, stderr: stderr}
	err := cmd.run(ctx, e, args[1:])
	var sig signalError
	switch {
	case err == nil:
		return e.exit
	case errors.Is(err, flag.ErrHelp):
		return ExitOK
	case errors.As(context.Cause(ctx), &sig) && (errors.Is(err, context.Canceled) || errors.Is(err, scavenger.ErrShutdown)):
		fmt.Fprintf(stderr, "tqscavenger %s: interrupted (%s)\n", cmd.name, sig.sig)
		return sig.status()
	}
	fmt.Fprintf(stderr, "tqscavenger %s: %s\n", cmd.name, oneLine(advise(err)))
	return exitStatus(err)
}

// signalContext returns a context that ends, with a signalError as its
// cause, at the first SIGINT or SIGTERM.
func signalContext() (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(context.Background())
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case s := <-ch:
			cancel(signalError{s})
		case <-done:
		}
	}()
	return ctx, func() {
		signal.Stop(ch)
		close(done)
		cancel(nil)
	}
}

// exitStatus maps an error to the exit status a scheduler can act on.
func exitStatus(err error) int {
	var ue usageError
	switch {
	case errors.As(err, &ue),
		errors.Is(err, sqlstore.ErrBadDSN),
		errors.Is(err, sqlstore.ErrRefused),
		errors.Is(err, sqlstore.ErrTLS),
		errors.Is(err, store.ErrSchema):
		return ExitUsage
	case errors.Is(err, store.ErrLocked):
		return ExitLocked
	case errors.Is(err, sqlstore.ErrUnavailable), errors.Is(err, errTemporalUnavailable):
		return ExitUnavailable
	}
	return ExitFailed
}

// advise adds what the user can do to the library's errors, which say
// only what happened.
func advise(err error) error {
	var te *sqlstore.TLSError
	if errors.As(err, &te) {
		return fmt.Errorf("%w (%s)", err, tlsAdvice[te.Reason])
	}
	switch {
	case errors.Is(err, store.ErrStatementTimeout) && errors.Is(err, scavenger.ErrGaveUp):
		return fmt.Errorf("%w (raise --statement-timeout, or lower --task-batch-size, or find what holds the locks)", err)
	case errors.Is(err, store.ErrStatementTimeout):
		return fmt.Errorf("%w (another session may hold a lock on the task tables; raise --statement-timeout, or find what holds the locks)", err)
	case errors.Is(err, scavenger.ErrGaveUp):
		return fmt.Errorf("%w (the database kept failing for --retry-for; see the warnings above)", err)
	case errors.Is(err, store.ErrReadOnly):
		return fmt.Errorf("%w (point --db at the primary, not a replica, and check the user's grants and the file's permissions)", err)
	case errors.Is(err, store.ErrSchema):
		return fmt.Errorf("%w: point --db at Temporal's database, or create them with `tqscavenger schema setup`", err)
	case errors.Is(err, sqlstore.ErrUnavailable) && errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("%w: check the path (for a new database use `tqscavenger schema setup` or `seed`)", err)
	case errors.Is(err, scavenger.ErrShortGrace):
		return fmt.Errorf("%w (pass --unsafe-short-grace only for a copy of a database that no Temporal server uses)", err)
	}
	return err
}

// tlsAdvice is what to do about each reason of a failed TLS handshake,
// in the flags' words and a Temporal config's.
var tlsAdvice = map[sqlstore.TLSReason]string{
	sqlstore.TLSUnknownAuthority:   "give the CA that signed the server's certificate: --tls-ca-file, or tls.caFile in a Temporal config",
	sqlstore.TLSWrongName:          "connect by a name the certificate holds, or give it with --tls-server-name (tls.serverName in a Temporal config)",
	sqlstore.TLSBadCertificate:     "the server's certificate has expired, is not valid yet, or is not a server's",
	sqlstore.TLSClientCertRequired: "give a client certificate: --tls-cert-file and --tls-key-file, or tls.certFile and tls.keyFile in a Temporal config",
	sqlstore.TLSClientCertRefused:  "is the client certificate signed by a CA the server trusts, and for this user?",
	sqlstore.TLSNotOffered:         "turn TLS on at the server, or connect without TLS settings",
}

func oneLine(err error) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(err.Error(), "\n", "; ")), " ")
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "tqscavenger: deletes expired tasks and idle, empty task queues from Temporal's SQL task tables.")
	fmt.Fprintln(w, "\nUsage: tqscavenger COMMAND [flags]   (tqscavenger COMMAND -h for its flags)")
	fmt.Fprintln(w, "\nCommands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-8s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "\nDatabases: --db postgres://user:pass@host:5432/db | mysql://user:pass@host:3306/db | sqlite:PATH | PATH")
	fmt.Fprintln(w, "           or the environment variable TQSCAVENGER_DB; or --temporal-config FILE (a Temporal server's")
	fmt.Fprintln(w, "           config); or temporal-sql-tool's --endpoint, --port, --user, --database, --plugin (or SQL_*).")
	fmt.Fprintln(w, "           TLS: --tls-ca-file, --tls-cert-file, --tls-key-file, --tls-server-name (or SQL_TLS_*).")
	fmt.Fprintln(w, "Settings:  flag > TQSCAVENGER_* environment > --config FILE (serve, run) > default.")
	fmt.Fprintln(w, exitStatusHelp)
}

// newFlags returns a flag set whose errors go to stderr and return an
// error (exit status 2), never exit the process.
func newFlags(e *env, name, args string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	fs.Usage = func() {
		fmt.Fprintf(e.stderr, "Usage: tqscavenger %s %s\n\nFlags (each also from the environment as TQSCAVENGER_NAME):\n", name, args)
		fs.PrintDefaults()
	}
	return fs
}

// parse parses args (an alias such as --ep as its flag) and fills every
// flag not given from the environment (TQSCAVENGER_ + the flag name in
// upper case, '-' as '_', or temporal-sql-tool's SQL_* name of the
// setting: see envLookup), except the flags named in noEnv, then, for a
// command with --config, every flag still unset from the config file.
func parse(fs *flag.FlagSet, args []string, noEnv ...string) error {
	if err := fs.Parse(canonicalArgs(fs, args)); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err}
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q (flags go before it? see -h)", fs.Arg(0))
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var errs []string
	fs.VisitAll(func(f *flag.Flag) {
		if set[f.Name] || slices.Contains(noEnv, f.Name) {
			return
		}
		name, v, ok, err := envLookup(f.Name)
		if err != nil {
			errs = append(errs, err.Error())
			return
		}
		if ok {
			if err := fs.Set(f.Name, v); err != nil {
				shown := v
				if secretFlags[f.Name] {
					shown = "xxxxx"
				}
				errs = append(errs, fmt.Sprintf("%s=%q: %v", name, shown, err))
			}
		}
	})
	if len(errs) > 0 {
		sort.Strings(errs)
		return usagef("bad environment variable %s", strings.Join(errs, "; "))
	}
	return applyConfigFile(fs)
}

func envName(flagName string) string {
	return "TQSCAVENGER_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// logFlags are the logging flags every command shares.
type logFlags struct {
	level, format string
}

func (l *logFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&l.level, "log-level", "info", "log level: debug, info, warn or error")
	fs.StringVar(&l.format, "log-format", "text", "log format: text or json")
}

func (l *logFlags) logger(w io.Writer) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(l.level)); err != nil {
		return nil, usagef("--log-level %q: use debug, info, warn or error", l.level)
	}
	opts := &slog.HandlerOptions{Level: lv, ReplaceAttr: redactAttr}
	switch l.format {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, usagef("--log-format %q: use text or json", l.format)
}

// redactAttr masks passwords in any logged DSN.
func redactAttr(_ []string, a slog.Attr) slog.Attr {
	if a.Key == "db" || a.Key == "dsn" {
		return slog.String(a.Key, sqlstore.Redact(a.Value.String()))
	}
	return a
}

// open opens the store named by dsn, mapping failures to clear errors:
// seed's, which takes a DSN only from its command line.
func open(ctx context.Context, dsn string, opts sqlstore.Options) (*sqlstore.DB, error) {
	if dsn == "" {
		return nil, usagef("no database: pass --db DSN or set TQSCAVENGER_DB (postgres://…, mysql://…, sqlite:PATH or a file path)")
	}
	return sqlstore.Open(ctx, dsn, opts)
}

// versionCmd prints the build.
func versionCmd(_ context.Context, e *env, args []string) error {
	fs := newFlags(e, "version", "")
	if err := parse(fs, args); err != nil {
		return err
	}
	fmt.Fprintln(e.stdout, buildinfo.Read())
	return nil
}
