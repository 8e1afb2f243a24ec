package cli

// What `tqscavenger COMMAND -h` shows: a few examples first, the flags an
// operator needs every day, each on one line, and a last line that counts
// the rest and points at --help-all and docs/running.md, which hold them
// all.

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
)

// referenceFlags are the flags -h leaves to --help-all, by name, in every
// command that has them: the connection's beyond --db and
// --temporal-config (TLS, temporal-sql-tool's), the Temporal client's
// TLS, the rest of what to delete, the pace's tuning, the daemon's and the
// schedule's finer settings. Each is documented in docs/running.md
// (TestHelpAllAndDocs). The everyday flags are the others: --db,
// --temporal-config, --config, --dry-run, --grace, --namespace, --queue,
// --past-live-head, --closed-workflows, --below-ack-level, --pace,
// --workers, --max-deletes-per-second, --checkpoint, --lock-held-ok,
// --every, --cron, --run-at-start, --listen, the Temporal address,
// namespace, task queue and profile, --max-partitions, --partitions,
// --schedule-id, --output, --progress, --log-level and --log-format.
var referenceFlags = setOf(
	// Connection.
	"temporal-store", "endpoint", "port", "user", "password", "database", "plugin", "connect-attributes",
	"tls", "tls-ca-file", "tls-ca-data", "tls-cert-file", "tls-cert-data", "tls-key-file", "tls-key-data",
	"tls-server-name", "tls-disable-host-verification", "connect-timeout",
	// Temporal.
	"temporal-config-file", "temporal-api-key", "temporal-tls", "temporal-tls-cert-path", "temporal-tls-key-path",
	"temporal-tls-ca-path", "temporal-tls-server-name", "temporal-tls-disable-host-verification",
	// What to delete (and report's count of it).
	"compat", "unsafe-short-grace", "tables", "partition", "protect", "orphans", "now",
	"closed-deleted-runs", "closed-global", "closed-cluster",
	// Pace and safety.
	"max-statements-per-second", "statement-timeout", "max-conns", "list-page-size", "task-batch-size",
	"tasks-per-job", "max-deferred", "slow-statement", "retry-for", "retry-initial", "retry-max",
	"lock-check-interval", "temporal-metrics", "wait-lock", "fresh", "checkpoint-interval",
	// Daemon and Schedule.
	"jitter", "shutdown-timeout", "history", "unsafe-short-interval",
	"paused", "database-identity", "heartbeat-timeout", "partition-timeout", "max-attempts",
	// Output.
	"stats-json", "json",
)

