package bench

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/tqscavenger/tqscavenger/sqlstore"
)

var liveColumns = []string{"phase", "pass flags", "samples", "p50", "p99", "max", "lock wait p99", "ops/s", "p99 ÷ no pass", "pass time", "pass ÷ default"}

// dbColumn is a database-side column of the live-load table (livecost.go).
type dbColumn struct {
	name string
	// pick is the figure; format prints a value of it.
	pick   func(LiveDB) LiveDBFigure
	format string
	// pass: the figure is the pass's, "—" in the no-pass phase.
	pass bool
}

// dbColumns are engine e's database-side columns, after "p99 ÷ no pass".
func dbColumns(e sqlstore.Engine) []dbColumn {
	if e == sqlstore.SQLite {
		return []dbColumn{
			{name: "write lock %", pick: func(d LiveDB) LiveDBFigure { return scaled(d.WriteLock, 100) }, format: "%.1f", pass: true},
			{name: "busy ops", pick: func(d LiveDB) LiveDBFigure { return d.BusyOps }, format: "%.0f"},
			{name: "failed ops", pick: func(d LiveDB) LiveDBFigure { return d.FailedOps }, format: "%.0f"},
		}
	}
	log := "WAL MB over no pass"
	if e == sqlstore.MySQL {
		log = "redo MB over no pass"
	}
	cols := []dbColumn{
		{name: "pass CPU s", pick: func(d LiveDB) LiveDBFigure { return d.PassCPU }, format: "%.2f", pass: true},
		{name: "server CPU s over no pass", pick: func(d LiveDB) LiveDBFigure { return d.ServerCPU }, format: "%.2f", pass: true},
		{name: log, pick: func(d LiveDB) LiveDBFigure { return d.LogMB }, format: "%.1f", pass: true},
		{name: "blocked s", pick: func(d LiveDB) LiveDBFigure { return d.Blocked }, format: "%.2f", pass: true},
		{name: "CPU wait s over no pass", pick: func(d LiveDB) LiveDBFigure { return d.RunDelay }, format: "%.2f", pass: true},
	}
	if e == sqlstore.Postgres {
		cols = append(cols, dbColumn{name: "WAL wait s over no pass", pick: func(d LiveDB) LiveDBFigure { return d.WALWait }, format: "%.2f", pass: true})
	}
	return cols
}

// scaled is f with every value times k.
func scaled(f LiveDBFigure, k float64) LiveDBFigure {
	out := LiveDBFigure{Median: f.Median * k, Why: f.Why}
	for _, v := range f.Rounds {
		out.Rounds = append(out.Rounds, v*k)
	}
	return out
}

// dbCell prints column c of phase figures figs (one per repetition): the
// median over the repetitions of each one's median over its rounds, and
// "(min–max)" over every round when they differ; "n/a" when no round
// measured it, its reason added to notes.
func dbCell(c dbColumn, figs []LiveFigure, notes *[]string) string {
	if c.pass && figs[0].Phase == LiveNone {
		return "—"
	}
	var meds, all []float64
	for _, f := range figs {
		d := c.pick(f.DB)
		if d.Why != "" {
			note := fmt.Sprintf("%s, %s: n/a in some rounds: %s", c.name, f.Phase, d.Why)
			if !d.ok() {
				note = fmt.Sprintf("%s, %s: n/a: %s", c.name, f.Phase, d.Why)
			}
			if !slices.Contains(*notes, note) {
				*notes = append(*notes, note)
			}
		}
		if d.ok() {
			meds = append(meds, d.Median)
			all = append(all, d.Rounds...)
		}
	}
	if len(meds) == 0 {
		if note := fmt.Sprintf("%s, %s: n/a: no round of the phase was measured", c.name, figs[0].Phase); !slices.ContainsFunc(*notes, func(n string) bool {
			return strings.HasPrefix(n, fmt.Sprintf("%s, %s: n/a", c.name, figs[0].Phase))
		}) {
			*notes = append(*notes, note)
		}
		return "n/a"
	}
	cell := fmt.Sprintf(c.format, medianOf(meds))
	lo, hi := fmt.Sprintf(c.format, slices.Min(all)), fmt.Sprintf(c.format, slices.Max(all))
	if lo != hi {
		cell += " (" + lo + "–" + hi + ")"
	}
	return cell
}

