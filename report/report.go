// Package report takes a read-only inventory of a task store: queue rows
// and tasks by table version and namespace (idle, expired, in subqueues,
// below the ack level, orphaned, unreadable), and what each scavenger mode
// would delete. It never writes.
package report

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"text/tabwriter"
	"time"

	"github.com/tqscavenger/tqscavenger/scavenger"
	"github.com/tqscavenger/tqscavenger/store"
	"github.com/tqscavenger/tqscavenger/wire"
)

// Counts is one line of an inventory.
type Counts struct {
	Queues     int64 `json:"queues"`
	IdleQueues int64 `json:"idle_queues"` // last_update_time older than the grace period
	Tasks      int64 `json:"tasks"`
	Expired    int64 `json:"tasks_expired"`
	Future     int64 `json:"tasks_expiry_future"`
	NoExpiry   int64 `json:"tasks_no_expiry"`
	// InSubqueues counts tasks in subqueues k > 0 (priority levels).
	InSubqueues int64 `json:"tasks_in_subqueues"`
	// BelowAck counts tasks at or below their subqueue's ack level.
	BelowAck int64 `json:"tasks_below_ack_level"`
	// Orphans counts tasks whose queue row does not exist.
	Orphans int64 `json:"tasks_orphaned"`
	BadRows int64 `json:"bad_rows"`
}

func (c *Counts) add(o Counts) {
	c.Queues += o.Queues
	c.IdleQueues += o.IdleQueues
	c.Tasks += o.Tasks
	c.Expired += o.Expired
	c.Future += o.Future
	c.NoExpiry += o.NoExpiry
	c.InSubqueues += o.InSubqueues
	c.BelowAck += o.BelowAck
	c.Orphans += o.Orphans
	c.BadRows += o.BadRows
}

// WouldDelete is what one mode's dry run would delete.
type WouldDelete struct {
	Mode   string `json:"mode"`
	Queues int64  `json:"queues"`
	Tasks  int64  `json:"tasks"`
}

// Report is an inventory of a store at one instant.
type Report struct {
	At time.Time `json:"at"`
	// GraceSeconds is the grace period in seconds, as every duration the
	// command prints for scripts.
	GraceSeconds float64 `json:"grace_seconds"`
	// Tables holds the totals per table version ("v1", "v2").
	Tables map[string]*Counts `json:"tables"`
	// Namespaces holds the counts per table version and namespace id.
	Namespaces map[string]map[string]*Counts `json:"namespaces"`
	// NamespaceNames holds the name of each namespace id of Namespaces
	// that Temporal's namespaces table has a row for.
	NamespaceNames map[string]string `json:"namespace_names"`
	// NamespaceNamesError says why the names could not be read (a
	// missing grant); empty if they were, or if there is no such table.
	NamespaceNamesError string `json:"namespace_names_error,omitempty"`
	// Modes says what each mode would delete; empty unless Options.Modes.
	Modes []WouldDelete `json:"modes,omitempty"`
	// ClosedWorkflows is what the closed-workflow rule would delete, per
	// queue; nil unless Options.ClosedWorkflows.
	ClosedWorkflows []ClosedQueue `json:"closed_workflows,omitempty"`
	// RunNotFound counts the tasks the closed-workflow dry run looked up
	// and kept because their run is not in executions (reason
	// run_not_found); 0 unless Options.ClosedWorkflows.
	RunNotFound int64 `json:"run_not_found,omitempty"`
	// BadRows lists the first MaxBadRows rows counted in the tables' bad
	// rows; BadRowsNotListed counts the others.
	BadRows          []BadRow `json:"bad_rows,omitempty"`
	BadRowsNotListed int64    `json:"bad_rows_not_listed,omitempty"`
}

// Options say what the inventory counts as idle and expired.
type Options struct {
	Now   time.Time     // default time.Now()
	Grace time.Duration // default 48h
	// UnsafeShortGrace allows a Grace under scavenger.MinGrace in the
	// mode dry runs, as scavenger.Config.UnsafeShortGrace: for a copy of
	// a database no Temporal server uses.
	UnsafeShortGrace bool
	// Tables to inventory; default all present.
	Tables []store.Table
	// PageSize for listing and reading. Default 1000.
	PageSize int
	// Modes adds a dry run of each scavenger mode (Temporal's, the
	// default, and each opt-in rule) to the report.
	Modes bool
	// ClosedWorkflows adds a dry run of the default mode with the
	// closed-workflow rule, and its counts per queue (closed.go); it
	// needs Temporal's history tables. ClosedCluster and ClosedGlobal
	// are the rule's scavenger.Rules.ClusterName and
	// ClosedWorkflowsGlobal.
	ClosedWorkflows bool
	ClosedCluster   string
	ClosedGlobal    bool
	// ClosedDeletedRuns: the dry run also counts the tasks of runs
	// deleted by retention (Rules.ClosedDeletedRuns), proving the shard
	// count as a pass would.
	ClosedDeletedRuns bool
}

