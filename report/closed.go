package report

// The closed-workflow breakdown: what a dry run with the closed-workflow
// rule (scavenger.Rules.ClosedWorkflows) would delete, tasks of closed
// runs and of runs deleted by retention apart, per queue and namespace.

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/tqscavenger/tqscavenger/scavenger"
	"github.com/tqscavenger/tqscavenger/store"
	"github.com/tqscavenger/tqscavenger/wire"
)

// ClosedQueue is what the closed-workflow rule would delete of one queue.
type ClosedQueue struct {
	Table     string `json:"table"`
	Namespace string `json:"namespace"`
	Queue     string `json:"queue"`
	TaskType  string `json:"task_type"`
	// Closed: tasks of runs whose executions row is COMPLETED;
	// RunDeleted: of runs gone past their namespace's retention.
	Closed     int64 `json:"closed_workflow"`
	RunDeleted int64 `json:"run_deleted"`
}

// closedDryRun runs the rule in a dry run and records its counts by queue.
func (r *Report) closedDryRun(ctx context.Context, st store.Store, o Options) error {
	type key struct {
		t store.Table
		q string
	}
	var (
		mu  sync.Mutex
		per = map[key]*ClosedQueue{}
	)
	cfg := scavenger.Config{Rules: scavenger.Rules{ClosedWorkflows: true, ClusterName: o.ClosedCluster, ClosedWorkflowsGlobal: o.ClosedGlobal, ClosedDeletedRuns: o.ClosedDeletedRuns, DryRun: true, Grace: o.Grace, UnsafeShortGrace: o.UnsafeShortGrace, Tables: o.Tables}}
	cfg.Now = func() time.Time { return o.Now }
	cfg.Logger = slog.New(slog.DiscardHandler)
	cfg.OnTasksDeleted = func(t store.Table, q store.QueueKey, reason scavenger.Reason, n int64) {
		if reason != scavenger.ReasonClosedWorkflow && reason != scavenger.ReasonRunDeleted {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		k := key{t, string(q.ID)}
		c := per[k]
		if c == nil {
			c = &ClosedQueue{Table: t.String(), Queue: fmt.Sprintf("%x", q.ID)}
			if ns, name, typ, err := wire.ParseQueueRowID(q.ID); err == nil {
				c.Namespace, c.Queue, c.TaskType = ns.String(), name, typ.String()
			}
			per[k] = c
		}
		if reason == scavenger.ReasonClosedWorkflow {
			c.Closed += n
		} else {
			c.RunDeleted += n
		}
	}
	s, err := scavenger.NewUnlocked(st, cfg).Run(ctx) // lock-free, as dryRuns
	if err != nil {
		return fmt.Errorf("dry run of default --closed-workflows: %w", err)
	}
	mode := "default --closed-workflows"
	if o.ClosedDeletedRuns {
		mode += " --closed-deleted-runs"
	}
	r.Modes = append(r.Modes, WouldDelete{Mode: mode, Queues: s.WouldDeleteQueues, Tasks: s.WouldDeleteTasks})
	r.RunNotFound = s.TasksRunNotFound
	r.ClosedWorkflows = []ClosedQueue{}
	for _, c := range per {
		r.ClosedWorkflows = append(r.ClosedWorkflows, *c)
	}
	sort.Slice(r.ClosedWorkflows, func(i, j int) bool {
		a, b := r.ClosedWorkflows[i], r.ClosedWorkflows[j]
		if a.Table != b.Table {
			return a.Table < b.Table
		}
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		if a.Queue != b.Queue {
			return a.Queue < b.Queue
		}
		return a.TaskType < b.TaskType
	})
	return nil
}

// writeClosed writes the closed-workflow breakdown, if there is one.
func (r *Report) writeClosed(w io.Writer) error {
	if r.ClosedWorkflows == nil {
		return nil
	}
	fmt.Fprintln(w, "\nTasks of closed runs (--closed-workflows), per queue:")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "table\tnamespace\tqueue\ttype\tclosed_workflow\trun_deleted\t")
	for _, c := range r.ClosedWorkflows {
		ns := c.Namespace
		if name := r.NamespaceNames[ns]; name != "" {
			ns = name
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t\n", c.Table, ns, c.Queue, c.TaskType, c.Closed, c.RunDeleted)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if r.RunNotFound > 0 {
		_, err := fmt.Fprintf(w, "Kept: %d tasks whose run is not in executions (run_not_found); --closed-deleted-runs would delete those of runs deleted by retention.\n", r.RunNotFound)
		return err
	}
	return nil
}
