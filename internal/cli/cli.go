// Package cli implements the tqscavenger command: flag parsing, opening the
// store, and printing results. It wires the other packages together and
// holds no scavenging policy of its own.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/tqscavenger/tqscavenger/internal/buildinfo"
	"github.com/tqscavenger/tqscavenger/internal/logattr"
	"github.com/tqscavenger/tqscavenger/internal/suggest"
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

// Unwrap makes a signal a cancellation: the pass it stops is interrupted
// (exit status 128+N), not failed.
func (e signalError) Unwrap() error { return context.Canceled }

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

// command is one command of tqscavenger: its flags, registered in their
// help groups, and what it does once they are parsed and layered.
type command struct {
	name, summary string
	usage         string // what follows the name in help: "--db DSN [flags]"
	long          string // more help, after the summary
	// flags registers the command's flags and returns what runs with
	// them; nil for a command that only groups others.
	flags func(g *flagGroups) runFunc
	// noEnv are flags never read from the environment.
	noEnv []string
	// args checks the positional arguments; nil allows none.
	args func(args []string) error
	subs []command
}

// runFunc runs a command with its flags parsed and layered.
type runFunc func(ctx context.Context, inv *invocation) error

// invocation is a command being run: where it writes, its flags and where
// each value came from.
type invocation struct {
	*env
	fs      *pflag.FlagSet
	origins map[string]origin
	args    []string // positional arguments
}

// env is what a command runs with.
type env struct {
	stdout, stderr io.Writer
	exit           int // set by commands that finish with a non-zero status but no error
}

func commands() []command {
	cs := append([]command{
		{name: "run", summary: "make one scavenger pass over a database", usage: "--db DSN [flags]", flags: runFlags},
		{name: "report", summary: "read-only inventory of a database, and what each mode would delete", usage: "--db DSN [flags]", flags: reportFlags},
		{name: "demo", summary: "create a demo SQLite database, scavenge it, show before and after", usage: "[--db PATH]", flags: demoFlags, noEnv: []string{"db"}},
		// Never from TQSCAVENGER_DB: with the production DSN exported for
		// run and serve, seed would write synthetic queues into production.
		{name: "seed", summary: "write synthetic Temporal-format queues and tasks", usage: "--db DSN [flags]", flags: seedFlags, noEnv: []string{"db"}},
		{name: "schema", summary: "schema setup | schema check: create or inspect Temporal's task tables", usage: "setup|check --db DSN", subs: []command{
			{name: "setup", summary: "create Temporal's task tables (those missing)", usage: "--db DSN [flags]", flags: schemaFlags("setup")},
			{name: "check", summary: "check that tqscavenger can scavenge a database", usage: "--db DSN [flags]", flags: schemaFlags("check")},
		}},
		{name: "serve", summary: "run passes on a schedule, with /metrics, a status page and health checks", usage: "--db DSN [flags]", flags: serveCmdFlags,
			long: "SIGHUP re-reads the --config file and applies the new settings; see `config`."},
		{name: "config", summary: "print the settings serve (or COMMAND) would run with, and where each value came from", usage: "[COMMAND] [flags]", flags: configCmdFlags},
		{name: "version", summary: "print the version, VCS revision and Go version of this build", usage: "[--output json]", flags: versionFlags},
	}, temporalCommands()...)
	// config shows the settings of the commands above, with their flags.
	for i := range cs {
		if cs[i].name == "config" {
			cs[i].subs = configSubs(cs)
			cs[i].args = configArgs(cs[i].subs)
			cs[i].long = "Without COMMAND: serve's settings. COMMAND takes the flags of the command it shows."
		}
	}
	return cs
}

