package scavenger_test

// The closed-workflow rule's conformance tests: every engine, runs in
// every state, 4 and 16 history shards, the shard-count proof's refusals.

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/tqscavenger/tqscavenger/internal/testdb"
	"github.com/tqscavenger/tqscavenger/scavenger"
	"github.com/tqscavenger/tqscavenger/sqlstore"
	"github.com/tqscavenger/tqscavenger/store"
	"github.com/tqscavenger/tqscavenger/wire"
)

var (
	nsOne    = wire.NamespaceID{0x11, 15: 1}
	nsTwo    = wire.NamespaceID{0x22, 15: 2}
	nsGlobal = wire.NamespaceID{0x33, 15: 3}
)

// closedCase is one task of the queue and what the rule must do with it.
type closedCase struct {
	name string
	// the task's run: namespace, workflow, run byte (0: empty run id)
	ns  wire.NamespaceID
	wf  string
	run byte
	age time.Duration // how long before now the task was created
	// ref: a component_ref; history: how the run's rows are set up
	ref     bool
	history func(t *testing.T, db *sqlstore.DB, n int32, c closedCase)
	// gone: the reason it goes with ClosedDeletedRuns and the shard count
	// proven ("": kept). A ReasonRunDeleted case is kept without
	// ClosedDeletedRuns, and with it unproven unless byCurrent (its
	// workflow's current row, in the same shard, points at another run).
	gone      scavenger.Reason
	byCurrent bool
	// missing: the rule looks its run up and finds no executions row, so
	// that, kept, it counts in Stats.TasksRunNotFound.
	missing bool
}

func runID(b byte) wire.NamespaceID { return wire.NamespaceID{0xee, 14: 0x01, 15: b} }

func withState(s wire.ExecutionState) func(*testing.T, *sqlstore.DB, int32, closedCase) {
	return func(t *testing.T, db *sqlstore.DB, n int32, c closedCase) {
		k := testdb.InsertExecution(t, db, n, c.ns, c.wf, runID(c.run), s)
		if s != wire.StateCompleted {
			testdb.InsertCurrent(t, db, k, s)
		}
	}
}

// runGone: the run's executions row was deleted by retention; the
// workflow's current row points at a later run (pointsAt false) or at this
// one.
func runGone(pointsAtIt bool) func(*testing.T, *sqlstore.DB, int32, closedCase) {
	return func(t *testing.T, db *sqlstore.DB, n int32, c closedCase) {
		cur := runID(c.run + 100)
		if pointsAtIt {
			cur = runID(c.run)
		}
		k := store.ExecutionKey{ShardID: wire.HistoryShard(c.ns.String(), c.wf, n), NamespaceID: c.ns, WorkflowID: c.wf, RunID: cur}
		testdb.InsertCurrent(t, db, k, wire.StateRunning)
	}
}

