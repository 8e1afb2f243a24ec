package scavenger

// The closed-workflow rule (Rules.ClosedWorkflows): a task whose own run
// has closed is dead, expired or not. Matching drops such a task when it
// dispatches it (history answers that the workflow is completed or not
// found), but only for a queue it loads; on a queue nothing loads the
// task stays forever, and its queue row is never empty.
//
// The rule looks each page's runs up in Temporal's executions tables,
// through store.ExecutionReader, and reads the facts the rule book decides
// on (rules.go: closedCandidate, closed). It runs only once the shard
// count is proven (proveShards): a wrong count would look every run up in
// the wrong shard and find none.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/tqscavenger/tqscavenger/store"
	"github.com/tqscavenger/tqscavenger/wire"
)

// RunDeletedMargin is how much longer than its namespace's retention a
// task of a run whose executions row is gone must be old before it goes.
// Retention deletes a run at least its retention after the run closed,
// and the run closed after the task was created, so any such task is
// older than the retention; the margin covers clock skew between hosts
// and a retention shortened since.
const RunDeletedMargin = 24 * time.Hour

// MissBreakerShare and MissBreakerMin are the circuit breaker on misses:
// when more than MissBreakerShare of a page's distinct runs (a page of at
// least MissBreakerMin runs) have no executions row, the rule stops and
// the pass fails. A lookup that finds nothing where it should find rows
// (another cluster's database, a schema that moved the rows) would else
// count every old task as a task of a deleted run.
const (
	MissBreakerShare = 0.5
	MissBreakerMin   = 20
)

// ErrClosedWorkflowsRefused is wrapped by every reason the closed-workflow
// rule refuses to run: the shard count not proven, a history table missing
// or unreadable, a store that cannot read them, CompatTemporal.
var ErrClosedWorkflowsRefused = errors.New("the closed-workflow rule refuses to run")

// ErrMissBreaker is wrapped by the error of a pass stopped by the circuit
// breaker on misses.
var ErrMissBreaker = errors.New("closed-workflow rule: too many runs missing from executions")

// closedRule is the rule's state for one pass: the proven shard count and
// each namespace's facts, read once at the start.
type closedRule struct {
	er     store.ExecutionReader
	book   ruleBook
	shards int32
	ns     map[[16]byte]nsFacts
	// wait paces each lookup statement as the pass's other statements.
	wait func(ctx context.Context) error
}

// newClosedRule proves the shard count and reads the namespaces.
func newClosedRule(ctx context.Context, raw store.Store, book ruleBook, r Rules, wait func(context.Context) error) (*closedRule, error) {
	er, ok := raw.(store.ExecutionReader)
	if !ok {
		return nil, fmt.Errorf("%w: the store cannot read Temporal's executions tables", ErrClosedWorkflowsRefused)
	}
	n, err := proveShards(ctx, er, r.ClusterName)
	if err != nil {
		return nil, err
	}
	rows, err := er.Namespaces(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrClosedWorkflowsRefused, err)
	}
	c := &closedRule{er: er, book: book, shards: n, ns: map[[16]byte]nsFacts{}, wait: wait}
	for _, row := range rows {
		f := nsFacts{global: row.IsGlobal}
		if ret, err := wire.DecodeNamespaceRetention(row.Encoding, row.Data); err == nil && ret.HasRetention {
			f.retention, f.readable = ret.Retention, true
		}
		c.ns[row.ID] = f
	}
	return c, nil
}

// runRef is a task's run, as the rule looks it up; ok is false for a task
// the book keeps without a lookup.
type runRef struct {
	key     store.ExecutionKey
	create  time.Time
	ns      nsFacts
	nsKnown bool
	ok      bool
}

// refOf reads the run of a task and asks the book whether to look it up.
func (c *closedRule) refOf(row store.TaskRow) runRef {
	var t taskRun
	t.run, t.err = wire.DecodeTaskRun(row.Encoding, row.Data)
	ns, err1 := wire.ParseNamespaceID(t.run.NamespaceID)
	run, err2 := wire.ParseNamespaceID(t.run.RunID)
	t.canonical = t.err == nil && err1 == nil && err2 == nil && ns.String() == t.run.NamespaceID && run.String() == t.run.RunID
	if t.canonical {
		t.ns, t.nsKnown = c.ns[ns]
	}
	if !c.book.closedCandidate(t) {
		return runRef{}
	}
	return runRef{key: store.ExecutionKey{ShardID: wire.HistoryShard(t.run.NamespaceID, t.run.WorkflowID, c.shards), NamespaceID: ns, WorkflowID: t.run.WorkflowID, RunID: run},
		create: t.run.CreateTime, ns: t.ns, nsKnown: t.nsKnown, ok: true}
}