// Take walks every queue row, every subqueue and every orphaned task of the
// chosen tables.
func Take(ctx context.Context, st store.Store, o Options) (*Report, error) {
	if o.Now.IsZero() {
		o.Now = time.Now()
	}
	if o.Grace <= 0 {
		o.Grace = scavenger.TemporalGrace
	}
	if o.PageSize <= 0 {
		o.PageSize = 1000
	}
	if o.Tables == nil {
		var err error
		if o.Tables, err = st.Tables(ctx); err != nil {
			return nil, err
		}
	}
	r := &Report{At: o.Now, GraceSeconds: o.Grace.Seconds(), Tables: map[string]*Counts{}, Namespaces: map[string]map[string]*Counts{}, NamespaceNames: map[string]string{}}
	for _, t := range o.Tables {
		w := &walker{st: st, t: t, o: o, r: r, total: &Counts{}, byNS: map[string]*Counts{}}
		r.Tables[t.String()], r.Namespaces[t.String()] = w.total, w.byNS
		if err := w.queues(ctx); err != nil {
			return nil, err
		}
		if err := w.orphans(ctx); err != nil {
			return nil, err
		}
		if err := w.oddHashes(ctx, r); err != nil {
			return nil, err
		}
	}
	if err := r.names(ctx, st); err != nil {
		return nil, err
	}
	if o.Modes {
		if err := r.dryRuns(ctx, st, o); err != nil {
			return nil, err
		}
	}
	if o.ClosedWorkflows {
		if err := r.closedDryRun(ctx, st, o); err != nil {
			return nil, err
		}
	}
	return r, nil
}

type walker struct {
	st    store.Store
	t     store.Table
	o     Options
	r     *Report // where bad rows are listed
	total *Counts
	byNS  map[string]*Counts
}

func (w *walker) ns(id []byte) *Counts {
	name := "unknown"
	if len(id) >= 16 {
		var ns wire.NamespaceID
		copy(ns[:], id)
		name = ns.String()
	}
	c := w.byNS[name]
	if c == nil {
		c = &Counts{}
		w.byNS[name] = c
	}
	return c
}

func (w *walker) count(id []byte, f func(*Counts)) {
	f(w.ns(id))
	f(w.total)
}

func (w *walker) queues(ctx context.Context) error {
	var after *store.QueueKey
	for {
		rows, err := w.st.ListQueues(ctx, w.t, after, w.o.PageSize)
		if err != nil {
			return err
		}
		for _, q := range rows {
			if err := w.queue(ctx, q); err != nil {
				return err
			}
		}
		if len(rows) < w.o.PageSize {
			return nil
		}
		k := rows[len(rows)-1].QueueKey
		after = &k
	}
}

func (w *walker) queue(ctx context.Context, q store.QueueRow) error {
	w.count(q.ID, func(c *Counts) { c.Queues++ })
	info, err := wire.DecodeTaskQueueInfo(q.Encoding, q.Data)
	subs := []wire.Subqueue{{ID: q.ID, RangeHash: q.RangeHash}}
	if err != nil {
		w.count(q.ID, func(c *Counts) { c.BadRows++ })
		w.r.badRow(newBadRow(w.t, "queue", int64(q.RangeHash), q.ID, nil, err))
	} else {
		if w.o.Now.Sub(info.LastUpdateTime) >= w.o.Grace {
			w.count(q.ID, func(c *Counts) { c.IdleQueues++ })
		}
		subs = wire.Subqueues(q.ID, q.RangeHash, info, w.t == store.V2)
	}
	for k, sq := range subs {
		if err := w.tasks(ctx, q.ID, sq, k > 0, false); err != nil {
			return err
		}
	}
	return nil
}

// tasks counts the tasks of one subqueue (or orphaned task_queue_id).
func (w *walker) tasks(ctx context.Context, nsID []byte, sq wire.Subqueue, inSub, orphan bool) error {
	var after *store.TaskKey
	key := store.QueueKey{RangeHash: sq.RangeHash, ID: sq.ID}
	ack := store.TaskKey{Pass: sq.Ack.Pass, ID: sq.Ack.TaskID}
	for {
		tasks, err := w.st.ReadTasks(ctx, w.t, key, after, w.o.PageSize)
		if err != nil {
			return err
		}
		for _, task := range tasks {
			tt, err := wire.DecodeTaskTimes(task.Encoding, task.Data)
			if err != nil {
				w.r.badRow(newBadRow(w.t, "task", int64(key.RangeHash), key.ID, &task.Key, err))
			}
			below := sq.HasAck && !ack.Less(task.Key)
			w.count(nsID, func(c *Counts) {
				c.Tasks++
				switch {
				case err != nil:
					c.BadRows++
				case wire.Expired(tt.ExpiryTime, w.o.Now):
					c.Expired++
				case tt.ExpiryTime.IsZero() || tt.ExpiryTime.Unix() <= 0:
					c.NoExpiry++
				default:
					c.Future++
				}
				if inSub {
					c.InSubqueues++
				}
				if below {
					c.BelowAck++
				}
				if orphan {
					c.Orphans++
				}
			})
		}
		if len(tasks) < w.o.PageSize {
			return nil
		}
		k := tasks[len(tasks)-1].Key
		after = &k
	}
}

