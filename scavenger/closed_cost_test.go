package scavenger_test

// The closed-workflow rule's cost per pass (issue 31): it reads past a live
// head, where a pass without it stops, and looks each page's runs up. This
// measures it, with and without the rule, and prints the ratios. Run:
//
//	TQS_BENCH_CLOSED=1 go test -count=1 -v -run TestClosedWorkflowsCost ./scavenger
//
// (with TQS_TEST_POSTGRES / TQS_TEST_MYSQL for the server engines). It
// asserts only the bound the rule documents: at most one task read and
// two lookup statements per page of a queue's tasks beyond what the pass
// without it issues.

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tqscavenger/tqscavenger/internal/fixture"
	"github.com/tqscavenger/tqscavenger/internal/testdb"
	"github.com/tqscavenger/tqscavenger/scavenger"
	"github.com/tqscavenger/tqscavenger/sqlstore"
	"github.com/tqscavenger/tqscavenger/store"
	"github.com/tqscavenger/tqscavenger/wire"
)

// costRun is one measured pass.
type costRun struct {
	took                 time.Duration
	statements, examined int64
	deleted              int64
	// reads: ReadTasks calls; lookups: GetExecutions and
	// GetCurrentExecutions calls.
	reads, lookups int64
}

// countingStore counts the task reads and the rule's lookups of a pass;
// the rest of *sqlstore.DB (the ExecutionReader the rule asserts) is
// promoted.
type countingStore struct {
	*sqlstore.DB
	reads, lookups atomic.Int64
	maxKeys        atomic.Int64 // the most keys one GetExecutions call carried
}

func (c *countingStore) ReadTasks(ctx context.Context, t store.Table, q store.QueueKey, after *store.TaskKey, n int) ([]store.TaskRow, error) {
	c.reads.Add(1)
	return c.DB.ReadTasks(ctx, t, q, after, n)
}

func (c *countingStore) GetExecutions(ctx context.Context, keys []store.ExecutionKey) ([]store.ExecutionRow, error) {
	c.lookups.Add(1)
	if n := int64(len(keys)); n > c.maxKeys.Load() {
		c.maxKeys.Store(n)
	}
	return c.DB.GetExecutions(ctx, keys)
}

func (c *countingStore) GetCurrentExecutions(ctx context.Context, keys []store.ExecutionKey) ([]store.CurrentExecutionRow, error) {
	c.lookups.Add(1)
	return c.DB.GetCurrentExecutions(ctx, keys)
}

// measure runs a pass with cfg on db and returns what it cost.
func measure(t *testing.T, db *sqlstore.DB, cfg scavenger.Config) costRun {
	t.Helper()
	cs := &countingStore{DB: db}
	s0 := db.Stats().Statements
	start := time.Now()
	st, err := scavenger.New(cs, cfg).Run(context.Background())
	took := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	return costRun{took: took, statements: db.Stats().Statements - s0, examined: st.TasksProcessed, deleted: st.TasksDeleted,
		reads: cs.reads.Load(), lookups: cs.lookups.Load()}
}

// median3 returns the run of median time of three.
func median3(runs []costRun) costRun {
	slices.SortFunc(runs, func(a, b costRun) int { return int(a.took - b.took) })
	return runs[len(runs)/2]
}

const costRepeat = 3

// perRead is the most lookup statements of one kind a page of tasks
// read can need: its distinct runs, LookupChunk a statement.
const perRead = (scavenger.DefaultTaskBatchSize + store.LookupChunk - 1) / store.LookupChunk