// page looks up the runs of a page of tasks: the facts of each (looked
// false: not looked up). A failed lookup is an error: the caller fails the
// walk, and no task of the page is deleted by this rule.
func (c *closedRule) page(ctx context.Context, tasks []store.TaskRow) ([]runFacts, error) {
	refs := make([]runRef, len(tasks))
	var keys []store.ExecutionKey
	seen := map[store.ExecutionKey]bool{}
	for i, t := range tasks {
		refs[i] = c.refOf(t)
		if refs[i].ok && !seen[refs[i].key] {
			seen[refs[i].key] = true
			keys = append(keys, refs[i].key)
		}
	}
	out := make([]runFacts, len(tasks))
	if len(keys) == 0 {
		return out, nil
	}
	states, missing, err := c.lookup(ctx, keys)
	if err != nil {
		return nil, err
	}
	if len(keys) >= MissBreakerMin && float64(len(missing)) > MissBreakerShare*float64(len(keys)) {
		return nil, fmt.Errorf("%w: %d of a page's %d runs (more than %.0f%%); the rule stops rather than count them as deleted by retention", ErrMissBreaker, len(missing), len(keys), MissBreakerShare*100)
	}
	current, err := c.current(ctx, missing)
	if err != nil {
		return nil, err
	}
	for i, r := range refs {
		if !r.ok {
			continue
		}
		st, found := states[r.key]
		wf := r.key
		wf.RunID = [16]byte{}
		cur, has := current[wf]
		out[i] = runFacts{looked: true, found: found, stateOK: st.ok, state: st.state, currentIsRun: !found && has && cur == r.key.RunID,
			ns: r.ns, nsKnown: r.nsKnown, create: r.create}
	}
	return out, nil
}

// runState is what the executions lookup found of a run.
type runState struct {
	state wire.ExecutionState
	ok    bool // readable, no unknown fields
}

// lookup reads the runs' executions rows: their states, and the keys no
// row answered. Found only through a lookup that returned without error.
func (c *closedRule) lookup(ctx context.Context, keys []store.ExecutionKey) (map[store.ExecutionKey]runState, []store.ExecutionKey, error) {
	states := make(map[store.ExecutionKey]runState, len(keys))
	// One statement per chunk, each paced as the pass's other statements.
	for chunk := range slices.Chunk(keys, store.LookupChunk) {
		if err := c.wait(ctx); err != nil {
			return nil, nil, err
		}
		rows, err := c.er.GetExecutions(ctx, chunk)
		if err != nil {
			return nil, nil, fmt.Errorf("closed-workflow rule: look runs up: %w", err)
		}
		for _, r := range rows {
			st, err := wire.DecodeExecutionState(r.StateEncoding, r.State)
			states[r.ExecutionKey] = runState{state: st.State, ok: err == nil && !st.Unknown}
		}
	}
	var missing []store.ExecutionKey
	for _, k := range keys {
		if _, found := states[k]; !found {
			missing = append(missing, k)
		}
	}
	return states, missing, nil
}

// current reads the current_executions rows of the missing runs'
// workflows: which run each points at.
func (c *closedRule) current(ctx context.Context, missing []store.ExecutionKey) (map[store.ExecutionKey][16]byte, error) {
	out := map[store.ExecutionKey][16]byte{}
	if len(missing) == 0 {
		return out, nil
	}
	for chunk := range slices.Chunk(missing, store.LookupChunk) {
		if err := c.wait(ctx); err != nil {
			return nil, err
		}
		rows, err := c.er.GetCurrentExecutions(ctx, chunk)
		if err != nil {
			return nil, fmt.Errorf("closed-workflow rule: look current runs up: %w", err)
		}
		for _, r := range rows {
			k := r.ExecutionKey
			k.RunID = [16]byte{}
			out[k] = r.RunID
		}
	}
	return out, nil
}