func closedCases() []closedCase {
	const old = 72*time.Hour + scavenger.RunDeletedMargin + time.Hour
	return []closedCase{
		// The head is live: the rule works past it.
		{name: "running", ns: nsOne, wf: "running", run: 1, history: withState(wire.StateRunning)},
		{name: "completed", ns: nsOne, wf: "completed", run: 2, history: withState(wire.StateCompleted), gone: scavenger.ReasonClosedWorkflow},
		{name: "created (cron or retry backoff)", ns: nsOne, wf: "created", run: 3, history: withState(wire.StateCreated)},
		{name: "zombie", ns: nsOne, wf: "zombie", run: 4, history: withState(wire.StateZombie)},
		{name: "corrupted", ns: nsOne, wf: "corrupted", run: 5, history: withState(wire.StateCorrupted)},
		{name: "unreadable state", ns: nsOne, wf: "unreadable", run: 6, history: func(t *testing.T, db *sqlstore.DB, n int32, c closedCase) {
			k := store.ExecutionKey{ShardID: wire.HistoryShard(c.ns.String(), c.wf, n), NamespaceID: c.ns, WorkflowID: c.wf, RunID: runID(c.run)}
			testdb.InsertExecutionRow(t, db, k, []byte{0x18}) // field 3, its varint cut off
		}},
		{name: "run deleted, older than retention", ns: nsOne, wf: "deleted-old", run: 7, age: old, history: runGone(false), gone: scavenger.ReasonRunDeleted, byCurrent: true, missing: true},
		{name: "workflow deleted (no current row), older than retention", ns: nsOne, wf: "deleted-whole", run: 19, age: old, gone: scavenger.ReasonRunDeleted, missing: true},
		{name: "run deleted, younger than retention", ns: nsOne, wf: "deleted-young", run: 8, age: 72 * time.Hour, history: runGone(false), missing: true},
		{name: "run missing, current points at it", ns: nsOne, wf: "deleted-current", run: 9, age: old, history: runGone(true), missing: true},
		{name: "reset: old run", ns: nsOne, wf: "reset", run: 10, history: withState(wire.StateCompleted), gone: scavenger.ReasonClosedWorkflow},
		{name: "reset: new run", ns: nsOne, wf: "reset", run: 11, history: withState(wire.StateRunning)},
		{name: "continue-as-new: first run", ns: nsOne, wf: "can", run: 12, history: withState(wire.StateCompleted), gone: scavenger.ReasonClosedWorkflow},
		{name: "continue-as-new: next run", ns: nsOne, wf: "can", run: 13, history: withState(wire.StateRunning)},
		{name: "empty run id", ns: nsOne, wf: "no-run", run: 0, age: old},
		{name: "component_ref", ns: nsOne, wf: "chasm", run: 14, ref: true, history: withState(wire.StateCompleted)},
		{name: "same workflow id, namespace one: completed", ns: nsOne, wf: "shared", run: 15, history: withState(wire.StateCompleted), gone: scavenger.ReasonClosedWorkflow},
		{name: "same workflow id, namespace two: running", ns: nsTwo, wf: "shared", run: 16, history: withState(wire.StateRunning)},
		{name: "global namespace", ns: nsGlobal, wf: "global", run: 17, history: withState(wire.StateCompleted)},
		{name: "unknown namespace, run missing", ns: wire.NamespaceID{0x44}, wf: "nons", run: 18, age: old, missing: true},
	}
}

// closedQueue writes the cases' tasks, in order and without expiry, into
// one queue, and the history rows of n shards.
func closedQueue(t *testing.T, db *sqlstore.DB, n int32, cases []closedCase) store.QueueKey {
	t.Helper()
	return closedQueueRows(t, db, n, n, n, cases)
}

// closedTasks writes the namespaces, the queue and the cases' tasks and
// history rows, the rows where n shards put them.
func closedTasks(t *testing.T, db *sqlstore.DB, n int32, cases []closedCase) store.QueueKey {
	t.Helper()
	testdb.InsertNamespace(t, db, nsOne, "one", 72*time.Hour, false)
	testdb.InsertNamespace(t, db, nsTwo, "two", 72*time.Hour, false)
	testdb.InsertNamespace(t, db, nsGlobal, "global", 72*time.Hour, true)
	q := queueKey("closed-runs", 0)
	info := wire.TaskQueueInfo{NamespaceID: seed0(), Name: "closed-runs", TaskType: wire.TaskTypeActivity, LastUpdateTime: now.Add(-72 * time.Hour)}
	if err := db.CreateQueue(context.Background(), store.V1, store.QueueRow{QueueKey: q, RangeID: 1, Data: wire.EncodeTaskQueueInfo(info), Encoding: wire.EncodingProto3}); err != nil {
		t.Fatal(err)
	}
	closedTasksInto(t, db, n, q, cases)
	return q
}

