package bench

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// Print writes the report as a table per engine: plain text aligned in
// columns, or Markdown (for docs/benchmarks.md).
func Print(w io.Writer, rep *Report, markdown bool) {
	scale := "full size"
	if rep.Scale > 1 {
		scale = fmt.Sprintf("sizes divided by %d", rep.Scale)
	}
	if rep.Repeat > 1 {
		scale += fmt.Sprintf(", median of %d runs", rep.Repeat)
	}
	for i, er := range rep.Engines {
		if i > 0 {
			fmt.Fprintln(w)
		}
		if markdown {
			fmt.Fprintf(w, "### %s (%s)\n\n", er.Engine, scale)
		} else {
			fmt.Fprintf(w, "== %s (%s) ==\n", er.Engine, scale)
		}
		if er.Err != nil {
			fmt.Fprintf(w, "not measured: %v\n", er.Err)
			continue
		}
		printTable(w, er, markdown)
		printCompare(w, er, markdown)
		printNotes(w, er, markdown)
	}
}

var columns = []string{"case", "size", "pass", "time", "rows/s", "deleted (tasks + queues)", "statements", "peak RSS", "ratio"}

func printTable(w io.Writer, er EngineReport, markdown bool) {
	var rows [][]string
	for _, cr := range er.Cases {
		first := true
		for _, p := range cr.Passes {
			name, size := "", ""
			if first {
				name, size = cr.Case.Name, cr.Case.Size()
				first = false
			}
			if p.Err != nil {
				rows = append(rows, []string{name, size, p.Name(), "failed", "", "", "", "", ""})
				continue
			}
			rate, wall, deleted := "—", round(p.Wall).String(), thousands(p.Deleted.Tasks)+" + "+thousands(p.Deleted.Queues)
			if p.Deleted.Tasks+p.Deleted.Queues > 0 {
				rate = count64(int64(p.Rate() + 0.5))
			}
			if p.TimedOut {
				wall, deleted = "> "+wall, "stopped after "+deleted
			}
			r := ratio(&cr, p.Pass, p.Binary)
			if cr.Case.Large && p.Pass == PassDefault {
				r = perRow(er, &cr, p.Binary)
			}
			statements := thousands(p.Statements)
			if p.Peer != nil {
				statements = thousands(p.Peer.Calls) + " calls"
			}
			rows = append(rows, []string{name, size, p.Name(), wall, rate, deleted, statements,
				fmt.Sprintf("%.1f MB", mb(p.MaxRSS)), r})
		}
		if len(cr.Passes) == 0 {
			rows = append(rows, []string{cr.Case.Name, cr.Case.Size(), "", "failed", "", "", "", "", ""})
		}
	}
	if markdown {
		fmt.Fprintf(w, "| %s |\n", strings.Join(columns, " | "))
		fmt.Fprintf(w, "|%s\n", strings.Repeat("---|", len(columns)))
		for _, r := range rows {
			fmt.Fprintf(w, "| %s |\n", strings.Join(r, " | "))
		}
		fmt.Fprintln(w)
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(columns, "\t"))
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	tw.Flush()
}

// ratio is the comparison on a pass's row: temporal÷default, default÷raw,
// and past-live-head÷raw where the default stops at a live head, each
// within the passes of one binary under test, bin.
func ratio(cr *CaseReport, p Pass, bin string) string {
	f := func(label string, a, b Pass) string {
		x, y := cr.find(a, bin), cr.find(b, bin)
		if x == nil || y == nil || y.Wall <= 0 || x.TimedOut && y.TimedOut {
			return ""
		}
		bound := "" // a timed-out pass took longer than its Wall
		switch {
		case x.TimedOut:
			bound = "> "
		case y.TimedOut:
			bound = "< "
		}
		return fmt.Sprintf("%s %s%.2f", label, bound, x.Wall.Seconds()/y.Wall.Seconds())
	}
	switch p {
	case PassTemporal:
		return f("temporal÷default", PassTemporal, PassDefault)
	case PassDefault:
		if cr.Case.PastLiveHead {
			return "stops at the live head, as Temporal"
		}
		return both(f("default÷raw", PassDefault, PassRaw), f("÷safe raw", PassDefault, PassSafeRaw))
	case PassPastLiveHead:
		return both(f("past-live-head÷raw", PassPastLiveHead, PassRaw), f("÷safe raw", PassPastLiveHead, PassSafeRaw))
	case PassSafeRaw:
		return f("safe raw÷raw", PassSafeRaw, PassRaw)
	case PassPeer:
		return peerRatio(cr)
	}
	return ""
}