// Main runs the command line args and returns the exit status.
func Main(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "--version" {
		args[0] = "version"
	}
	e := &env{stdout: stdout, stderr: stderr}
	ctx, stop := signalContext()
	defer stop()
	root := newRoot(ctx, e)
	if len(args) == 0 {
		writeHelp(stdout, root)
		return ExitUsage
	}
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	found, _, err := root.Find(args)
	if !strings.HasPrefix(args[0], "__complete") && (err != nil || (found == root && !strings.HasPrefix(args[0], "-"))) {
		hint := ""
		if s := root.SuggestionsFor(args[0]); len(s) > 0 {
			// The nearest, not cobra's first in the list's order.
			slices.SortStableFunc(s, func(a, b string) int { return suggest.Distance(args[0], a) - suggest.Distance(args[0], b) })
			hint = fmt.Sprintf(" (did you mean %q?)", s[0])
		}
		fmt.Fprintf(stderr, "tqscavenger: unknown command %s%s: run `tqscavenger help` for the list\n", sqlstore.RedactText(strconv.Quote(args[0])), hint)
		return ExitUsage
	}
	if helpAllAsked(args) && !strings.HasPrefix(args[0], "__complete") {
		c := helpAllOf(root, found, args)
		c.InitDefaultHelpFlag() // as cobra adds it before its own help
		writeCommandHelp(stdout, c, true)
		return ExitOK
	}
	if err := repeatedSource(longFlags(found, args)); err != nil {
		fmt.Fprintf(stderr, "tqscavenger %s: %s\n", strings.TrimPrefix(found.CommandPath(), root.Name()+" "), oneLine(err))
		return ExitUsage
	}
	root.SetArgs(longFlags(found, args))
	cmd, err := root.ExecuteC()
	name := strings.TrimPrefix(cmd.CommandPath(), root.Name()+" ")
	var sig signalError
	switch {
	case err == nil:
		return e.exit
	case errors.As(context.Cause(ctx), &sig):
		// Whatever the error says: a signal during start-up (a connection,
		// a lock wait) ends the command as one during the pass does.
		fmt.Fprintf(stderr, "tqscavenger %s: interrupted (%s)\n", name, sig.sig)
		return sig.status()
	}
	if cmd == root {
		fmt.Fprintf(stderr, "tqscavenger: %s\n", oneLine(err))
		return ExitUsage
	}
	status := exitStatus(err)
	fmt.Fprintf(stderr, "tqscavenger %s: %s\n", name, unavailableOnlyOn4(oneLine(advise(err)), status))
	return status
}

// unavailableOnlyOn4 drops the library's "database unavailable: " from a
// message whose status is not 4: a refused login, a TLS name that does
// not match or a missing SQLite file is bad input (status 2), and to call
// it unavailable would send a scheduler to retry what will not work.
func unavailableOnlyOn4(msg string, status int) string {
	if status == ExitUnavailable {
		return msg
	}
	return strings.Replace(msg, sqlstore.ErrUnavailable.Error()+": ", "", 1)
}

// longFlags returns args with each -name written --name, where name is a
// long flag of cmd: the standard flag package took both, and scripts may
// still use the single dash.
func longFlags(cmd *cobra.Command, args []string) []string {
	out := make([]string, 0, len(args))
	for i, a := range args {
		if a == "--" {
			return append(out, args[i:]...)
		}
		if len(a) > 2 && a[0] == '-' && a[1] != '-' {
			name, _, _ := strings.Cut(a[1:], "=")
			if len(name) > 1 && (name == "help" || cmd.Flags().Lookup(name) != nil) {
				a = "-" + a
			}
		}
		out = append(out, a)
	}
	return out
}

// newRoot builds the command tree on spf13/cobra: help, completion
// (`tqscavenger completion bash|zsh|fish|powershell`) and suggestions for
// mistyped commands come with it.
func newRoot(ctx context.Context, e *env) *cobra.Command {
	root := &cobra.Command{
		Use:           "tqscavenger",
		Short:         "deletes expired tasks and idle, empty task queues from Temporal's SQL task tables",
		SilenceErrors: true,
		SilenceUsage:  true,
		Args:          noArgs,
		// cobra's default of 2 edits, set here since only its own
		// unknown-command error would set it.
		SuggestionsMinimumDistance: 2,
	}
	root.SetOut(e.stdout)
	root.SetErr(e.stderr)
	root.SetHelpFunc(func(c *cobra.Command, _ []string) { writeHelp(c.OutOrStdout(), c) })
	root.SetUsageFunc(func(c *cobra.Command) error { writeHelp(c.OutOrStderr(), c); return nil })
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		unknown := ""
		if _, name, ok := strings.Cut(err.Error(), "unknown flag: "); ok {
			unknown = name
		} else if _, in, ok := strings.Cut(err.Error(), "unknown shorthand flag: "); ok && len(in) > 2 {
			unknown = "-" + in[1:2] // 'o' in -o
		}
		return usagef("%v%s (see tqscavenger %s -h)", err, flagSuggestion(c.Flags(), unknown), strings.TrimPrefix(c.CommandPath(), "tqscavenger "))
	})
	root.CompletionOptions.HiddenDefaultCmd = false
	for _, c := range commands() {
		root.AddCommand(c.cobra(ctx, e, ""))
	}
	// cobra adds its completion command when it runs one; added now, bare
	// tqscavenger's list of commands shows it too.
	root.InitDefaultCompletionCmd()
	if cc, _, err := root.Find([]string{"completion"}); err == nil && cc != root {
		cc.Short = "print a shell completion script: bash, zsh, fish or powershell"
	}
	return root
}