// closedTasksInto writes the cases' tasks into queue q, ids 1…, and their
// history rows where n shards put them.
func closedTasksInto(t *testing.T, db *sqlstore.DB, n int32, q store.QueueKey, cases []closedCase) {
	t.Helper()
	var rows []store.TaskRow
	for i, c := range cases {
		ti := wire.TaskInfo{NamespaceID: c.ns.String(), WorkflowID: c.wf, CreateTime: now.Add(-c.age - time.Minute), ScheduledEventID: 5}
		if c.run != 0 {
			ti.RunID = runID(c.run).String()
		}
		blob := wire.EncodeAllocatedTaskInfo(wire.AllocatedTaskInfo{TaskID: int64(i + 1), Data: ti})
		if c.ref {
			blob = wire.AppendComponentRef(blob, []byte("ref"))
		}
		rows = append(rows, store.TaskRow{Key: store.TaskKey{ID: int64(i + 1)}, Data: blob, Encoding: wire.EncodingProto3})
		if c.history != nil {
			c.history(t, db, n, c)
		}
	}
	if len(rows) == 0 {
		return
	}
	if err := db.AppendTasks(context.Background(), store.V1, q, 1, q, rows); err != nil {
		t.Fatal(err)
	}
}

func seed0() string { return queueNS.String() }

var queueNS = wire.NamespaceID{0x32, 0x04, 0x9b, 0x68, 0x78, 0x72, 0x40, 0x94, 0x8e, 0x63, 0xd0, 0xdd, 0x59, 0x89, 0x6a, 0x83}

func closedConfig(dry bool) scavenger.Config {
	c := baseConfig()
	c.ClosedWorkflows, c.DryRun, c.Orphans = true, dry, scavenger.OrphansNone
	return c
}

// closedMode is how TestClosedWorkflows runs the rule: alone (positive
// evidence only), or with ClosedDeletedRuns over a database whose shard
// count can be proven (fillers: MinProofWorkflows more workflows) or not.
type closedMode struct {
	name            string
	deleted, proven bool
}

// want is the reason c goes with under the mode ("": kept).
func (m closedMode) want(c closedCase) scavenger.Reason {
	if c.gone == scavenger.ReasonRunDeleted && (!m.deleted || !m.proven && !c.byCurrent) {
		return ""
	}
	return c.gone
}

func TestClosedWorkflows(t *testing.T) {
	modes := []closedMode{
		{name: "found only"},
		{name: "deleted runs, proven", deleted: true, proven: true},
		{name: "deleted runs, too few workflows", deleted: true},
	}
	for _, e := range testdb.Engines {
		for _, n := range []int32{4, 16} {
			for _, m := range modes {
				t.Run(fmt.Sprintf("%s/%d shards/%s", e, n, m.name), func(t *testing.T) {
					t.Parallel()
					testClosedWorkflows(t, e, n, m)
				})
			}
		}
	}
}

func testClosedWorkflows(t *testing.T, e sqlstore.Engine, n int32, m closedMode) {
	db := testdb.Open(t, e)
	cases := closedCases()
	q := closedQueue(t, db, n, cases)
	if m.proven {
		fillers(t, db, n, scavenger.MinProofWorkflows)
	}
	config := func(dry bool) scavenger.Config {
		c := closedConfig(dry)
		c.ClosedDeletedRuns = m.deleted
		return c
	}

	// A dry run counts what the real one deletes, and deletes
	// nothing.
	dry, err := scavenger.New(db, config(true)).Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got := countTasks(t, db, q); got != len(cases) {
		t.Fatalf("dry run left %d tasks, want %d", got, len(cases))
	}
	st, err := scavenger.New(db, config(false)).Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	left := map[int64]bool{}
	tasks, err := db.ReadTasks(context.Background(), store.V1, q, nil, 1000)
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range tasks {
		left[task.Key.ID] = true
	}
	want := map[scavenger.Reason]int64{}
	var notFound int64
	for i, c := range cases {
		gone := m.want(c)
		if kept := left[int64(i+1)]; kept != (gone == "") {
			t.Errorf("%s: kept %v, want kept %v", c.name, kept, gone == "")
		}
		if gone != "" {
			want[gone]++
		}
		if gone == "" && c.missing {
			notFound++
		}
	}
	for _, r := range []scavenger.Reason{scavenger.ReasonClosedWorkflow, scavenger.ReasonRunDeleted} {
		if st.Tables[store.V1].TasksDeleted[r] != want[r] || dry.Tables[store.V1].WouldDeleteTasks[r] != want[r] {
			t.Errorf("%s: deleted %d, dry run %d, want %d", r, st.Tables[store.V1].TasksDeleted[r], dry.Tables[store.V1].WouldDeleteTasks[r], want[r])
		}
	}
	if st.TasksRunNotFound != notFound || st.Tables[store.V1].TasksRunNotFound != notFound || dry.TasksRunNotFound != notFound {
		t.Errorf("run_not_found: %d (v1 %d), dry run %d; want %d", st.TasksRunNotFound, st.Tables[store.V1].TasksRunNotFound, dry.TasksRunNotFound, notFound)
	}
}

