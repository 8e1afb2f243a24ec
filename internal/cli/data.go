package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/tqscavenger/tqscavenger/report"
	"github.com/tqscavenger/tqscavenger/scavenger"
	"github.com/tqscavenger/tqscavenger/seed"
	"github.com/tqscavenger/tqscavenger/sqlstore"
	"github.com/tqscavenger/tqscavenger/store"
	"github.com/tqscavenger/tqscavenger/wire"
)

// The bounds of seed's counts (issue 39's finding 5): a subqueue's task
// kinds are held in memory, 8 MB at maxSeedTasks; a queue's subqueues are
// in its row (Temporal's priority levels are a handful); the rows of one
// run, which take hours and tens of GB at the bound, are beyond any
// benchmark here (the lab's largest is a few million).
const (
	maxSeedQueues    = 10_000_000
	maxSeedTasks     = 1_000_000
	maxSeedSubqueues = 100
	maxSeedRows      = 1_000_000_000
)

func seedFlags(g *flagGroups) runFunc {
	var (
		dsn                string
		spec               seed.Spec
		expired, noExpiry  float64
		layout, table, ns  string
		idle               time.Duration
		setup, force       bool
		queues, tasks, sub int
	)
	g.Conn.StringVar(&dsn, "db", "", "database DSN (a missing SQLite file is created); never read from TQSCAVENGER_DB")
	w := g.Write
	w.IntVar(&queues, "queues", 100, "number of queues (at most 10,000,000; queues × tasks × subqueues at most 1,000,000,000)")
	w.IntVar(&tasks, "tasks", 100, "tasks per queue and subqueue (at most 1,000,000)")
	w.Float64Var(&expired, "expired", 0.5, "share of tasks already expired (0..1)")
	w.Float64Var(&noExpiry, "no-expiry", 0.25, "share of tasks that never expire (0..1); the rest expire in an hour")
	w.StringVar(&layout, "layout", string(seed.ExpiredFirst), "where expired tasks sit: expired-first, live-first or shuffled")
	durationVar(w, &idle, "idle", 72*time.Hour, "age of each queue's last_update_time")
	w.IntVar(&sub, "subqueues", 1, "subqueues per queue (priority levels; at most 100)")
	w.StringVar(&table, "tables", "v1", "table versions to write: v1, v2 or all (both)")
	w.StringVar(&spec.NamePrefix, "name-prefix", "seed", "queue names are PREFIX-0, PREFIX-1, …")
	w.StringVar(&ns, "namespace", seed.DefaultNamespace.String(), "namespace id (UUID)")
	w.BoolVar(&setup, "setup", true, "create the task tables first if they do not exist")
	w.BoolVar(&force, "force", false, "write even into a database that holds queues of other names (never a production database)")
	alias(w, "table", "tables")
	return func(ctx context.Context, inv *invocation) error {
		return seedCmd(ctx, inv.env, dsn, spec, expired, noExpiry, layout, table, ns, idle, setup, force, queues, tasks, sub)
	}
}