// peerRatio is the peer's comparison: its wall time ÷ each binary's
// default pass's, and in brackets its work time (to its last persistence
// call, without Temporal's executor poll) ÷ the same.
func peerRatio(cr *CaseReport) string {
	peer := cr.find(PassPeer, "")
	if peer == nil {
		return ""
	}
	var out []string
	for _, d := range cr.Passes {
		if d.Pass != PassDefault || d.Err != nil || d.Wall <= 0 || peer.TimedOut && d.TimedOut {
			continue
		}
		name := "default"
		if d.Binary != "" {
			name = d.Binary + " default"
		}
		bound := "" // a timed-out pass took longer than its Wall
		switch {
		case peer.TimedOut:
			bound = "> "
		case d.TimedOut:
			bound = "< "
		}
		r := fmt.Sprintf("peer÷%s %s%.2f", name, bound, peer.Wall.Seconds()/d.Wall.Seconds())
		if peer.Peer != nil && !peer.TimedOut {
			r += fmt.Sprintf(" (work %s, ÷ %.2f)", roundFine(peer.Peer.Work), peer.Peer.Work.Seconds()/d.Wall.Seconds())
		}
		out = append(out, r)
	}
	return strings.Join(out, ", ")
}

// peerNote says what the peer pass is and how its figures differ from
// the others', from what its passes reported.
func peerNote(er EngineReport) string {
	for _, cr := range er.Cases {
		for _, p := range cr.Passes {
			if p.Pass != PassPeer || p.Peer == nil {
				continue
			}
			limit := fmt.Sprintf("at the worker's persistence rate limit of %d calls/s (worker.persistenceMaxQPS, Temporal's default 500)", p.Peer.MaxQPS)
			if p.Peer.MaxQPS == 0 {
				limit = "without the worker's persistence rate limit (Temporal's default is 500 calls/s)"
			}
			return fmt.Sprintf("temporal-peer is Temporal %s's own task queue scavenger (interop/cmd/temporal-scavenger), %s, on the real clock. "+
				"Its time includes Temporal's executor poll (the pass checks once a minute that its queued work is done); "+
				"its work is the time to its last persistence call. Its statements are persistence calls (a page of queues, 16 tasks read or deleted, a queue deleted).",
				p.Peer.Temporal, limit)
		}
	}
	return ""
}

// perRow is a large case's figure: the default pass's time per deleted
// row, and its ratio to all-expired's where that case ran too (the
// issue's "within 20 %": cost grows linearly with the rows).
func perRow(er EngineReport, cr *CaseReport, bin string) string {
	p := cr.find(PassDefault, bin)
	if p == nil || p.TimedOut {
		return ""
	}
	out := fmt.Sprintf("%.0f ns/row", nsPerRow(p))
	for i := range er.Cases {
		base := &er.Cases[i]
		if base.Case.Name != "all-expired" {
			continue
		}
		if b := base.find(PassDefault, bin); b != nil && !b.TimedOut && nsPerRow(b) > 0 {
			out += fmt.Sprintf(", ÷ all-expired %s's %.0f = %.2f", base.Case.Size(), nsPerRow(b), nsPerRow(p)/nsPerRow(b))
		}
	}
	return out
}