func TestClosedWorkflowsCost(t *testing.T) {
	if os.Getenv("TQS_BENCH_CLOSED") != "1" {
		t.Skip("a measurement: TQS_BENCH_CLOSED=1 runs it (see the file's comment)")
	}
	var rows []string
	row := func(engine, name string, off, on costRun) {
		rows = append(rows, fmt.Sprintf("| %s | %s | %s | %d | %d | %s | %d | %d | %d / %d | %.2f | %.2f |", engine, name,
			off.took.Round(time.Millisecond), off.statements, off.examined, on.took.Round(time.Millisecond), on.statements, on.examined,
			on.reads, on.lookups, float64(on.took)/float64(off.took), float64(on.statements)/float64(off.statements)))
		// The bound the rule documents: one executions lookup per page
		// of tasks read, and one current_executions lookup per page with
		// runs missing.
		if on.lookups > 2*perRead*on.reads || off.lookups != 0 {
			t.Errorf("%s %s: %d lookups for %d task reads (bound: %d a read); %d without the rule", engine, name, on.lookups, on.reads, 2*perRead, off.lookups)
		}
	}

	// A real Temporal server's database: each pass on a fresh copy.
	var off, on []costRun
	for range costRepeat {
		for _, rule := range []bool{false, true} {
			db, err := sqlstore.Open(context.Background(), "sqlite:"+fixture.Path(t, "temporal-1.32-aged72h"), sqlstore.Options{})
			if err != nil {
				t.Fatal(err)
			}
			cfg := baseConfig()
			cfg.Now = func() time.Time { return fixtureNow }
			cfg.ClosedWorkflows = rule
			r := measure(t, db, cfg)
			db.Close()
			if rule {
				on = append(on, r)
			} else {
				off = append(off, r)
			}
		}
	}
	row("SQLite", "temporal-1.32-aged72h (3,446 tasks)", median3(off), median3(on))

	// The rule's worst case: every queue's head is live and every task's
	// run is running, so the pass without the rule reads one task a queue
	// and the rule reads them all and looks every run up, deleting
	// nothing (the same database serves every pass).
	for _, e := range testdb.Engines {
		if e != sqlstore.SQLite && os.Getenv(testdb.EnvVar(e)) == "" {
			continue
		}
		for _, size := range [][2]int{{100, 200}, {10, 5000}} {
			costLiveHeads(t, e, size[0], size[1], row)
		}
	}
	t.Logf("\n| engine | case | without: time | statements | tasks examined | with --closed-workflows: time | statements | tasks examined | task reads / lookups | time ratio | statements ratio |\n|---|---|---|---|---|---|---|---|---|---|---|\n%s",
		strings.Join(rows, "\n"))
}

// costLiveHeads measures the passes on queues whose heads are live.
func costLiveHeads(t *testing.T, e sqlstore.Engine, queues, perQueue int, row func(engine, name string, off, on costRun)) {
	{
		db := testdb.Open(t, e)
		liveHeads(t, db, queues, perQueue)
		var off, on []costRun
		for range costRepeat {
			for _, rule := range []bool{false, true} {
				cfg := baseConfig()
				cfg.ClosedWorkflows, cfg.Orphans = rule, scavenger.OrphansNone
				r := measure(t, db, cfg)
				if r.deleted != 0 {
					t.Fatalf("%s: the pass deleted %d tasks of running runs", e, r.deleted)
				}
				if rule {
					on = append(on, r)
				} else {
					off = append(off, r)
				}
			}
		}
		moff, mon := median3(off), median3(on)
		row(string(e), fmt.Sprintf("live heads, running runs: %d queues × %d tasks", queues, perQueue), moff, mon)
		// The bound: every task read (pages of TaskBatchSize), and per
		// page one executions lookup (a current_executions one only for
		// runs missing, none here).
		// Every task is read past the live heads; every run is found, so
		// no page looks current_executions up.
		if mon.examined != int64(queues*perQueue) || mon.lookups > perRead*mon.reads {
			t.Errorf("%s: with the rule %d tasks examined (want %d), %d lookups for %d reads", e, mon.examined, queues*perQueue, mon.lookups, mon.reads)
		}
	}
}

