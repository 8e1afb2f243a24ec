package bench

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// Comparison sets side by side one pass of a case as each binary under
// test ran it.
type Comparison struct {
	Case string
	Pass Pass
	// Runs are the pass's results, one per binary, in Options.Binaries'
	// order; a failed or stopped run is among them.
	Runs []PassResult
}

// SameDeleted reports whether every run completed and deleted the same
// task and queue rows (counts and, by the sum of the task ids left, the
// same rows).
func (c Comparison) SameDeleted() bool {
	for _, r := range c.Runs {
		if r.Err != nil || r.TimedOut || r.Deleted != c.Runs[0].Deleted || r.Left != c.Runs[0].Left || r.TaskIDSum != c.Runs[0].TaskIDSum {
			return false
		}
	}
	return len(c.Runs) > 1
}

// SameStatements reports whether every run completed and issued the same
// number of statements.
func (c Comparison) SameStatements() bool {
	for _, r := range c.Runs {
		if r.Err != nil || r.TimedOut || r.Statements != c.Runs[0].Statements {
			return false
		}
	}
	return len(c.Runs) > 1
}

// Compare returns, for each case and each pass of the binaries under test
// that more than one binary ran, the runs side by side. Passes differing
// in statements are not a failure (a new build may well issue fewer);
// differing in rows deleted, the verification's warnings say which is
// wrong.
func Compare(er EngineReport) []Comparison {
	var out []Comparison
	for _, cr := range er.Cases {
		var order []Pass
		byPass := map[Pass][]PassResult{}
		for _, p := range cr.Passes {
			if p.Binary == "" {
				continue
			}
			if byPass[p.Pass] == nil {
				order = append(order, p.Pass)
			}
			byPass[p.Pass] = append(byPass[p.Pass], p)
		}
		for _, p := range order {
			if len(byPass[p]) > 1 {
				out = append(out, Comparison{Case: cr.Case.Name, Pass: p, Runs: byPass[p]})
			}
		}
	}
	return out
}

// printCompare writes the comparison of the binaries under test, if
// several ran: per pass, each binary's rows deleted and statements, and
// whether they agree.
func printCompare(w io.Writer, er EngineReport, markdown bool) {
	cs := Compare(er)
	if len(cs) == 0 {
		return
	}
	cols := []string{"case", "pass"}
	for _, r := range cs[0].Runs {
		cols = append(cols, r.Binary+" deleted", r.Binary+" statements")
	}
	cols = append(cols, "rows deleted", "statements")
	var rows [][]string
	for _, c := range cs {
		row := []string{c.Case, string(c.Pass)}
		for _, r := range c.Runs {
			switch {
			case r.Err != nil:
				row = append(row, "failed", "")
			case r.TimedOut:
				row = append(row, "stopped", "")
			default:
				row = append(row, thousands(r.Deleted.Tasks)+" + "+thousands(r.Deleted.Queues), thousands(r.Statements))
			}
		}
		rows = append(rows, append(row, agree(c.SameDeleted()), agree(c.SameStatements())))
	}
	if markdown {
		fmt.Fprintf(w, "Binaries under test compared:\n\n| %s |\n|%s\n", strings.Join(cols, " | "), strings.Repeat("---|", len(cols)))
		for _, r := range rows {
			fmt.Fprintf(w, "| %s |\n", strings.Join(r, " | "))
		}
		fmt.Fprintln(w)
		return
	}
	fmt.Fprintln(w, "binaries under test compared:")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(cols, "\t"))
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	tw.Flush()
}

func agree(same bool) string {
	if same {
		return "equal"
	}
	return "DIFFER"
}