// PrintLive writes the live-load report: a table per engine, each figure
// the median over the repetitions, each ratio the median of the ratios
// within one repetition. Each table's title names its topology, and its
// notes the server and what each process ran on.
func PrintLive(w io.Writer, rep *LiveReport, markdown bool) {
	for i, le := range rep.Engines {
		if i > 0 {
			fmt.Fprintln(w)
		}
		title := fmt.Sprintf("%s live load, %s %s, %s workload offered %s", le.Engine, le.Case.Name, le.Case.Size(), rep.Options.Workload, offeredText(rep.Options))
		if rep.Repeat > 1 {
			title += fmt.Sprintf(", median of %d", rep.Repeat)
		}
		title += ", " + topologyTitle(le.Server)
		if markdown {
			fmt.Fprintf(w, "### %s\n\n", title)
		} else {
			fmt.Fprintf(w, "== %s ==\n", title)
		}
		if len(le.Reps) == 0 {
			fmt.Fprintf(w, "not measured: %v\n", le.Err)
			continue
		}
		var rows [][]string
		cols := slices.Clone(liveColumns)
		dbCols := dbColumns(le.Engine)
		at := slices.Index(cols, "p99 ÷ no pass") + 1
		for k, c := range dbCols {
			cols = slices.Insert(cols, at+k, c.name)
		}
		var dbNotes []string
		for j := range le.Reps[0] {
			figs := column(le.Reps, j)
			ph := figs[0].Phase
			pick := func(f func(LiveFigure) time.Duration) time.Duration {
				var ds []time.Duration
				for _, fig := range figs {
					ds = append(ds, f(fig))
				}
				return quantile(ds, 0.5)
			}
			ratio := func(num, den func(LiveFigure) float64, ref int) string {
				var rs []float64
				for _, figs := range le.Reps {
					if j < len(figs) && ref < len(figs) && den(figs[ref]) > 0 && figs[j].Err == nil && figs[ref].Err == nil {
						rs = append(rs, num(figs[j])/den(figs[ref]))
					}
				}
				if len(rs) == 0 {
					return "—"
				}
				slices.Sort(rs)
				return fmt.Sprintf("%.2f", rs[(len(rs)-1)/2])
			}
			p99 := func(f LiveFigure) float64 { return f.P99.Seconds() }
			wall := func(f LiveFigure) float64 { return f.Pass.Wall.Seconds() }
			var samples, rates []float64
			failed := false
			timedOut := false
			for _, f := range figs {
				samples = append(samples, float64(f.Samples))
				rates = append(rates, f.Rate)
				failed = failed || f.Err != nil
				timedOut = timedOut || f.Pass.TimedOut
			}
			slices.Sort(samples)
			slices.Sort(rates)
			flags := strings.Join(figs[0].Args, " ")
			if flags == "" && ph != LiveNone {
				flags = "(defaults)"
			}
			passTime, passRatio, p99Ratio := "—", "—", "—"
			if ph != LiveNone {
				passTime = round(pick(func(f LiveFigure) time.Duration { return f.Pass.Wall })).String()
				if timedOut {
					passTime = "> " + passTime + " (stopped)"
				}
				passRatio = ratio(wall, wall, 1)
				p99Ratio = ratio(p99, p99, 0)
			}
			lockP99 := roundFine(pick(func(f LiveFigure) time.Duration { return f.LockP99 })).String()
			if rep.Options.Workload == WorkloadPgbench {
				lockP99 = "—" // pgbench times whole transactions only
			}
			status := ""
			if failed {
				status = " (failed)"
			}
			row := []string{
				string(ph) + status, flags, thousands(int64(samples[(len(samples)-1)/2])),
				roundFine(pick(func(f LiveFigure) time.Duration { return f.P50 })).String(),
				roundFine(pick(func(f LiveFigure) time.Duration { return f.P99 })).String(),
				roundFine(pick(func(f LiveFigure) time.Duration { return f.Max })).String(),
				lockP99,
				fmt.Sprintf("%.0f", rates[(len(rates)-1)/2]),
				p99Ratio,
			}
			for _, c := range dbCols {
				row = append(row, dbCell(c, figs, &dbNotes))
			}
			rows = append(rows, append(row, passTime, passRatio))
		}
		writeRows(w, cols, rows, markdown)
		wlNote := fmt.Sprintf("workload: %d queues, %d connections; capacity %.0f operations/s closed loop with no pass; offered %.0f/s open loop (%s)", rep.Options.Queues, connsOf(le, rep.Options), le.Capacity, le.Offered, offeredText(rep.Options))
		if rep.Options.Workload == WorkloadPgbench {
			wlNote = fmt.Sprintf("workload: pgbench, %d queues, %d clients; an operation is one transaction: read %d tasks of one queue, then lease another (SELECT … FOR UPDATE, UPDATE range_id) and append %d tasks; capacity %.0f transactions/s closed loop with no pass; offered %.0f/s open loop with --rate (%s), latency from the scheduled start (pgbench's log, schedule lag included)",
				rep.Options.Queues, rep.Options.Conns, pgbenchRead, pgbenchAppend, le.Capacity, le.Offered, offeredText(rep.Options))
		}
		if m := mixText(rep.Options.Workload); m != "" {
			wlNote += "; " + m
		}
		notes := append(topologyNotes(le), wlNote, dbNote(le))
		notes = append(notes, dbNotes...)
		notes = append(notes,
			fmt.Sprintf("rate limits: %.0f rows/s and %.0f statements/s, a quarter of the first default pass's", le.MaxDeletes, le.MaxStatements),
			"load average at the start of each repetition: "+strings.Join(le.Load, "; "),
		)
		for _, ws := range le.Warnings {
			notes = append(notes, "warning: "+ws)
		}
		if le.Err != nil {
			notes = append(notes, "error: "+le.Err.Error())
		}
		fmt.Fprintln(w)
		for _, n := range notes {
			if markdown {
				fmt.Fprintln(w, "- "+n)
			} else {
				fmt.Fprintln(w, n)
			}
		}
	}
}

