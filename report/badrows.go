package report

// The rows a report could not read: listed, so that an operator can find
// them (every mode keeps them).

import (
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/tqscavenger/tqscavenger/scavenger"
	"github.com/tqscavenger/tqscavenger/store"
)

// MaxBadRows caps Report.BadRows; BadRowsNotListed counts the rest.
const MaxBadRows = 100

// BadRow is a row no mode can judge, and so keeps: its data does not
// decode, its task_queue_id fits no queue id layout, or its range_hash
// lies outside 0…2³²−1 (which no listing reaches).
type BadRow struct {
	Table string `json:"table"`
	// Kind is "queue" (a queue row), "task" (one task row) or "tasks"
	// (the task rows of a task_queue_id).
	Kind      string `json:"kind"`
	RangeHash int64  `json:"range_hash"`
	// TaskQueueID is the row's task_queue_id in hex.
	TaskQueueID string `json:"task_queue_id"`
	// TaskPass and TaskID are a task row's key (pass is 0 in v1).
	TaskPass *int64 `json:"task_pass,omitempty"`
	TaskID   *int64 `json:"task_id,omitempty"`
	Reason   string `json:"reason"`
}

// badRow adds b to the report's list, or counts it past the cap.
func (r *Report) badRow(b BadRow) {
	if len(r.BadRows) < MaxBadRows {
		r.BadRows = append(r.BadRows, b)
		return
	}
	r.BadRowsNotListed++
}

// newBadRow describes a row of table t at key k (task: its task key, or
// nil) that could not be read because of err.
func newBadRow(t store.Table, kind string, rangeHash int64, id []byte, task *store.TaskKey, err error) BadRow {
	b := BadRow{Table: t.String(), Kind: kind, RangeHash: rangeHash, TaskQueueID: hex.EncodeToString(id), Reason: err.Error()}
	if task != nil {
		b.TaskPass, b.TaskID = &task.Pass, &task.ID
	}
	return b
}

// oddHashes counts and lists the rows of table t whose range_hash lies
// outside the uint32 space: no listing of the store reaches them, so the
// walks do not see them (store.OddHashFinder). A store that cannot find
// them holds none.
func (w *walker) oddHashes(ctx context.Context, r *Report) error {
	f, ok := w.st.(store.OddHashFinder)
	if !ok {
		return nil
	}
	oh, err := f.OddHashes(ctx, w.t, MaxBadRows)
	if err != nil {
		return fmt.Errorf("find %s rows outside the range_hash space: %w", w.t, err)
	}
	for _, row := range oh.Rows {
		kind := "queue"
		if row.Task != nil {
			kind = "task"
		}
		w.count(row.ID, func(c *Counts) { c.BadRows++ })
		r.badRow(newBadRow(w.t, kind, row.RangeHash, row.ID, row.Task, &scavenger.OddHashError{RangeHash: row.RangeHash}))
	}
	if rest := oh.Below + oh.Above - int64(len(oh.Rows)); rest > 0 {
		// Not returned: counted, their namespace unknown.
		w.ns(nil).BadRows += rest
		w.total.BadRows += rest
		r.BadRowsNotListed += rest
	}
	return nil
}

// writeBadRows writes the list of bad rows as a table.
func (r *Report) writeBadRows(w io.Writer) error {
	if len(r.BadRows) == 0 && r.BadRowsNotListed == 0 {
		return nil
	}
	fmt.Fprintf(w, "\nBad rows: every mode keeps them (%d listed, %d more not listed):\n", len(r.BadRows), r.BadRowsNotListed)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "table\tkind\trange_hash\ttask_queue_id\ttask\treason\t")
	for _, b := range r.BadRows {
		task := "-"
		if b.TaskID != nil {
			task = fmt.Sprintf("pass %d id %d", *b.TaskPass, *b.TaskID)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t\n", b.Table, b.Kind, b.RangeHash, b.TaskQueueID, task, b.Reason)
	}
	return tw.Flush()
}
