// Package command is the lab's command line, tqslab: the benchmark
// (the default command), its partitions and live-load modes, and the two
// commands the benchmark runs as its own children: raw (the raw bounds'
// pass) and measure (a command's wall time and peak RSS).
//
// The lab measures binaries under test, given by path (--binary), never
// itself: the operator's binary links none of the lab.
package command

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/pflag"
)

// Exit statuses.
const (
	ExitOK    = 0
	ExitFail  = 1
	ExitUsage = 2
)

// usageError is bad input: exit 2.
type usageError struct{ error }

func usagef(format string, a ...any) error { return usageError{fmt.Errorf(format, a...)} }

// env is what a command writes to.
type env struct {
	stdout, stderr io.Writer
	// exit is set by a command that ends with a status of its own
	// (measure: the measured command's).
	exit int
}

// subcommand is one of tqslab's commands.
type subcommand struct {
	name, usage, summary string
	run                  func(ctx context.Context, e *env, args []string) error
}

func subcommands() []subcommand {
	return []subcommand{
		{"bench", "[flags]", "seed databases and time the binaries under test against Temporal's settings, each other and the raw bounds (the default command; --live-load: the latency of matching's statements beside passes)", benchCmd},
		{"partitions", "[flags]", "time N processes of a binary under test, each a partition, over one PostgreSQL database", partitionsCmd},
		{"raw", "--db DSN [flags]", "the raw bound's pass alone, on one database (the benchmark's raw and safe raw passes)", rawCmd},
		{"measure", "--result FILE -- COMMAND [ARG…]", "run a command, write its wall time, peak RSS and exit status as JSON (the benchmark starts every pass through it)", measureCmd},
	}
}

// Main runs tqslab with args (without the program name) and returns its
// exit status.
func Main(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	e := &env{stdout: stdout, stderr: stderr}
	cmds := subcommands()
	cmd := cmds[0]
	if len(args) > 0 {
		switch a := args[0]; {
		case a == "help" || a == "-h" || a == "--help":
			writeHelp(stdout, cmds)
			return ExitOK
		case !strings.HasPrefix(a, "-"):
			found := false
			for _, c := range cmds {
				if c.name == a {
					cmd, args, found = c, args[1:], true
				}
			}
			if !found {
				fmt.Fprintf(stderr, "tqslab: unknown command %q: run `tqslab help` for the list\n", a)
				return ExitUsage
			}
		}
	}
	err := cmd.run(ctx, e, args)
	var ue usageError
	switch {
	case errors.Is(err, pflag.ErrHelp):
		return ExitOK
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "tqslab %s: %v\n", cmd.name, err)
		return ExitUsage
	case err != nil:
		fmt.Fprintf(stderr, "tqslab %s: %v\n", cmd.name, err)
		return ExitFail
	}
	return e.exit
}

func writeHelp(w io.Writer, cmds []subcommand) {
	fmt.Fprintln(w, "Usage: tqslab [COMMAND] [flags]")
	fmt.Fprintln(w, "\nThe lab: measures builds of tqscavenger (--binary PATH, or LABEL=PATH, repeatable;")
	fmt.Fprintln(w, "default: one it builds from the main module) on databases it seeds.\n\nCommands:")
	for _, c := range cmds {
		fmt.Fprintf(w, "  %-11s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "\nRun `tqslab COMMAND --help` for a command's flags.")
}

// newFlags returns a flag set for command name whose usage goes to e's
// stdout with --help, and whose errors are usage errors.
func newFlags(e *env, name, usage string) *pflag.FlagSet {
	fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
	fs.SortFlags = false
	fs.SetOutput(io.Discard)
	fs.Usage = func() {
		fmt.Fprintf(e.stdout, "Usage: tqslab %s %s\n\n%s", name, usage, fs.FlagUsagesWrapped(100))
	}
	return fs
}

// parse parses args into fs; a bad flag is a usage error. For --help,
// pflag has printed the usage itself.
func parse(fs *pflag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return err
		}
		return usageError{err}
	}
	return nil
}
