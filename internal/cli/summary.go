package cli

// What run shows of a pass: its progress line while it runs, and its
// counts at the end (the summary, --output json, --stats-json).

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mattn/go-isatty"

	progressline "github.com/tqscavenger/tqscavenger/internal/progress"
	"github.com/tqscavenger/tqscavenger/scavenger"
)

// progressLine returns the progress line drawn on w, or nil if mode and
// w call for none: by default (auto) there is one only on a terminal.
func progressLine(w io.Writer, mode string) *progressline.Line {
	if mode == "never" || (mode == "auto" && !isTerminal(w)) {
		return nil
	}
	width := func() int { return 0 }
	if f, ok := w.(*os.File); ok {
		width = func() int { return progressline.TerminalWidth(f.Fd()) }
	}
	return progressline.NewLine(w, width)
}

// startProgress draws the pass's progress on line every half second while
// the pass runs, and erases it when stop is called.
func startProgress(line *progressline.Line, s *scavenger.Scavenger, dryRun bool) (stop func()) {
	if line == nil {
		return func() {}
	}
	// The line is drawn by its ticker and again after each log line,
	// from the logging goroutine: the estimator follows the pass under a
	// lock.
	var mu sync.Mutex
	var est scavenger.Estimator
	return line.Show(500*time.Millisecond, func(width int) string {
		st := s.Stats()
		mu.Lock()
		e := est.Update(st)
		mu.Unlock()
		return progressline.TextOf(st, e, dryRun, width)
	})
}

// isTerminal reports whether w is a terminal. A character device is not
// enough: /dev/null is one too, and a progress line written there by a
// service manager would be wasted work at best.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	return isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd())
}

func printSummary(w io.Writer, st scavenger.Stats) {
	verb := "deleted"
	if st.DryRun {
		verb = "would delete"
		fmt.Fprintln(w, "dry run: nothing was deleted")
	}
	tasks, queues := st.Removed()
	fmt.Fprintf(w, "queues: %d processed, %s %d", st.QueuesProcessed, verb, queues)
	if st.QueuesKept > 0 {
		fmt.Fprintf(w, ", %d kept (taken by a matching host since listed)", st.QueuesKept)
	}
	fmt.Fprintf(w, "\ntasks:  %d examined, %s %d\n", st.TasksProcessed, verb, tasks)
	if st.TasksRunNotFound > 0 {
		fmt.Fprintf(w, "kept:   %d tasks whose run is not in executions (run_not_found: without --closed-deleted-runs, or not proven deleted by retention)\n", st.TasksRunNotFound)
	}
	if st.Deferred > 0 || st.Dropped > 0 || st.Retries > 0 {
		fmt.Fprintf(w, "jobs:   %d deferred, %d dropped; %d transient errors retried\n", st.Deferred, st.Dropped, st.Retries)
	}
	if st.TasksUnknown > 0 || st.QueuesUnknown > 0 {
		fmt.Fprintf(w, "unknown: %d tasks and %d queues whose delete lost its connection: they may or may not be gone\n", st.TasksUnknown, st.QueuesUnknown)
	}
	if st.Errors > 0 {
		var causes []string
		for _, c := range slices.Sorted(maps.Keys(st.FailuresByCause)) {
			causes = append(causes, fmt.Sprintf("%d %s", st.FailuresByCause[c], c))
		}
		fmt.Fprintf(w, "failed: %d jobs (%s); the first:\n", st.Errors, strings.Join(causes, ", "))
		for _, f := range st.Failures {
			fmt.Fprintf(w, "  %s\n", f)
		}
	}
	if st.BadRowCount > 0 {
		fmt.Fprintf(w, "bad rows: %d could not be processed and were kept:\n", st.BadRowCount)
		for _, b := range st.BadRows {
			fmt.Fprintf(w, "  %s\n", b)
		}
		if int64(len(st.BadRows)) < st.BadRowCount {
			fmt.Fprintf(w, "  … and %d more (see the log)\n", st.BadRowCount-int64(len(st.BadRows)))
		}
	}
	if st.Resumed {
		fmt.Fprintf(w, "resumed: from a checkpoint; rows at or before its positions were not examined by this run: %v\n", st.ResumedFrom)
	}
	if st.Outcome != "" {
		if st.Cause != "" {
			fmt.Fprintf(w, "outcome: %s (%s)\n", st.Outcome, st.Cause)
		} else {
			fmt.Fprintf(w, "outcome: %s\n", st.Outcome)
		}
	}
	fmt.Fprintf(w, "time:   %s\n", st.Elapsed.Round(time.Millisecond))
}

// statsMap is the pass's counts for scripts: --output json and
// --stats-json. A dry run's *_deleted counts are 0 (nothing was deleted)
// and what it would have deleted is under would_delete, so that no script
// reads a dry run as deletions; dry_run says which it was.
func statsMap(st scavenger.Stats, statements int64) map[string]any {
	causes := st.FailuresByCause
	if causes == nil {
		causes = map[scavenger.Cause]int64{}
	}
	m := countsMap(st.Counts)
	// Where Counts' JSON names (the Temporal worker's) are not the keys
	// run has always written, run's stay, for the scripts that read
	// them: failed jobs are "errors", and orphans_left and the flat
	// would_delete_* were never written (would_delete is below).
	m["errors"] = m["failed_jobs"]
	for _, k := range []string{"failed_jobs", "orphans_left", "would_delete_tasks", "would_delete_queues"} {
		delete(m, k)
	}
	maps.Copy(m, map[string]any{
		"dry_run":           st.DryRun,
		"outcome":           string(st.Outcome),
		"cause":             string(st.Cause),
		"resumed":           st.Resumed,
		"resumed_from":      st.ResumedFrom,
		"failures_by_cause": causes,
		"statements":        statements,
		"elapsed_seconds":   st.Elapsed.Seconds(),
		"pace":              st.Pace,
	})
	if st.DryRun {
		m["would_delete"] = map[string]int64{"tasks": st.WouldDeleteTasks, "queues": st.WouldDeleteQueues}
	}
	return m
}

// countsMap returns every count of c, 0 or not, by its JSON name.
func countsMap(c scavenger.Counts) map[string]any {
	m := map[string]any{}
	v := reflect.ValueOf(c)
	for i := range v.NumField() {
		name, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("json"), ",")
		m[name] = v.Field(i).Int()
	}
	return m
}

// writeStatsJSON writes the pass's counts for scripts.
func writeStatsJSON(path string, st scavenger.Stats, statements int64) error {
	return writeStatsDoc(path, statsMap(st, statements))
}

// writeStatsDoc writes the document m of --stats-json.
func writeStatsDoc(path string, m map[string]any) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("--stats-json: %w", err)
	}
	return nil
}