// cobra returns c as a cobra command; parent is the name of the command
// c is a sub-command of, or "".
func (c command) cobra(ctx context.Context, e *env, parent string) *cobra.Command {
	cc := &cobra.Command{
		Use:   strings.TrimSpace(c.name + " " + c.usage),
		Short: c.summary,
		Long:  c.long,
		Args: func(_ *cobra.Command, args []string) error {
			switch {
			case c.args != nil:
				return c.args(args)
			case len(c.subs) > 0 && c.flags == nil && len(args) > 0:
				return unknownSub(c, args[0])
			}
			return noArgs(nil, args)
		},
	}
	if len(c.subs) > 0 && c.flags == nil {
		// A command that only groups others (schema) has no flags: those
		// after a mistyped sub-command are the sub-command's, and the
		// error is the sub-command's name (schema chek --db X).
		cc.FParseErrWhitelist.UnknownFlags = true
	}
	fs := cc.Flags()
	if parent != "" {
		// The full name, as errors and the config file's sections
		// (sectionOf) name the command: "schedule create".
		fs.Init(parent+" "+c.name, pflag.ContinueOnError)
	}
	fs.SortFlags = false
	fs.SetNormalizeFunc(normalizeFlag)
	var run runFunc
	if c.flags != nil {
		g := newFlagGroups(fs)
		run = c.flags(g)
		g.done()
		addCompletions(cc)
	}
	cc.RunE = func(cmd *cobra.Command, args []string) error {
		if run == nil {
			return usagef("use one of: %s (see tqscavenger %s -h)", subNames(c.subs), c.name)
		}
		warnAliases(e.stderr, strings.TrimPrefix(cmd.CommandPath(), "tqscavenger "), fs)
		o, err := layer(fs, c.noEnv...)
		if err != nil {
			return err
		}
		if err := checkRanges(fs, o); err != nil {
			return err
		}
		if err := checkInputs(fs, o); err != nil {
			return err
		}
		inv := &invocation{env: e, fs: fs, origins: o, args: args}
		return hideFileValues(run(ctx, inv), fs, o)
	}
	for _, s := range c.subs {
		cc.AddCommand(s.cobra(ctx, e, c.name))
	}
	return cc
}

// unknownSub is the error for a word that is none of c's sub-commands.
func unknownSub(c command, word string) error {
	var names []string
	for _, s := range c.subs {
		names = append(names, s.name)
	}
	hint := ""
	if s := suggestNames(word, names); len(s) > 0 {
		hint = " (did you mean " + orList(s) + "?)"
	}
	return usagef("unknown command %s for %s%s: use one of: %s (see tqscavenger %s -h)", sqlstore.RedactText(strconv.Quote(word)), c.name, hint, subNames(c.subs), c.name)
}

func subNames(subs []command) string {
	var names []string
	for _, s := range subs {
		names = append(names, "`"+s.name+"`")
	}
	return joinOr(names)
}

func joinOr(s []string) string {
	if len(s) < 2 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1]
}

// noArgs refuses positional arguments.
func noArgs(_ *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usagef("unexpected argument %q (flags go before it? see -h)", args[0])
	}
	return nil
}

// enumValues are the values of the flags that take one of a few, for
// shell completion.
var enumValues = map[string][]string{
	"compat": {"temporal"}, "tables": {"v1", "v2", "all"}, "orphans": {"expired", "all", "none"},
	"log-level": {"debug", "info", "warn", "error"}, "log-format": {"text", "json"},
	"progress": {"auto", "always", "never"}, "output": {"text", "json"},
	"layout": {"expired-first", "live-first", "shuffled"}, "plugin": {"postgres12", "postgres12_pgx", "mysql8", "sqlite"},
}