// topologyTitle names the table's topology, and in the production one
// its CPUs.
func topologyTitle(s LiveServer) string {
	if s.Topology == TopologyProduction {
		return fmt.Sprintf("production topology (database and workload on CPU %d, passes on CPU %d)", s.DBCPU, s.PassCPU)
	}
	return "shared topology (nothing pinned)"
}

// topologyNotes say where each process ran: the topology, the server
// and its settings, and what /proc said each process could run on.
func topologyNotes(le LiveEngine) []string {
	s := le.Server
	server := "SQLite: the database is the workload's process"
	switch {
	case s.Own:
		server = fmt.Sprintf("the lab's own server on %s, started for the run", s.Addr)
	case s.Addr != "":
		server = "the server at " + s.Addr
	}
	var where string
	if s.Topology == TopologyProduction {
		where = fmt.Sprintf("topology: production, as when tqscavenger runs in a pod of its own: CPU %d runs the server and the workload's client, CPU %d each pass (its measure wrapper and the binary under test); capacity measured so", s.DBCPU, s.PassCPU)
		if le.Engine == sqlstore.SQLite {
			where = fmt.Sprintf("topology: production, as when tqscavenger runs in a pod of its own: CPU %d runs the workload, whose process the database is, CPU %d each pass (its measure wrapper and the binary under test); capacity measured so", s.DBCPU, s.PassCPU)
		}
	} else {
		where = "topology: shared: the server, the workload and each pass share the machine's CPUs, nothing pinned, so a pass's own CPU counts against the workload"
	}
	notes := []string{where, "server: " + server}
	if s.Settings != "" {
		notes[1] += "; " + s.Settings
	}
	var read []string
	for _, p := range s.Pinned {
		got := strings.Join(p.Got, " then ")
		if got == "" {
			got = "unknown"
		}
		mark := ""
		if !p.pinned() {
			mark = fmt.Sprintf(" (NOT pinned: want %s)", p.Want)
		}
		read = append(read, fmt.Sprintf("%s on %s%s", p.label(), cpusText(got), mark))
	}
	if len(read) > 0 {
		notes = append(notes, "CPUs each process could run on, read from /proc at every round: "+strings.Join(read, "; "))
	}
	return notes
}