// fillers writes k running workflows of namespace two into executions,
// with the true shard count n: enough for the shard count's proof.
func fillers(t *testing.T, db *sqlstore.DB, n int32, k int) {
	t.Helper()
	for i := range k {
		testdb.InsertExecution(t, db, n, nsTwo, fmt.Sprintf("filler-%d", i), wire.NamespaceID{0xf1, 15: byte(i + 1)}, wire.StateRunning)
	}
}

// TestClosedWorkflowsGlobal: with ClosedWorkflowsGlobal a global
// namespace's closed run's task goes too.
func TestClosedWorkflowsGlobal(t *testing.T) {
	db := testdb.Open(t, sqlstore.SQLite)
	cases := []closedCase{{name: "global", ns: nsGlobal, wf: "global", run: 17, history: withState(wire.StateCompleted)}}
	q := closedQueue(t, db, 4, cases)
	cfg := closedConfig(false)
	cfg.ClosedWorkflowsGlobal = true
	if _, err := scavenger.New(db, cfg).Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := countTasks(t, db, q); n != 0 {
		t.Fatalf("%d tasks left, want the global namespace's closed run's task gone", n)
	}
}

// TestClosedWorkflowsRefused: with ClosedDeletedRuns a shard count not
// proven refuses the pass before anything is deleted; without it only a
// count that cannot be read at all does (a wrong one costs finds, never a
// wrong delete: TestClosedWorkflowsForgedCount).
func TestClosedWorkflowsRefused(t *testing.T) {
	const n = 8
	cases := []struct {
		name string
		// meta: the count the metadata row says (0: no row); shards: the
		// ids the shards table holds.
		meta, shards int32
	}{
		{"missing metadata row", 0, n},
		{"N/2 in the metadata", n / 2, n},
		{"2N in the metadata", 2 * n, n},
		{"N/2 throughout", n / 2, n / 2},
		{"2N throughout", 2 * n, 2 * n},
	}
	for _, e := range testdb.Engines {
		for _, c := range cases {
			t.Run(string(e)+"/"+c.name, func(t *testing.T) {
				t.Parallel()
				db := testdb.Open(t, e)
				testdb.CreateHistoryTables(t, db)
				testdb.InsertShards(t, db, int(c.shards))
				if c.meta != 0 {
					testdb.InsertClusterMetadata(t, db, "active", c.meta)
				}
				// Rows written with the true count, spread over its shards.
				for i := range 64 {
					testdb.InsertExecution(t, db, n, nsOne, fmt.Sprintf("wf-%d", i), runID(byte(i+1)), wire.StateCompleted)
				}
				cfg := closedConfig(false)
				cfg.ClosedDeletedRuns = true
				_, err := scavenger.New(db, cfg).Run(context.Background())
				if !errors.Is(err, scavenger.ErrClosedWorkflowsRefused) {
					t.Fatalf("err = %v, want ErrClosedWorkflowsRefused", err)
				}
				t.Log(err)
				_, err = scavenger.New(db, closedConfig(false)).Run(context.Background())
				if refused := errors.Is(err, scavenger.ErrClosedWorkflowsRefused); refused != (c.meta == 0) || !refused && err != nil {
					t.Fatalf("without ClosedDeletedRuns: err = %v, want refused %t", err, c.meta == 0)
				}
			})
		}
	}
}

// TestClosedWorkflowsNotInCompat: the rule is refused in compat mode.
func TestClosedWorkflowsNotInCompat(t *testing.T) {
	cfg := closedConfig(false)
	cfg.Compat = scavenger.CompatTemporal
	if err := cfg.Validate(); !errors.Is(err, scavenger.ErrClosedWorkflowsRefused) {
		t.Fatalf("Validate = %v, want ErrClosedWorkflowsRefused", err)
	}
}
