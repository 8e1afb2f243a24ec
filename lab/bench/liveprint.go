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
			rows = append(rows, []string{
				string(ph) + status, flags, thousands(int64(samples[(len(samples)-1)/2])),
				roundFine(pick(func(f LiveFigure) time.Duration { return f.P50 })).String(),
				roundFine(pick(func(f LiveFigure) time.Duration { return f.P99 })).String(),
				roundFine(pick(func(f LiveFigure) time.Duration { return f.Max })).String(),
				lockP99,
				fmt.Sprintf("%.0f", rates[(len(rates)-1)/2]),
				p99Ratio, passTime, passRatio,
			})
		}
		writeRows(w, liveColumns, rows, markdown)
		wlNote := fmt.Sprintf("workload: %d queues, %d connections; capacity %.0f operations/s closed loop with no pass; offered %.0f/s open loop (%s)", rep.Options.Queues, connsOf(le, rep.Options), le.Capacity, le.Offered, offeredText(rep.Options))
		if rep.Options.Workload == WorkloadPgbench {
			wlNote = fmt.Sprintf("workload: pgbench, %d queues, %d clients; an operation is one transaction: read %d tasks of one queue, then lease another (SELECT … FOR UPDATE, UPDATE range_id) and append %d tasks; capacity %.0f transactions/s closed loop with no pass; offered %.0f/s open loop with --rate (%s), latency from the scheduled start (pgbench's log, schedule lag included)",
				rep.Options.Queues, rep.Options.Conns, pgbenchRead, pgbenchAppend, le.Capacity, le.Offered, offeredText(rep.Options))
		}
		notes := append(topologyNotes(le), wlNote)
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
