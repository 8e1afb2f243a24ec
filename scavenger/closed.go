package scavenger

// The closed-workflow rule (Rules.ClosedWorkflows): a task whose own run
// has closed is dead, expired or not. Matching drops such a task when it
// dispatches it (history answers that the workflow is completed or not
// found), but only for a queue it loads; on a queue nothing loads the
// task stays forever, and its queue row is never empty.
//
// The rule looks each page's runs up in Temporal's executions tables,
// through store.ExecutionReader, and reads the facts the rule book decides
// on (rules.go: closedCandidate, closed). It deletes on positive evidence
// only, a run found COMPLETED, which no shard count can forge: a wrong
// count looks a run up in the wrong shard and finds nothing. A run that is
// not found keeps its tasks (Stats.TasksRunNotFound) unless
// Rules.ClosedDeletedRuns, whose inference from absence needs the count
// proven first (proveShardCount).

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

// MinProofWorkflows is how many distinct workflows (namespace and
// workflow id; a continue-as-new chain is one) the proof of the history
// shard count must find, each in the shard the count puts it in, before a
// run missing from executions counts as deleted (Rules.ClosedDeletedRuns).
// A wrong count puts a workflow in its true shard with probability at
// most ½, independently for each workflow (its shard is a hash of its
// ids), so 30 workflows pass a wrong count with probability at most
// 2⁻³⁰ < 10⁻⁹ (docs/rules.md has the arithmetic).
const MinProofWorkflows = 30

// ErrClosedWorkflowsRefused is wrapped by every reason the closed-workflow
// rule refuses to run: no history shard count to read, a count that fails
// its proof (Rules.ClosedDeletedRuns), a history table missing or
// unreadable, a store that cannot read them, CompatTemporal.
var ErrClosedWorkflowsRefused = errors.New("the closed-workflow rule refuses to run")

// closedRule is the rule's state for one pass: the shard count and each
// namespace's facts, read once at the start.
type closedRule struct {
	er     store.ExecutionReader
	book   ruleBook
	rules  Rules
	shards int32
	ns     map[[16]byte]nsFacts
	// proven: the shard count passed proveShardCount this pass, so a
	// miss is evidence (only with Rules.ClosedDeletedRuns).
	proven bool
	// sampled is how many workflows the proof found where the count puts
	// them.
	sampled int
}