// orphans counts the tasks of every task_queue_id no queue row owns.
func (w *walker) orphans(ctx context.Context) error {
	var after *store.QueueKey
	for {
		refs, err := w.st.ListTaskQueueIDs(ctx, w.t, after, w.o.PageSize)
		if err != nil {
			return err
		}
		for _, ref := range refs {
			if ref.HasQueueRow {
				continue
			}
			_, orphan, err := scavenger.ResolveParents(ctx, w.st, w.t, ref.QueueKey)
			if errors.Is(err, scavenger.ErrNoParentLayout) {
				w.count(ref.ID, func(c *Counts) { c.BadRows++ })
				w.r.badRow(newBadRow(w.t, "tasks", int64(ref.RangeHash), ref.ID, nil, err))
				continue
			}
			if err != nil {
				return err
			}
			if orphan {
				if err := w.tasks(ctx, ref.ID, wire.Subqueue{ID: ref.ID, RangeHash: ref.RangeHash}, false, true); err != nil {
					return err
				}
			}
		}
		if len(refs) < w.o.PageSize {
			return nil
		}
		k := refs[len(refs)-1].QueueKey
		after = &k
	}
}

// modes are the dry runs a report shows.
var modes = []struct {
	name string
	cfg  scavenger.Config
}{
	{"temporal", scavenger.Config{Rules: scavenger.Rules{Compat: scavenger.CompatTemporal}}},
	{"default", scavenger.Config{}},
	{"default --past-live-head", scavenger.Config{Rules: scavenger.Rules{PastLiveHead: true}}},
	{"default --below-ack-level", scavenger.Config{Rules: scavenger.Rules{BelowAckLevel: true}}},
	{"default --orphans=all", scavenger.Config{Rules: scavenger.Rules{Orphans: scavenger.OrphansAll}}},
	{"all rules", scavenger.Config{Rules: scavenger.Rules{PastLiveHead: true, BelowAckLevel: true, Orphans: scavenger.OrphansAll}}},
}

func (r *Report) dryRuns(ctx context.Context, st store.Store, o Options) error {
	for _, m := range modes {
		cfg := m.cfg
		cfg.DryRun = true
		cfg.Grace, cfg.UnsafeShortGrace = o.Grace, o.UnsafeShortGrace
		cfg.Now = func() time.Time { return o.Now }
		cfg.Logger = slog.New(slog.DiscardHandler)
		if cfg.Compat == "" {
			cfg.Tables = o.Tables
		}
		// Lock-free on purpose (scavenger.NewUnlocked): a dry run writes
		// nothing, and report must not wait for serve's pass.
		s, err := scavenger.NewUnlocked(st, cfg).Run(ctx)
		if err != nil {
			return fmt.Errorf("dry run of %s: %w", m.name, err)
		}
		r.Modes = append(r.Modes, WouldDelete{Mode: m.name, Queues: s.WouldDeleteQueues, Tasks: s.WouldDeleteTasks})
	}
	return nil
}

// WriteText writes the report as tables.
func (r *Report) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "table\tnamespace\tqueues\tidle\ttasks\texpired\tfuture\tno expiry\tin subqueues\tbelow ack\torphans\tbad rows\t")
	tables := make([]string, 0, len(r.Tables))
	for t := range r.Tables {
		tables = append(tables, t)
	}
	sort.Strings(tables)
	for _, t := range tables {
		nss := make([]string, 0, len(r.Namespaces[t]))
		for ns := range r.Namespaces[t] {
			nss = append(nss, ns)
		}
		sort.Slice(nss, func(i, j int) bool { return r.label(nss[i]) < r.label(nss[j]) })
		if len(nss) > 1 {
			for _, ns := range nss {
				row(tw, t, r.label(ns), r.Namespaces[t][ns])
			}
		}
		row(tw, t, "all", r.Tables[t])
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if r.NamespaceNamesError != "" {
		fmt.Fprintf(w, "\nnamespace names not read: %s\n", r.NamespaceNamesError)
	}
	if err := r.writeBadRows(w); err != nil {
		return err
	}
	if err := r.writeClosed(w); err != nil {
		return err
	}
	if len(r.Modes) == 0 {
		return nil
	}
	fmt.Fprintln(w, "\nWhat each mode would delete now:")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "mode\tqueues\ttasks\t")
	for _, m := range r.Modes {
		fmt.Fprintf(tw, "%s\t%d\t%d\t\n", m.Mode, m.Queues, m.Tasks)
	}
	return tw.Flush()
}

func row(w io.Writer, t, ns string, c *Counts) {
	fmt.Fprintf(w, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t\n", t, ns, c.Queues, c.IdleQueues, c.Tasks,
		c.Expired, c.Future, c.NoExpiry, c.InSubqueues, c.BelowAck, c.Orphans, c.BadRows)
}

// WriteJSON writes the report as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}