func seedCmd(ctx context.Context, e *env, dsn string, spec seed.Spec, expired, noExpiry float64, layout, table, ns string, idle time.Duration, setup, force bool, queues, tasks, sub int) error {
	if queues < 0 || tasks < 0 || sub < 1 {
		return usagef("--queues and --tasks must be >= 0 and --subqueues >= 1")
	}
	// Bounded before anything is allocated or written: seed holds a
	// subqueue's task kinds (8 bytes a task) and a queue's subqueues in
	// memory, and a count past these ran out of memory (exit 2, as bad
	// input) instead of being refused.
	switch {
	case queues > maxSeedQueues:
		return usagef("--queues %d: at most %d", queues, maxSeedQueues)
	case tasks > maxSeedTasks:
		return usagef("--tasks %d: at most %d tasks per queue and subqueue", tasks, maxSeedTasks)
	case sub > maxSeedSubqueues:
		return usagef("--subqueues %d: at most %d", sub, maxSeedSubqueues)
	case queues*tasks*sub > maxSeedRows:
		return usagef("--queues %d × --tasks %d × --subqueues %d: %d task rows, more than the %d allowed", queues, tasks, sub, queues*tasks*sub, maxSeedRows)
	}
	if expired < 0 || noExpiry < 0 || expired+noExpiry > 1 {
		return usagef("--expired %.2f and --no-expiry %.2f must be shares within 0..1 that add up to at most 1", expired, noExpiry)
	}
	switch seed.Layout(layout) {
	case seed.ExpiredFirst, seed.LiveFirst, seed.Shuffled:
	default:
		return usagef("--layout %q: use expired-first, live-first or shuffled", layout)
	}
	var tables []store.Table
	switch table {
	case "v1":
		tables = []store.Table{store.V1}
	case "v2":
		tables = []store.Table{store.V2}
	case "all":
		tables = []store.Table{store.V1, store.V2}
	default:
		return usagef("--tables %q: use v1, v2 or all", table)
	}
	nsID, err := wire.ParseNamespaceID(ns)
	if err != nil {
		return usagef("--namespace: %v", err)
	}
	spec.Namespace, spec.Queues, spec.TasksPerQueue, spec.Subqueues = nsID, queues, tasks, sub
	spec.Expired, spec.NoExpiry, spec.Layout, spec.IdleAge = expired, noExpiry, seed.Layout(layout), idle
	db, err := open(ctx, dsn, sqlstore.Options{Create: true})
	if err != nil {
		return err
	}
	defer db.Close()
	if setup {
		if err := db.Setup(ctx); err != nil {
			return err
		}
	} else if _, err := db.Check(ctx); err != nil {
		return err
	}
	prefix := cmp.Or(spec.NamePrefix, "seed") + "-"
	foreign, own, err := scanQueues(ctx, db, prefix, nsID, tables)
	if err != nil {
		return err
	}
	if foreign != "" && !force {
		return usagef("%s holds queue %q, which seed did not write: pass --force to write into it anyway (never into a database a Temporal server uses)", db.DSN(), foreign)
	}
	if own != "" {
		// Its rows would collide with the ones there: say so, instead of
		// the database's unique-key error.
		return usagef("%s already holds queue %q of --name-prefix %q: seed writes new queues only; pick another --name-prefix (or --namespace), or start from a new file", db.DSN(), own, strings.TrimSuffix(prefix, "-"))
	}
	start := time.Now()
	var res seed.Result
	for _, t := range tables {
		spec.Table = t
		r, err := seed.Write(ctx, db, spec)
		if err != nil {
			return err
		}
		res.Queues, res.Tasks, res.Expired, res.NoExpiry, res.Future = res.Queues+r.Queues, res.Tasks+r.Tasks, res.Expired+r.Expired, res.NoExpiry+r.NoExpiry, res.Future+r.Future
	}
	fmt.Fprintf(e.stdout, "seeded %d queues, %d tasks (%d expired, %d never expire, %d expire later) into %s in %s\n",
		res.Queues, res.Tasks, res.Expired, res.NoExpiry, res.Future, db.DSN(), time.Since(start).Round(time.Millisecond))
	return nil
}

// demoPath is where demo writes unless told otherwise.
const demoPath = "tqscavenger-demo.db"

func demoFlags(g *flagGroups) runFunc {
	var path string
	var lf logFlags
	// Never from TQSCAVENGER_DB, which names the database run and serve
	// scavenge.
	g.Conn.StringVar(&path, "db", demoPath, "SQLite file to create (an existing demo file is replaced); never read from TQSCAVENGER_DB")
	lf.register(g.Output)
	return func(ctx context.Context, inv *invocation) error {
		if inv.origins["log-level"].layer == fromDefault {
			// The demo's output is its tables: the pass's INFO lines would
			// land between them on a terminal. Warnings still show.
			lf.level = "warn"
		}
		return demoCmd(ctx, inv.env, path, &lf)
	}
}

// demoHint is the demo's last line: how to look at the file and rerun a
// pass, with the tools at hand: sqlite3 only where it is installed, and
// `go run` only where the demo itself runs under go run.
func demoHint(path string) string {
	var parts []string
	if _, err := exec.LookPath("sqlite3"); err == nil {
		parts = append(parts, fmt.Sprintf("Inspect the file: sqlite3 %s 'SELECT count(*) FROM tasks'", path))
	}
	parts = append(parts, fmt.Sprintf("rerun: %s run --db %s --dry-run", selfCommand(), path))
	return strings.Join(parts, "   or ")
}