// proveShards returns the history shard count stored in the database, once
// every check holds: the current cluster's cluster_metadata_info row gives
// N; shards holds exactly ids 1…N; no executions row lies in a shard above
// N; and the first rows of every shard present sit where the formula puts
// them for N. Rows in key order all sit in shard 1 and agree with any N
// that divides the true one: the sample covers every shard.
func proveShards(ctx context.Context, er store.ExecutionReader, cluster string) (int32, error) {
	refuse := func(format string, a ...any) (int32, error) {
		return 0, fmt.Errorf("%w: %s", ErrClosedWorkflowsRefused, fmt.Sprintf(format, a...))
	}
	failed := func(err error) (int32, error) { return 0, fmt.Errorf("%w: %w", ErrClosedWorkflowsRefused, err) }
	rows, err := er.ClusterMetadata(ctx)
	if err != nil {
		return failed(err)
	}
	var row *store.ClusterMetadataRow
	for i := range rows {
		if cluster == "" || rows[i].ClusterName == cluster {
			if row != nil {
				return refuse("cluster_metadata_info has rows of several clusters (%q, %q): name the current one (--closed-cluster)", row.ClusterName, rows[i].ClusterName)
			}
			row = &rows[i]
		}
	}
	if row == nil {
		if cluster != "" {
			return refuse("cluster_metadata_info has no row of cluster %q", cluster)
		}
		return refuse("cluster_metadata_info has no row: the history shard count is unknown")
	}
	md, err := wire.DecodeClusterMetadata(row.Encoding, row.Data)
	if err != nil {
		return refuse("cluster %q's metadata: %v", row.ClusterName, err)
	}
	n := md.HistoryShardCount
	if n < 1 {
		return refuse("cluster %q's metadata holds no history shard count (%d)", row.ClusterName, n)
	}
	ids, err := er.ShardIDs(ctx)
	if err != nil {
		return failed(err)
	}
	if len(ids) != int(n) || ids[0] != 1 || ids[len(ids)-1] != n {
		return refuse("cluster %q has %d history shards, but shards holds %d ids (%s)", row.ClusterName, n, len(ids), span(ids))
	}
	for i, id := range ids {
		if id != int32(i+1) {
			return refuse("shards holds ids %s, not exactly 1…%d", span(ids), n)
		}
	}
	top, any, err := er.MaxExecutionShard(ctx)
	if err != nil {
		return failed(err)
	}
	if !any {
		return n, nil
	}
	if top > n || top < 1 {
		return refuse("executions holds a row of shard %d, outside 1…%d", top, n)
	}
	sample, err := er.SampleExecutions(ctx, ids, 2)
	if err != nil {
		return failed(err)
	}
	for _, k := range sample {
		ns := wire.NamespaceID(k.NamespaceID).String()
		if got := wire.HistoryShard(ns, k.WorkflowID, n); got != k.ShardID {
			return refuse("workflow %q of namespace %s sits in shard %d, but %d shards put it in %d: the shard count is not the one its rows were written with", k.WorkflowID, ns, k.ShardID, n, got)
		}
	}
	return n, nil
}

// span describes a sorted list of shard ids.
func span(ids []int32) string {
	if len(ids) == 0 {
		return "none"
	}
	return fmt.Sprintf("%d…%d", ids[0], ids[len(ids)-1])
}

// setupClosed proves the shard count and reads the namespaces when the
// rule is on.
func (p *pass) setupClosed(ctx context.Context) error {
	if !p.cfg.ClosedWorkflows || p.cfg.Compat == CompatTemporal {
		return nil
	}
	c, err := newClosedRule(ctx, p.raw, p.book, p.cfg.Rules, func(ctx context.Context) error { return p.tune.stmts.wait(ctx, nil) })
	if err != nil {
		return err
	}
	p.closed = c
	p.cfg.Logger.Info("closed-workflow rule on", "history_shards", c.shards, "namespaces", len(c.ns), "global_namespaces", p.cfg.ClosedWorkflowsGlobal)
	return nil
}

// closedPage looks up the runs of a page of tasks for the closed-workflow
// rule, or returns nil when it is off.
func (p *pass) closedPage(ctx context.Context, tasks []store.TaskRow) ([]runFacts, error) {
	if p.closed == nil {
		return nil, nil
	}
	return p.closed.page(ctx, tasks)
}