func addCompletions(cc *cobra.Command) {
	cc.Flags().VisitAll(func(f *pflag.Flag) {
		if vals, ok := enumValues[f.Name]; ok && aliasOf(f) == "" {
			_ = cc.RegisterFlagCompletionFunc(f.Name, cobra.FixedCompletions(vals, cobra.ShellCompDirectiveNoFileComp))
		}
	})
}

// writeHelp writes the help of c -h shows: its usage, summary, examples,
// the everyday flags by group, each default once, and how many more
// --help-all shows.
func writeHelp(w io.Writer, c *cobra.Command) { writeCommandHelp(w, c, false) }

// writeCommandHelp writes the help of c; with all, every flag with its
// whole text (--help-all).
func writeCommandHelp(w io.Writer, c *cobra.Command, all bool) {
	if !c.HasParent() {
		usage(w, c)
		return
	}
	fmt.Fprintf(w, "Usage: %s\n\n", c.UseLine())
	writeWrapped(w, "", c.Short, helpWidth)
	if c.Long != "" {
		fmt.Fprintln(w, c.Long)
	}
	writeExamples(w, c)
	if c.HasAvailableSubCommands() {
		fmt.Fprintln(w, "\nCommands:")
		for _, s := range c.Commands() {
			if s.IsAvailableCommand() {
				fmt.Fprintf(w, "  %-10s %s\n", s.Name(), s.Short)
			}
		}
	}
	writeFlagHelp(w, c.Flags(), all)
	if f := c.Flags().Lookup("statement-timeout"); all && f != nil && !f.Hidden && c.Flags().Lookup("workers") != nil {
		fmt.Fprintf(w, "\nA knob given as 0 takes its default (--workers 0 is %d, or %d with --compat=temporal); for the rate\n", defaults.Workers, temporalConfig.Workers)
		fmt.Fprintln(w, "limits and --statement-timeout, 0 is their default: unlimited, none.")
	}
	if c.Flags().Lookup("config") != nil {
		fmt.Fprintln(w, "\nSettings: flag > TQSCAVENGER_* environment > --config FILE > default. Each flag is also read from")
		fmt.Fprintln(w, "TQSCAVENGER_ and its name in upper case, '-' as '_' (--dry-run: TQSCAVENGER_DRY_RUN).")
	} else if c.Flags().Lookup("db") != nil || c.Flags().Lookup("temporal-address") != nil {
		fmt.Fprintln(w, "\nEach flag is also read from TQSCAVENGER_ and its name in upper case, '-' as '_'.")
	}
	if c.Flags().Lookup("temporal-address") != nil {
		fmt.Fprintln(w, "The --temporal-* flags are also read from the temporal CLI's TEMPORAL_* variables, after")
		fmt.Fprintln(w, "TQSCAVENGER_*.")
	}
	writeWrapped(w, "", exitStatusHelp, 100)
	if !all {
		writeMoreFlags(w, c)
	}
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
		errors.Is(err, store.ErrSchema),
		errors.Is(err, scavenger.ErrUnknownNamespace), errors.Is(err, store.ErrNoNamespaceTable),
		errors.Is(err, scavenger.ErrClosedWorkflowsRefused),
		errors.Is(err, store.ErrNoPrivilege):
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

// oneLine is err on one line, with any password it quotes masked: an
// error about input that did not parse may quote it whole, in a shape no
// parser recognised (sqlstore.RedactText).
func oneLine(err error) string {
	return sqlstore.RedactText(strings.Join(strings.Fields(strings.ReplaceAll(err.Error(), "\n", "; ")), " "))
}

func usage(w io.Writer, root *cobra.Command) {
	fmt.Fprintln(w, "tqscavenger: deletes expired tasks and idle, empty task queues from Temporal's SQL task tables.")
	fmt.Fprintln(w, "\nUsage: tqscavenger COMMAND [flags]   (tqscavenger COMMAND -h for its flags, --help-all for every one)")
	fmt.Fprintln(w, "\nCommands:")
	for _, c := range root.Commands() {
		if c.IsAvailableCommand() {
			fmt.Fprintf(w, "  %-10s %s\n", c.Name(), c.Short)
		}
	}
	fmt.Fprintln(w, "\nDatabases: --db postgres://user:pass@host:5432/db | mysql://user:pass@host:3306/db | sqlite:PATH | PATH")
	fmt.Fprintln(w, "           or the environment variable TQSCAVENGER_DB; or --temporal-config FILE (a Temporal server's")
	fmt.Fprintln(w, "           config); or temporal-sql-tool's --endpoint, --port, --user, --database, --plugin (or SQL_*).")
	fmt.Fprintln(w, "           TLS: --tls-ca-file, --tls-cert-file, --tls-key-file, --tls-server-name (or SQL_TLS_*).")
	var withConfig []string
	for _, c := range root.Commands() {
		if c.Flags().Lookup("config") != nil || (c.HasSubCommands() && slices.ContainsFunc(c.Commands(), func(s *cobra.Command) bool { return s.Flags().Lookup("config") != nil })) {
			withConfig = append(withConfig, c.Name())
		}
	}
	fmt.Fprintf(w, "Settings:  flag > TQSCAVENGER_* environment > --config FILE (%s) > default.\n", strings.Join(withConfig, ", "))
	fmt.Fprintln(w, "Shell completion: tqscavenger completion bash|zsh|fish|powershell (see its -h; bash's needs the")
	fmt.Fprintln(w, "bash-completion package: apt install bash-completion, brew install bash-completion@2).")
	writeWrapped(w, "", exitStatusHelp, 100)
}

func envName(flagName string) string {
	return "TQSCAVENGER_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// logFlags are the logging flags every command shares.
type logFlags struct {
	level, format string
	// live, if set, is the level of the logger: serve sets it again at a
	// reload.
	live *slog.LevelVar
}

func (l *logFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&l.level, "log-level", "info", "log level: debug, info, warn or error")
	fs.StringVar(&l.format, "log-format", "text", "log format: text or json")
}

// parseLevel returns the level --log-level names.
func (l *logFlags) parseLevel() (slog.Level, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(l.level)); err != nil {
		return lv, usagef("--log-level %q: use debug, info, warn or error", l.level)
	}
	return lv, nil
}