// selfCommand is how the user ran this program: `go run ./cmd/tqscavenger`
// for a binary go run built (in its go-build temporary directory), else
// the name it was run by.
func selfCommand() string {
	exe := os.Args[0]
	if strings.Contains(filepath.ToSlash(exe), "/go-build") {
		return "go run ./cmd/tqscavenger"
	}
	return exe
}

func demoCmd(ctx context.Context, e *env, path string, lf *logFlags) error {
	if d, err := sqlstore.ParseDSN(path); err != nil || d.Engine != sqlstore.SQLite || strings.Contains(path, "@") {
		return usagef("--db %s: demo creates a SQLite file: give a file path", sqlstore.Redact(path))
	}
	log, err := lf.logger(e.stderr)
	if err != nil {
		return err
	}
	if _, err := os.Stat(path); err == nil {
		if path != demoPath {
			return usagef("%s exists: demo creates a fresh file; remove it or pick another --db", path)
		}
		for _, p := range []string{path, path + "-wal", path + "-shm"} {
			if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
		}
	}
	db, err := sqlstore.Open(ctx, "sqlite:"+path, sqlstore.Options{Create: true})
	if err != nil {
		return err
	}
	defer db.Close()
	if err := db.Setup(ctx); err != nil {
		return err
	}
	now := time.Now()
	var total seed.Result
	for _, s := range demoData(now) {
		res, err := seed.Write(ctx, db, s)
		if err != nil {
			return err
		}
		total.Queues += res.Queues
		total.Tasks += res.Tasks
	}
	fmt.Fprintf(e.stdout, "Created %s: %d task queues, %d tasks in Temporal's tables and format.\n\nBefore:\n", path, total.Queues, total.Tasks)
	before, err := report.Take(ctx, db, report.Options{Now: now})
	if err != nil {
		return err
	}
	before.WriteText(e.stdout)

	cfg := scavenger.Config{Hooks: scavenger.Hooks{Now: func() time.Time { return now }, Logger: log}}
	// Lock-free on purpose (scavenger.NewUnlocked): nothing else has the
	// file demo just created open.
	st, err := scavenger.NewUnlocked(db, cfg).Run(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintln(e.stdout, "\nScavenger pass:")
	printSummary(e.stdout, st)
	after, err := report.Take(ctx, db, report.Options{Now: now})
	if err != nil {
		return err
	}
	fmt.Fprintln(e.stdout, "\nAfter:")
	after.WriteText(e.stdout)
	fmt.Fprintf(e.stdout, "\nEvery expired task is gone, every live one is still there, and idle empty queues are deleted.\n%s\n", demoHint(path))
	return nil
}

// demoData is a small, realistic mix: busy queues with an expired backlog
// ahead of live work, idle queues that only hold expired tasks, recently
// used queues, empty idle queues, and workflow queues whose tasks never
// expire.
func demoData(now time.Time) []seed.Spec {
	return []seed.Spec{
		{NamePrefix: "orders-activities", Queues: 20, TasksPerQueue: 200, Expired: 0.6, NoExpiry: 0.2, IdleAge: 72 * time.Hour, Now: now},
		{NamePrefix: "billing-abandoned", Queues: 10, TasksPerQueue: 150, Expired: 1, IdleAge: 96 * time.Hour, Now: now},
		{NamePrefix: "email-recent", Queues: 10, TasksPerQueue: 100, Expired: 1, IdleAge: time.Hour, Now: now},
		{NamePrefix: "reports-empty", Queues: 5, TasksPerQueue: 0, IdleAge: 100 * time.Hour, Now: now},
		{NamePrefix: "orders-workflows", TaskType: wire.TaskTypeWorkflow, Queues: 10, TasksPerQueue: 50, NoExpiry: 1, IdleAge: 72 * time.Hour, Now: now},
		// Priority levels: tasks in subqueues 1 and 2, which Temporal's
		// scavenger never visits.
		{NamePrefix: "payments-priority", Queues: 5, Subqueues: 3, TasksPerQueue: 80, Expired: 1, IdleAge: 80 * time.Hour, Now: now},
		// Fairness tables (task_queues_v2 / tasks_v2), also never visited
		// by Temporal's scavenger.
		{Table: store.V2, NamePrefix: "fair-activities", Queues: 8, Subqueues: 2, TasksPerQueue: 100, Expired: 0.5, NoExpiry: 0.3, IdleAge: 72 * time.Hour, Now: now},
	}
}

// schemaFlags are the flags of schema setup and schema check.
func schemaFlags(sub string) func(g *flagGroups) runFunc {
	return func(g *flagGroups) runFunc {
		var cf connFlags
		var stmtTO time.Duration
		var output string
		cf.register(g.Conn)
		durationVar(g.Pace, &stmtTO, "statement-timeout", 0, "bound on each statement (default 30s for the check)")
		if sub == "check" {
			outputFlag(g.Output, &output, "what the check found: text or json")
		}
		configFlag(g.Other)
		return func(ctx context.Context, inv *invocation) error { return schemaCmd(ctx, inv, sub, &cf, stmtTO, output) }
	}
}

func schemaCmd(ctx context.Context, inv *invocation, sub string, cf *connFlags, stmtTO time.Duration, output string) error {
	e := inv.env
	if sub == "check" {
		if err := checkOutput(output); err != nil {
			return err
		}
	}
	if stmtTO < 0 {
		return usagef("--statement-timeout %s: must not be negative", stmtTO)
	}
	db, err := cf.open(ctx, inv.fs, inv.origins, sqlstore.Options{Create: sub == "setup", StatementTimeout: stmtTO}, stderrWarn(e, "schema "+sub))
	if err != nil {
		return err
	}
	defer db.Close()
	if sub == "setup" {
		if err := db.Setup(ctx); err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "created Temporal's task tables (task_queues, tasks, task_queues_v2, tasks_v2) in %s\n", db.DSN())
		return nil
	}
	info, err := db.Check(ctx)
	if err != nil && !errors.Is(err, store.ErrSchema) {
		// The check did not finish (a lock wait, a timeout, a signal): what
		// it found so far says nothing.
		return err
	}
	if output == "json" {
		if werr := writeJSON(e.stdout, schemaJSON(info, err == nil)); werr != nil {
			return werr
		}
		return err
	}
	fmt.Fprint(e.stdout, info)
	if err != nil {
		return err
	}
	fmt.Fprintln(e.stdout, "ok: tqscavenger can scavenge this database")
	return nil
}