// cpusText is "CPU 0" for one CPU, "CPUs 0-1" for a list.
func cpusText(list string) string {
	if strings.ContainsAny(list, ",-; ") {
		return "CPUs " + list
	}
	return "CPU " + list
}

// offeredText says what the phases were offered: a share of the capacity
// measured, or the rate given, which wins.
func offeredText(o LiveOptions) string {
	if o.Rate > 0 {
		return fmt.Sprintf("%.0f operations/s (--live-rate)", o.Rate)
	}
	return fmt.Sprintf("%.2g × capacity", o.Share)
}

func connsOf(le LiveEngine, o LiveOptions) int {
	if le.Engine == "sqlite" {
		return 1
	}
	return o.Conns
}

// column returns the figures of phase j across repetitions.
func column(reps [][]LiveFigure, j int) []LiveFigure {
	var out []LiveFigure
	for _, figs := range reps {
		if j < len(figs) {
			out = append(out, figs[j])
		}
	}
	return out
}

// writeRows writes a table as Markdown or aligned plain text.
func writeRows(w io.Writer, cols []string, rows [][]string, markdown bool) {
	if markdown {
		fmt.Fprintln(w, "| "+strings.Join(cols, " | ")+" |")
		fmt.Fprintln(w, "|"+strings.Repeat("---|", len(cols)))
		for _, r := range rows {
			fmt.Fprintln(w, "| "+strings.Join(r, " | ")+" |")
		}
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(cols, "\t"))
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	tw.Flush()
}

// mixText says what the lab workload wl's operations are ("" for
// another workload).
func mixText(wl LiveWorkload) string {
	mix := mixOf(wl)
	if mix == nil {
		return ""
	}
	var ops []string
	for _, k := range mix {
		ops = append(ops, k.String())
	}
	return fmt.Sprintf("%s mix, each queue's operations over and over: %s", wl, strings.Join(ops, ", "))
}

// dbNote says what the database-side columns are, and the no-pass
// phase's rates they are over.
func dbNote(le LiveEngine) string {
	how := "database side (a sampler beside each round's pass, lab/bench/dbcost.go): each figure the median over the repetitions of a phase's median over its rounds, (min–max) over every round; "
	if le.Engine == sqlstore.SQLite {
		return how + "write lock % is the share of the pass's time it held the database's write lock (/proc/locks, sampled every " + sqliteInterval.String() + "); busy ops are the workload's operations due within it that failed on SQLITE_BUSY, failed ops those that failed at all"
	}
	log, every := "the WAL written (pg_current_wal_insert_lsn)", costInterval
	if le.Engine == sqlstore.MySQL {
		log, every = "the InnoDB redo log written (Innodb_os_log_written)", myWaitsInterval
	}
	note := how + "pass CPU s is the CPU time of the server's processes or threads serving the pass's sessions; server CPU s is the whole server's CPU time, and MB (10⁶ bytes) " + log +
		", beyond the no-pass phase's rate over the pass's time; blocked s is the time other sessions waited on a lock a pass session held (sampled every " + every.String() + "); CPU wait s is the time the server's processes or threads other than the pass's waited for a CPU (/proc/…/schedstat), beyond the no-pass rate"
	if le.Engine == sqlstore.Postgres {
		note += "; WAL wait s is the time the other sessions spent active waiting on the WAL (LWLock WALInsert/WALWrite, IO WALSync/WALWrite…, pg_stat_activity sampled every " + costInterval.String() + "), beyond the no-pass rate"
	}
	var cpu, logRate []float64
	for _, figs := range le.Reps {
		for _, f := range figs {
			if f.Phase != LiveNone {
				continue
			}
			c, l := baseRate(f, "ServerCPU", serverCPU), baseRate(f, "WALBytes", walBytes)
			if c.ok() {
				cpu = append(cpu, c.Median)
			}
			if l.ok() {
				logRate = append(logRate, l.Median)
			}
		}
	}
	if len(cpu) > 0 {
		note += fmt.Sprintf("; no pass: the server used %.2f s of CPU per second", medianOf(cpu))
	}
	if len(logRate) > 0 {
		note += fmt.Sprintf(" and wrote %.2f MB of log per second", medianOf(logRate)/1e6)
	}
	return note
}