// liveHeads writes queues of perQueue tasks without expiry, each of a run
// whose executions row is RUNNING, into 4 history shards.
func liveHeads(t *testing.T, db *sqlstore.DB, queues, perQueue int) {
	t.Helper()
	ctx := context.Background()
	const shards = 4
	testdb.CreateHistoryTables(t, db)
	testdb.InsertShards(t, db, shards)
	testdb.InsertClusterMetadata(t, db, "active", shards)
	testdb.InsertNamespace(t, db, nsOne, "one", 72*time.Hour, false)
	h := testdb.SQL(t, db)
	ph := func(i int) string {
		if db.Engine() == sqlstore.Postgres {
			return fmt.Sprintf("$%d", i)
		}
		return "?"
	}
	for q := range queues {
		name := fmt.Sprintf("live-%d", q)
		id := wire.QueueID(nsOne, name, wire.TaskTypeActivity, 0)
		key := store.QueueKey{RangeHash: wire.RangeHash(id), ID: id}
		info := wire.TaskQueueInfo{NamespaceID: nsOne.String(), Name: name, TaskType: wire.TaskTypeActivity, LastUpdateTime: now.Add(-72 * time.Hour)}
		if err := db.CreateQueue(ctx, store.V1, store.QueueRow{QueueKey: key, RangeID: 1, Data: wire.EncodeTaskQueueInfo(info), Encoding: wire.EncodingProto3}); err != nil {
			t.Fatal(err)
		}
		var tasks []store.TaskRow
		var vals []string
		var args []any
		flush := func() {
			if len(vals) == 0 {
				return
			}
			if _, err := h.ExecContext(ctx, "INSERT INTO executions (shard_id, namespace_id, workflow_id, run_id, next_event_id, last_write_version, data, data_encoding, state, state_encoding) VALUES "+strings.Join(vals, ", "), args...); err != nil {
				t.Fatal(err)
			}
			vals, args = vals[:0], args[:0]
		}
		for i := range perQueue {
			if len(vals) == 500 {
				flush()
			}
			run := wire.NamespaceID{0xee, 12: byte(q >> 8), 13: byte(q), 14: byte(i >> 8), 15: byte(i)}
			wf := fmt.Sprintf("wf-%d-%d", q, i)
			ti := wire.TaskInfo{NamespaceID: nsOne.String(), WorkflowID: wf, RunID: run.String(), CreateTime: now.Add(-time.Hour), ScheduledEventID: 5}
			tasks = append(tasks, store.TaskRow{Key: store.TaskKey{ID: int64(i + 1)}, Data: wire.EncodeAllocatedTaskInfo(wire.AllocatedTaskInfo{TaskID: int64(i + 1), Data: ti}), Encoding: wire.EncodingProto3})
			n := len(args)
			vals = append(vals, fmt.Sprintf("(%s, %s, %s, %s, 1, 0, %s, 'Proto3', %s, 'Proto3')", ph(n+1), ph(n+2), ph(n+3), ph(n+4), ph(n+5), ph(n+6)))
			args = append(args, wire.HistoryShard(nsOne.String(), wf, shards), nsOne[:], wf, run[:], make([]byte, 1024), wire.EncodeExecutionState(run.String(), wire.StateRunning))
		}
		flush()
		for len(tasks) > 0 {
			n := min(len(tasks), 1000)
			if err := db.AppendTasks(ctx, store.V1, key, 1, key, tasks[:n]); err != nil {
				t.Fatal(err)
			}
			tasks = tasks[n:]
		}
	}
}

// TestClosedLookupsPaced: the rule asks the store for at most
// store.LookupChunk runs a call, one statement each, so that every lookup
// statement waits for the pass's pace (a page of 250 runs: 3 calls).
func TestClosedLookupsPaced(t *testing.T) {
	db := testdb.Open(t, sqlstore.SQLite)
	liveHeads(t, db, 1, 250)
	cs := &countingStore{DB: db}
	cfg := baseConfig()
	cfg.ClosedWorkflows, cfg.Orphans = true, scavenger.OrphansNone
	if _, err := scavenger.New(cs, cfg).Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := cs.maxKeys.Load(); got > store.LookupChunk || cs.lookups.Load() != 3 {
		t.Errorf("%d lookup calls, the largest of %d keys; want 3 of at most %d (each paced)", cs.lookups.Load(), got, store.LookupChunk)
	}
}