// schemaJSON is what schema check found, for --output json.
func schemaJSON(info store.SchemaInfo, ok bool) map[string]any {
	tables := map[string]bool{}
	for _, t := range []store.Table{store.V1, store.V2} {
		tables[t.String()] = slices.Contains(info.Tables, t)
	}
	return map[string]any{
		"engine":         info.Engine,
		"schema_version": info.Version,
		"tables":         tables,
		"problems":       append([]string{}, info.Problems...),
		"ok":             ok,
	}
}

// scanQueues reads the queue rows of db. foreign is the first that seed
// did not write: seed writes in its own namespace (seed.DefaultNamespace,
// an id no Temporal server makes), or in the --namespace given with
// queues named PREFIX-N; anything else stands for a Temporal server's
// data. own is the first queue of tables that the rows seed is about to
// write would collide with: of ns, named with prefix.
func scanQueues(ctx context.Context, db *sqlstore.DB, prefix string, ns wire.NamespaceID, tables []store.Table) (foreign, own string, err error) {
	present, err := db.Tables(ctx)
	if err != nil {
		return "", "", err
	}
	for _, t := range present {
		var after *store.QueueKey
		for {
			rows, err := db.ListQueues(ctx, t, after, 1000)
			if err != nil {
				return "", "", err
			}
			for _, r := range rows {
				qns, name, _, err := wire.ParseQueueRowID(r.ID)
				mine := err == nil && (qns == seed.DefaultNamespace || (qns == ns && strings.HasPrefix(name, prefix)))
				if !mine && foreign == "" {
					foreign = cmp.Or(name, r.QueueKey.String())
				}
				if err == nil && own == "" && qns == ns && strings.HasPrefix(name, prefix) && slices.Contains(tables, t) {
					own = name
				}
			}
			if len(rows) < 1000 {
				break
			}
			after = &rows[len(rows)-1].QueueKey
		}
	}
	return foreign, own, nil
}