// nsPerRow is a pass's wall time per task and queue row deleted.
func nsPerRow(p *PassResult) float64 {
	n := p.Deleted.Tasks + p.Deleted.Queues
	if n == 0 {
		return 0
	}
	return float64(p.Wall.Nanoseconds()) / float64(n)
}

// both joins the ratios that are there.
func both(a, b string) string {
	if a == "" || b == "" {
		return a + b
	}
	return a + ", " + b
}

func printNotes(w io.Writer, er EngineReport, markdown bool) {
	bullet := ""
	if markdown {
		bullet = "- "
	}
	for _, cr := range er.Cases {
		if l := cr.Listing; l != nil {
			r := "n/a (too few pages)"
			if l.Ratio() > 0 {
				r = fmt.Sprintf("%.2f", l.Ratio())
			}
			fmt.Fprintf(w, "%slisting cost per page flat, %s: last 10%% ÷ first 10%% = %s (median page %s → %s; %d pages of %d, %s in all)\n",
				bullet, cr.Case.Name, r, roundFine(l.First), roundFine(l.Last), l.Pages, l.PageSize, round(l.Total))
		}
	}
	var setup []string
	for _, cr := range er.Cases {
		if cr.Seed > 0 {
			setup = append(setup, fmt.Sprintf("%s seeded in %s, a copy took %s", cr.Case.Name, round(cr.Seed), round(cr.Copy)))
		}
	}
	if len(setup) > 0 {
		fmt.Fprintf(w, "%ssetup (not measured): %s\n", bullet, strings.Join(setup, "; "))
	}
	if note := peerNote(er); note != "" {
		fmt.Fprintf(w, "%s%s\n", bullet, note)
	}
	for _, cr := range er.Cases {
		for _, ws := range cr.Warnings {
			fmt.Fprintf(w, "%sWARNING %s: %s\n", bullet, cr.Case.Name, ws)
		}
		for _, p := range cr.Passes {
			if p.Err != nil {
				fmt.Fprintf(w, "%sFAILED %s %s: %v\n", bullet, cr.Case.Name, p.Name(), p.Err)
			}
			if p.TimedOut {
				fmt.Fprintf(w, "%s%s %s was stopped after %s (--pass-timeout)\n", bullet, cr.Case.Name, p.Name(), round(p.Wall))
			}
		}
		if cr.Err != nil {
			fmt.Fprintf(w, "%sFAILED %s: %v\n", bullet, cr.Case.Name, cr.Err)
		}
	}
}

// count formats a size: 1000 as 1k, 1000000 as 1M, others as they are.
func count(n int) string { return count64(int64(n)) }

func count64(n int64) string {
	switch {
	case n >= 1_000_000 && n%1_000_000 == 0:
		return strconv.FormatInt(n/1_000_000, 10) + "M"
	case n >= 1000 && n%1000 == 0:
		return strconv.FormatInt(n/1000, 10) + "k"
	case n >= 1_000_000:
		return strconv.FormatFloat(float64(n)/1e6, 'f', 2, 64) + "M"
	case n >= 10_000:
		return strconv.FormatFloat(float64(n)/1e3, 'f', 0, 64) + "k"
	}
	return strconv.FormatInt(n, 10)
}

// thousands formats n with commas: 1,000,000.
func thousands(n int64) string {
	if n < 0 {
		return "-" + thousands(-n)
	}
	s := strconv.FormatInt(n, 10)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// round keeps about three significant digits of a duration.
func round(d time.Duration) time.Duration {
	switch {
	case d >= 100*time.Second:
		return d.Round(time.Second)
	case d >= 10*time.Second:
		return d.Round(100 * time.Millisecond)
	case d >= time.Second:
		return d.Round(10 * time.Millisecond)
	}
	return d.Round(time.Millisecond)
}

// roundFine is round for durations well under a millisecond.
func roundFine(d time.Duration) time.Duration {
	if d >= 10*time.Millisecond {
		return round(d)
	}
	return d.Round(time.Microsecond)
}

func mb(bytes int64) float64 { return float64(bytes) / (1 << 20) }