func setOf(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// briefs are the one-line texts -h shows for the everyday flags whose
// own text runs past a line; --help-all shows the whole text. The default
// the text states is added to the brief.
var briefs = map[string]string{
	"db":                     "postgres://…, mysql://…, sqlite:PATH or a file path",
	"temporal-config":        "a Temporal server's config file: connect as it does",
	"config":                 "YAML file: flag names as keys, a command's own under serve:, run:, …",
	"namespace":              "only this namespace, by name or id; repeatable",
	"closed-workflows":       "also delete the tasks of runs found closed (reads executions)",
	"pace":                   "gentle or full",
	"max-deletes-per-second": "cap on rows deleted per second",
	"checkpoint":             "resume from FILE, and keep it while the pass runs",
	"lock-held-ok":           "exit 0, not 5, when another tqscavenger holds the lock",
	"output":                 "outcome and counts: text or json",
	"progress":               "progress line on stderr",
	"every":                  "time between passes (unless --cron)",
	"cron":                   `cron expression instead of --every, e.g. "17 */12 * * *" (local time)`,
	"run-at-start":           "run the first pass at start",
	"listen":                 `address for /metrics and /healthz ("" for none)`,
	"temporal-profile":       "the temporal CLI's profile for the --temporal-* settings",
	"temporal-address":       "Temporal frontend host:port",
	"temporal-namespace":     "namespace of the workflow and schedule",
	"temporal-task-queue":    "task queue the worker polls",
	"schedule-id":            "the schedule's id",
	"partitions":             "each pass runs as N partition activities over the workers",
	"grace":                  "idle time before an empty queue may be deleted",
	"queue":                  "only queues whose name matches this glob",
	"past-live-head":         "also delete expired tasks behind a live one",
	"below-ack-level":        "also delete tasks at or below their ack level",
	"replace":                "take the whole new description, not only the settings given",
}

// example is a command line of a command's Examples, after a comment
// that says what it does.
type example struct{ what, line string }

// examples are the Examples -h shows first, by command path: lines to
// paste, each run by TestHelpExamples (against a SQLite file, or through
// `config COMMAND` where the command would not return).
var examples = map[string][]example{
	"run": {
		{"what a pass would delete, deleting nothing (the DSN, password and all, from the environment)",
			"export TQSCAVENGER_DB='postgres://temporal:PASSWORD@db.example:5432/temporal?sslmode=require'\ntqscavenger run --dry-run"},
		{"a pass with the settings of a file (see tqscavenger config run)", "tqscavenger run --config tqscavenger.yaml"},
		{"also the tasks of closed workflows, at most 5000 deletes a second",
			"tqscavenger run --closed-workflows --max-deletes-per-second 5000"},
		{"from cron: resume where the last run stopped; a lock held by another tqscavenger exits 0",
			"tqscavenger run --checkpoint /var/lib/tqscavenger/run.checkpoint --lock-held-ok"},
	},
	"serve": {
		{"a pass every 12h, the status page and /metrics on port 9464 (the DSN from TQSCAVENGER_DB)",
			"tqscavenger serve --listen :9464"},
		{"the settings of a file, which SIGHUP re-reads; a pass every 6h, the first at start",
			"tqscavenger serve --config /etc/tqscavenger/tqscavenger.yaml --every 6h --run-at-start"},
		{"at 03:17 each night, local time, deleting nothing", "tqscavenger serve --cron '17 3 * * *' --dry-run"},
	},
	"worker": {
		{"run passes as Temporal activities (the DSN from TQSCAVENGER_DB)",
			"tqscavenger worker --temporal-address temporal-frontend:7233 --temporal-namespace default"},
		{"Temporal's address, namespace and TLS from the temporal CLI's profile prod",
			"tqscavenger worker --temporal-profile prod --listen :9465"},
	},
	"schedule create": {
		{"a Temporal Schedule: a pass every 12h as 4 partition activities (the DSN from TQSCAVENGER_DB)",
			"tqscavenger schedule create --temporal-address temporal-frontend:7233 --partitions 4"},
		{"the settings of the worker's file; every 6h, at most 2000 deletes a second",
			"tqscavenger schedule create --config tqscavenger.yaml --every 6h --max-deletes-per-second 2000"},
	},
	"report": {
		{"what each mode would delete, read-only (the DSN from TQSCAVENGER_DB)", "tqscavenger report"},
		{"Temporal's dev server's SQLite file, with the closed-workflow rule, as JSON",
			"tqscavenger report --db temporal.db --closed-workflows -o json"},
	},
	"schema check": {
		{"can tqscavenger scavenge this database? (tables, grants; read-only)",
			"tqscavenger schema check --config tqscavenger.yaml"},
	},
	"config": {
		{"the settings serve would run with, and where each came from", "tqscavenger config --config tqscavenger.yaml"},
		{"run's, with a flag of its own", "tqscavenger config run --workers 8"},
	},
}

// writeExamples writes c's examples, if it has any.
func writeExamples(w io.Writer, c *cobra.Command) {
	ex := examples[commandPath(c)]
	if len(ex) == 0 {
		return
	}
	fmt.Fprintln(w, "\nExamples:")
	for _, e := range ex {
		fmt.Fprintf(w, "  # %s\n", e.what)
		for _, l := range strings.Split(e.line, "\n") {
			fmt.Fprintf(w, "  %s\n", l)
		}
	}
}

// commandPath is c's path without the program's name: "schedule create".
func commandPath(c *cobra.Command) string {
	return strings.TrimPrefix(c.CommandPath(), c.Root().Name()+" ")
}

// groupBlurbs say, in -h's last line, what the flags of a group it leaves
// out are about.
var groupBlurbs = map[string]string{
	groupConn:     "TLS, temporal-sql-tool's connection flags",
	groupTemporal: "Temporal TLS",
	groupScope:    "more rules and scope",
	groupCount:    "more rules",
	groupPace:     "pace tuning",
	groupDaemon:   "daemon tuning",
	groupSchedule: "schedule tuning",
	groupOutput:   "more output",
	groupOther:    "other",
}

// writeMoreFlags writes -h's last line: how many flags it left out, what
// they are about, and where they all are.
func writeMoreFlags(w io.Writer, c *cobra.Command) {
	n, groups := reference(c.Flags())
	if n == 0 {
		return
	}
	about := make([]string, len(groups))
	for i, g := range groups {
		about[i] = groupBlurbs[g]
	}
	noun := "flags"
	if n == 1 {
		noun = "flag"
	}
	// The command line is kept on one line, to be pasted: its spaces are
	// NULs while the text is wrapped.
	cmd := strings.ReplaceAll("tqscavenger "+commandPath(c)+" --help-all", " ", "\x00")
	var b strings.Builder
	writeWrapped(&b, "", fmt.Sprintf("%d more %s (%s): %s, or docs/running.md.", n, noun, strings.Join(about, ", "), cmd), helpWidth)
	io.WriteString(w, strings.ReplaceAll(b.String(), "\x00", " "))
}

// helpAllAsked reports whether args ask for every flag: --help-all (or
// -help-all) before any "--".
func helpAllAsked(args []string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "--help-all", "-help-all":
			return true
		}
	}
	return false
}

// helpAllOf returns the command whose help --help-all asks for: found,
// or the command `help COMMAND` names.
func helpAllOf(root, found *cobra.Command, args []string) *cobra.Command {
	if found.Parent() == root && found.Name() == "help" && len(args) > 1 {
		if c, _, err := root.Find(args[1:]); err == nil {
			return c
		}
	}
	return found
}
