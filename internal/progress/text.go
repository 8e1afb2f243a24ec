package progress

import (
	"fmt"
	"strings"
	"time"

	"github.com/tqscavenger/tqscavenger/scavenger"
)

// item is one part of the progress line; the line drops the items of
// highest rank first when the terminal is too narrow for all.
type item struct {
	text string
	rank int
}

// Text is the progress line for a pass's live counts, at most width
// columns wide (it drops its less important parts first, then cuts).
// While the listing runs the total has a "+": more queues may come.
func Text(st scavenger.Stats, dryRun bool, width int) string {
	return TextOf(st, st.Progress(), dryRun, width)
}

// TextOf is Text with the estimate e of the pass's progress, such as a
// scavenger.Estimator that follows the pass gives.
func TextOf(st scavenger.Stats, e scavenger.Estimate, dryRun bool, width int) string {
	tasks, queueRows := st.Removed()
	// A dry run deletes nothing: its counts say what it would delete.
	deleted := func(n int64, what string) string {
		if dryRun {
			return fmt.Sprintf("would delete %d %s", n, what)
		}
		return fmt.Sprintf("%d %s deleted", n, what)
	}
	queues := fmt.Sprintf("%d/%d queues done (%d%%)", e.Done, e.Listed, e.Percent)
	if !e.Final {
		queues = fmt.Sprintf("%d/%d+ queues done", e.Done, e.Listed)
	}
	items := []item{
		{queues, 0},
		{deleted(tasks, "tasks"), 1},
		{fmt.Sprintf("%.0f/s", e.Rate), 3},
	}
	switch {
	case e.HasLeft:
		items = append(items, item{"~" + e.Left.String() + " left", 2})
	case e.Finishing():
		items = append(items, item{"finishing", 2})
	}
	items = append(items,
		item{deleted(queueRows, "queues"), 4},
		item{fmt.Sprintf("%d tasks examined", st.TasksProcessed), 5},
		item{st.Elapsed.Round(time.Second).String() + " elapsed", 6},
	)
	if p := paceText(st.Pace); p != "" {
		items = append(items, item{p, 7})
	}
	prefix := ""
	if dryRun {
		prefix = "dry run: "
	}
	for rank := 7; ; rank-- {
		var parts []string
		for _, it := range items {
			if it.rank <= rank {
				parts = append(parts, it.text)
			}
		}
		s := prefix + strings.Join(parts, ", ")
		if len(s) <= width || rank == 0 {
			return cut(s, width)
		}
	}
}

// cut shortens s to at most width columns; s is ASCII.
func cut(s string, width int) string {
	if width <= 0 {
		return ""
	}
	if len(s) > width {
		return s[:width]
	}
	return s
}

// paceText is the pace's part of the line: the pace, and at the gentle
// one the controller's statements at once and its last signal against its
// quiet baseline; "" for a pass that reported none.
func paceText(p scavenger.PaceState) string {
	switch {
	case p.Mode == "":
		return ""
	case p.Mode == scavenger.PaceFull:
		return "pace full"
	}
	s := fmt.Sprintf("pace gentle %d/%d at once", p.InFlight, p.Allowed)
	if p.Share < 1 {
		s += fmt.Sprintf(" %.0f%% busy", 100*p.Share)
	}
	if p.Ratio > 0 {
		s += fmt.Sprintf(" %.1fx baseline", p.Ratio)
	}
	if p.FloorHits > 0 {
		s += " (at its floor)"
	}
	return s
}