// newClosedRule reads the shard count and the namespaces through er, and
// with ClosedDeletedRuns proves the count. er is the pass's: every read
// goes through its middleware as the pass's other statements do (paced,
// rate-limited, refused after Shutdown); nil if its store cannot read
// them.
func newClosedRule(ctx context.Context, er store.ExecutionReader, book ruleBook, r Rules) (*closedRule, error) {
	if er == nil {
		return nil, fmt.Errorf("%w: the store cannot read Temporal's executions tables", ErrClosedWorkflowsRefused)
	}
	n, err := shardCount(ctx, er, r.ClusterName)
	if err != nil {
		return nil, err
	}
	rows, err := er.Namespaces(ctx)
	if err != nil {
		return nil, readFailed(err)
	}
	c := &closedRule{er: er, book: book, rules: r, shards: n, ns: map[[16]byte]nsFacts{}}
	for _, row := range rows {
		f := nsFacts{global: row.IsGlobal}
		if ret, err := wire.DecodeNamespaceRetention(row.Encoding, row.Data); err == nil && ret.HasRetention {
			f.retention, f.readable = ret.Retention, true
		}
		c.ns[row.ID] = f
	}
	if r.ClosedDeletedRuns {
		if c.sampled, err = c.proveShardCount(ctx); err != nil {
			return nil, err
		}
		c.proven = c.sampled >= MinProofWorkflows
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
// walk, and no task of the page is deleted by this rule. Misses never fail
// it: a run not found keeps its tasks unless the miss is proven.
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
	// The current rows matter only to the inference from absence.
	current := map[store.ExecutionKey][16]byte{}
	if c.rules.ClosedDeletedRuns {
		if current, err = c.current(ctx, missing); err != nil {
			return nil, err
		}
	}
	for i, r := range refs {
		if !r.ok {
			continue
		}
		st, found := states[r.key]
		wf := r.key
		wf.RunID = [16]byte{}
		cur, has := current[wf]
		out[i] = runFacts{looked: true, found: found, stateOK: st.ok, state: st.state,
			currentIsRun: !found && has && cur == r.key.RunID,
			missProven:   !found && (c.proven || has && cur != r.key.RunID),
			ns:           r.ns, nsKnown: r.nsKnown, create: r.create}
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

// readFailed wraps the error of a read the rule makes before the pass: a
// transient one (a lost connection, a statement timeout) or the shutdown
// gate's refusal as it is, so that the pass fails or is interrupted and a
// retry may help; any other (a table missing or unreadable) as a refusal.
func readFailed(err error) error {
	if errors.Is(err, store.ErrTransient) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrShutdown) {
		return fmt.Errorf("closed-workflow rule: %w", err)
	}
	return fmt.Errorf("%w: %w", ErrClosedWorkflowsRefused, err)
}

// refuseClosed is an error wrapping ErrClosedWorkflowsRefused.
func refuseClosed(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrClosedWorkflowsRefused, fmt.Sprintf(format, a...))
}

// shardCount returns the history shard count the current cluster's
// cluster_metadata_info row claims. It proves nothing: the rule's positive
// evidence needs no proof, and proveShardCount proves it for the
// inference from absence.
func shardCount(ctx context.Context, er store.ExecutionReader, cluster string) (int32, error) {
	rows, err := er.ClusterMetadata(ctx)
	if err != nil {
		return 0, readFailed(err)
	}
	var row *store.ClusterMetadataRow
	for i := range rows {
		if cluster == "" || rows[i].ClusterName == cluster {
			if row != nil {
				return 0, refuseClosed("cluster_metadata_info has rows of several clusters (%q, %q): name the current one (--closed-cluster)", row.ClusterName, rows[i].ClusterName)
			}
			row = &rows[i]
		}
	}
	if row == nil {
		if cluster != "" {
			return 0, refuseClosed("cluster_metadata_info has no row of cluster %q", cluster)
		}
		return 0, refuseClosed("cluster_metadata_info has no row: the history shard count is unknown")
	}
	md, err := wire.DecodeClusterMetadata(row.Encoding, row.Data)
	if err != nil {
		return 0, refuseClosed("cluster %q's metadata: %v", row.ClusterName, err)
	}
	if md.HistoryShardCount < 1 {
		return 0, refuseClosed("cluster %q's metadata holds no history shard count (%d)", row.ClusterName, md.HistoryShardCount)
	}
	return md.HistoryShardCount, nil
}

// proveShardCount proves the claimed shard count for the inference from
// absence, through the path every lookup of the pass takes: it reports
// how many distinct workflows it found where the count puts them
// (MinProofWorkflows at most), or an error wrapping
// ErrClosedWorkflowsRefused if any check fails. The checks: shards holds
// exactly the ids 1…N; no executions row lies in a shard above N; and the
// first MinProofWorkflows distinct workflows of executions in key order
// (NextWorkflow, one paced statement each) each sit in the shard
// wire.HistoryShard names for their text ids and N, and are found there by
// GetExecutions, the statement every task's run is looked up with.
//
// Why that proves N: a workflow's rows lie in one shard, the hash of its
// ids modulo the true count T. For N > T, or N not dividing T, the hash
// modulo N names the same shard with probability at most ½ per workflow.
// For N < T the row-above-N check refuses as soon as any row lies above N;
// if none does, N divides T or not: where it divides T every row's shard
// is the same under both counts, and a run whose true shard is above N has
// no row anywhere, so the lookups answer truly either way.
func (c *closedRule) proveShardCount(ctx context.Context) (int, error) {
	n := c.shards
	ids, err := c.er.ShardIDs(ctx)
	if err != nil {
		return 0, readFailed(err)
	}
	if len(ids) != int(n) || ids[0] != 1 || ids[len(ids)-1] != n {
		return 0, refuseClosed("the cluster claims %d history shards, but shards holds %d ids (%s)", n, len(ids), span(ids))
	}
	for i, id := range ids {
		if id != int32(i+1) {
			return 0, refuseClosed("shards holds ids %s, not exactly 1…%d", span(ids), n)
		}
	}
	top, any, err := c.er.MaxExecutionShard(ctx)
	if err != nil {
		return 0, readFailed(err)
	}
	if !any {
		return 0, nil
	}
	if top > n || top < 1 {
		return 0, refuseClosed("executions holds a row of shard %d, outside 1…%d", top, n)
	}
	// The first workflows in key order, each one paced statement.
	var keys []store.ExecutionKey
	var after *store.ExecutionKey
	for len(keys) < MinProofWorkflows {
		k, ok, err := c.er.NextWorkflow(ctx, after)
		if err != nil {
			return 0, readFailed(err)
		}
		if !ok {
			break
		}
		after = &k
		ns := wire.NamespaceID(k.NamespaceID).String()
		if want := wire.HistoryShard(ns, k.WorkflowID, n); want != k.ShardID {
			return 0, refuseClosed("workflow %q of namespace %s sits in shard %d, but %d shards put it in %d: the shard count is not the one its rows were written with", k.WorkflowID, ns, k.ShardID, n, want)
		}
		keys = append(keys, k)
	}
	states, missing, err := c.lookup(ctx, keys)
	if err != nil {
		return 0, readFailed(err)
	}
	if len(missing) > 0 {
		k := missing[0]
		return 0, refuseClosed("workflow %q of namespace %s was not found in shard %d where %d shards put it: the shard count is not proven", k.WorkflowID, wire.NamespaceID(k.NamespaceID), k.ShardID, n)
	}
	return len(states), nil
}

// span describes a sorted list of shard ids.
func span(ids []int32) string {
	if len(ids) == 0 {
		return "none"
	}
	return fmt.Sprintf("%d…%d", ids[0], ids[len(ids)-1])
}

// setupClosed reads the shard count and the namespaces when the rule is
// on, and proves the count for the inference from absence.
func (p *pass) setupClosed(ctx context.Context) error {
	if !p.cfg.ClosedWorkflows || p.cfg.Compat == CompatTemporal {
		return nil
	}
	c, err := newClosedRule(ctx, p.st.exec, p.book, p.cfg.Rules)
	if err != nil {
		return err
	}
	p.closed = c
	log := p.cfg.Logger
	log.Info("closed-workflow rule on", "history_shards", c.shards, "namespaces", len(c.ns), "global_namespaces", p.cfg.ClosedWorkflowsGlobal, "deleted_runs", p.cfg.ClosedDeletedRuns)
	switch {
	case !p.cfg.ClosedDeletedRuns:
		log.Info("closed-workflow rule: tasks of runs missing from executions are kept and counted as run_not_found; --closed-deleted-runs deletes those of runs deleted by retention, once the history shard count is proven")
	case c.proven:
		log.Info("closed-workflow rule: history shard count proven; runs missing from executions count as deleted by retention", "history_shards", c.shards, "workflows_found", c.sampled)
	default:
		log.Warn(fmt.Sprintf("closed-workflow rule: fewer than %d workflows in executions to prove the history shard count: runs missing from executions are kept this pass, but where their workflow's current row points at another run", MinProofWorkflows), "workflows_found", c.sampled)
	}
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