func (l *logFlags) logger(w io.Writer) (*slog.Logger, error) {
	lv, err := l.parseLevel()
	if err != nil {
		return nil, err
	}
	opts := &slog.HandlerOptions{Level: lv, ReplaceAttr: redactAttr}
	if l.live != nil {
		l.live.Set(lv)
		opts.Level = l.live
	}
	switch l.format {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		// Durations as seconds, lists as arrays: typed for log pipelines.
		opts.ReplaceAttr = func(groups []string, a slog.Attr) slog.Attr {
			return logattr.JSON(groups, redactAttr(groups, a))
		}
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, usagef("--log-format %q: use text or json", l.format)
}

// redactAttr masks passwords in any logged DSN, and in any text or error
// that quotes one (sqlstore.RedactText).
func redactAttr(_ []string, a slog.Attr) slog.Attr {
	if a.Key == "db" || a.Key == "dsn" {
		return slog.String(a.Key, sqlstore.Redact(a.Value.String()))
	}
	switch v := a.Value.Resolve(); {
	case v.Kind() == slog.KindString:
		if s := v.String(); strings.Contains(s, "@") || strings.Contains(s, "=") {
			return slog.String(a.Key, sqlstore.RedactText(s))
		}
	case v.Kind() == slog.KindAny:
		if err, ok := v.Any().(error); ok {
			return slog.String(a.Key, sqlstore.RedactText(err.Error()))
		}
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

// versionFlags are version's: --output, as every command with output.
func versionFlags(g *flagGroups) runFunc {
	var output string
	outputFlag(g.Output, &output, "text or json")
	return func(_ context.Context, inv *invocation) error {
		if err := checkOutput(output); err != nil {
			return err
		}
		b := buildinfo.Read()
		if output == "json" {
			return writeJSON(inv.stdout, map[string]string{"version": b.Version, "revision": b.Revision, "go_version": b.GoVersion})
		}
		fmt.Fprintln(inv.stdout, b)
		return nil
	}
}

// sourceFlags are the flags that name the database on their own: given
// twice, the last would win silently, and a pass would run against a
// database the operator may not have meant. Other flags keep pflag's
// last-wins.
var sourceFlags = []string{"db", "temporal-config"}

// repeatedSource refuses a database-source flag given twice on the
// command line.
func repeatedSource(args []string) error {
	seen := map[string]int{}
	for _, a := range args {
		if a == "--" {
			break
		}
		name, _, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if !strings.HasPrefix(a, "--") || !slices.Contains(sourceFlags, name) {
			continue
		}
		if seen[name]++; seen[name] == 2 {
			return usagef("--%s given more than once: give one database", name)
		}
	}
	return nil
}
