package scavenger

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tqscavenger/tqscavenger/internal/pace"
	"github.com/tqscavenger/tqscavenger/internal/testdb"
	"github.com/tqscavenger/tqscavenger/sqlstore"
	"github.com/tqscavenger/tqscavenger/store"
	"github.com/tqscavenger/tqscavenger/wire"
)

// storeOnly is a Config.Middleware that wraps only store.Store, as most
// do: it counts the calls it sees and implements no optional interface.
type storeOnly struct {
	next  store.Store
	calls atomic.Int64
	// onTables, if set, runs at its first Tables call.
	onTables func()
	once     sync.Once
}

func (s *storeOnly) Tables(ctx context.Context) ([]store.Table, error) {
	s.calls.Add(1)
	if s.onTables != nil {
		s.once.Do(s.onTables)
	}
	return s.next.Tables(ctx)
}

func (s *storeOnly) ListQueues(ctx context.Context, t store.Table, after *store.QueueKey, limit int) ([]store.QueueRow, error) {
	s.calls.Add(1)
	return s.next.ListQueues(ctx, t, after, limit)
}

func (s *storeOnly) GetQueue(ctx context.Context, t store.Table, q store.QueueKey) (store.QueueRow, error) {
	s.calls.Add(1)
	return s.next.GetQueue(ctx, t, q)
}

func (s *storeOnly) ReadTasks(ctx context.Context, t store.Table, q store.QueueKey, after *store.TaskKey, limit int) ([]store.TaskRow, error) {
	s.calls.Add(1)
	return s.next.ReadTasks(ctx, t, q, after, limit)
}

func (s *storeOnly) ScanTasks(ctx context.Context, t store.Table, after store.TaskPos, through store.QueueKey, limit int) ([]store.ScannedTask, error) {
	s.calls.Add(1)
	return s.next.ScanTasks(ctx, t, after, through, limit)
}

func (s *storeOnly) ListTaskQueueIDs(ctx context.Context, t store.Table, after *store.QueueKey, limit int) ([]store.TaskQueueRef, error) {
	s.calls.Add(1)
	return s.next.ListTaskQueueIDs(ctx, t, after, limit)
}

func (s *storeOnly) DeleteTaskSets(ctx context.Context, t store.Table, sets []store.TaskSet) (int64, error) {
	s.calls.Add(1)
	return s.next.DeleteTaskSets(ctx, t, sets)
}

func (s *storeOnly) DeleteTasks(ctx context.Context, t store.Table, q store.QueueKey, r store.TaskRange, limit int) (int64, error) {
	s.calls.Add(1)
	return s.next.DeleteTasks(ctx, t, q, r, limit)
}

func (s *storeOnly) DeleteOrphanTasks(ctx context.Context, t store.Table, q store.QueueKey, parents []store.QueueKey, keys []store.TaskKey) (int64, error) {
	s.calls.Add(1)
	return s.next.DeleteOrphanTasks(ctx, t, q, parents, keys)
}

func (s *storeOnly) DeleteQueues(ctx context.Context, t store.Table, fences []store.QueueFence) (int64, error) {
	s.calls.Add(1)
	return s.next.DeleteQueues(ctx, t, fences)
}

// optionalCalls counts the calls of the optional interfaces, by method,
// and runs a hook before a method's first call.
type optionalCalls struct {
	mu     sync.Mutex
	n      map[string]int
	before map[string]func()
}

func (o *optionalCalls) saw(method string) {
	o.mu.Lock()
	if o.n == nil {
		o.n = map[string]int{}
	}
	o.n[method]++
	first := o.n[method] == 1
	f := o.before[method]
	o.mu.Unlock()
	if first && f != nil {
		f()
	}
}

func (o *optionalCalls) counts() map[string]int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return maps.Clone(o.n)
}

func (o *optionalCalls) total() int {
	n := 0
	for _, c := range o.counts() {
		n += c
	}
	return n
}

// withOptional is a store.Store that implements the optional interfaces
// by passing each call on to those of the store it wraps, counting it: at
// the bottom of the stack over a *sqlstore.DB, or as a Config.Middleware
// that sees them.
type withOptional struct {
	store.Store
	calls *optionalCalls
}

func (w withOptional) er() store.ExecutionReader { return w.Store.(store.ExecutionReader) }

func (w withOptional) ClusterMetadata(ctx context.Context) ([]store.ClusterMetadataRow, error) {
	w.calls.saw("ClusterMetadata")
	return w.er().ClusterMetadata(ctx)
}

func (w withOptional) ShardIDs(ctx context.Context) ([]int32, error) {
	w.calls.saw("ShardIDs")
	return w.er().ShardIDs(ctx)
}

func (w withOptional) MaxExecutionShard(ctx context.Context) (int32, bool, error) {
	w.calls.saw("MaxExecutionShard")
	return w.er().MaxExecutionShard(ctx)
}

func (w withOptional) NextWorkflow(ctx context.Context, after *store.ExecutionKey) (store.ExecutionKey, bool, error) {
	w.calls.saw("NextWorkflow")
	return w.er().NextWorkflow(ctx, after)
}

func (w withOptional) GetExecutions(ctx context.Context, keys []store.ExecutionKey) ([]store.ExecutionRow, error) {
	w.calls.saw("GetExecutions")
	return w.er().GetExecutions(ctx, keys)
}

func (w withOptional) GetCurrentExecutions(ctx context.Context, keys []store.ExecutionKey) ([]store.CurrentExecutionRow, error) {
	w.calls.saw("GetCurrentExecutions")
	return w.er().GetCurrentExecutions(ctx, keys)
}

func (w withOptional) Namespaces(ctx context.Context) ([]store.NamespaceRow, error) {
	w.calls.saw("Namespaces")
	return w.er().Namespaces(ctx)
}

func (w withOptional) OddHashes(ctx context.Context, t store.Table, limit int) (store.OddHashes, error) {
	w.calls.saw("OddHashes")
	return w.Store.(store.OddHashFinder).OddHashes(ctx, t, limit)
}

// optionalDB writes a queue of three tasks without expiry whose runs are
// COMPLETED (the closed-workflow rule deletes them) and, where the
// range_hash column can hold it, a queue row at range_hash −1 (the pass
// reports it as a bad row). It returns how many odd rows it wrote.
func optionalDB(t *testing.T, db *sqlstore.DB, now time.Time) int {
	t.Helper()
	ctx := context.Background()
	ns := wire.NamespaceID{0x11, 15: 1}
	testdb.CreateHistoryTables(t, db)
	testdb.InsertShards(t, db, 4)
	testdb.InsertClusterMetadata(t, db, "active", 4)
	testdb.InsertNamespace(t, db, ns, "one", 72*time.Hour, false)
	id := wire.QueueID(ns, "closed", wire.TaskTypeActivity, 0)
	key := store.QueueKey{RangeHash: wire.RangeHash(id), ID: id}
	info := wire.TaskQueueInfo{NamespaceID: ns.String(), Name: "closed", TaskType: wire.TaskTypeActivity, LastUpdateTime: now.Add(-72 * time.Hour)}
	if err := db.CreateQueue(ctx, store.V1, store.QueueRow{QueueKey: key, RangeID: 1, Data: wire.EncodeTaskQueueInfo(info), Encoding: wire.EncodingProto3}); err != nil {
		t.Fatal(err)
	}
	var tasks []store.TaskRow
	for i := range 3 {
		wf, run := fmt.Sprintf("wf-%d", i), wire.NamespaceID{0xee, 15: byte(i + 1)}
		testdb.InsertExecution(t, db, 4, ns, wf, run, wire.StateCompleted)
		ti := wire.TaskInfo{NamespaceID: ns.String(), WorkflowID: wf, RunID: run.String(), CreateTime: now.Add(-time.Hour), ScheduledEventID: 5}
		tasks = append(tasks, store.TaskRow{Key: store.TaskKey{ID: int64(i + 1)}, Data: wire.EncodeAllocatedTaskInfo(wire.AllocatedTaskInfo{TaskID: int64(i + 1), Data: ti}), Encoding: wire.EncodingProto3})
	}
	if err := db.AppendTasks(ctx, store.V1, key, 1, key, tasks); err != nil {
		t.Fatal(err)
	}
	if db.Engine() == sqlstore.MySQL {
		return 0 // INT UNSIGNED: no range_hash outside 0…2³²−1
	}
	testdb.Exec(t, db, "INSERT INTO task_queues (range_hash, task_queue_id, range_id, data, data_encoding) SELECT -1, task_queue_id, range_id, data, data_encoding FROM task_queues")
	return 1
}

// TestOptionalThroughMiddleware: the closed-workflow rule's reads and the
// odd-hash finding go through the pass's middleware as its Store calls
// do, beside a Config.Middleware that wraps only store.Store: the rule
// deletes what it deletes without one and the odd row is reported; every
// optional call reaches the store, is charged to the statement rate limit
// (the charge is the Store calls the middleware saw plus the optional
// calls the store got) and to the pace's controller (a kind of its own per
// method); one that starts after Shutdown is refused by the gate, never
// reaching the store; a Config.Middleware that implements the interfaces
// sees every such call.
func TestOptionalThroughMiddleware(t *testing.T) {
	now := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	cases := []struct {
		name string
		dry  bool
		// sees: a second Config.Middleware, implementing the optional
		// interfaces, under the one that wraps only Store.
		sees bool
		// shutdownAt: Shutdown is called at the first call of this
		// method (Tables: the middleware's; an optional one: the
		// store's, after which it runs).
		shutdownAt string
		// want: the optional calls the store gets at least once (and
		// exactly, with a shutdown).
		want []string
	}{
		{name: "store-only middleware", want: []string{"OddHashes", "ClusterMetadata", "Namespaces", "GetExecutions"}},
		{name: "dry run", dry: true, want: []string{"OddHashes", "ClusterMetadata", "Namespaces", "GetExecutions"}},
		{name: "a middleware that sees them", sees: true, want: []string{"OddHashes", "ClusterMetadata", "Namespaces", "GetExecutions"}},
		{name: "shutdown before the odd-hash read", shutdownAt: "Tables", want: nil},
		{name: "shutdown before the rule's reads", shutdownAt: "OddHashes", want: []string{"OddHashes"}},
	}
	for _, e := range testdb.Engines {
		for _, c := range cases {
			t.Run(string(e)+"/"+c.name, func(t *testing.T) {
				db := testdb.Open(t, e)
				odd := optionalDB(t, db, now)
				bottom := &optionalCalls{before: map[string]func(){}}
				seen := &optionalCalls{}
				only := &storeOnly{}
				mw := []store.Middleware{func(next store.Store) store.Store { only.next = next; return only }}
				if c.sees {
					mw = append(mw, func(next store.Store) store.Store { return withOptional{Store: next, calls: seen} })
				}
				cfg := Config{
					Rules: Rules{ClosedWorkflows: true, Orphans: OrphansNone, DryRun: c.dry, Tables: []store.Table{store.V1}},
					// A rate the pass never waits on, whose charges the
					// test reads.
					Pace:  Pace{MaxStatementsPerSecond: 1e6, RetryInitial: time.Millisecond, RetryMax: 5 * time.Millisecond},
					Hooks: Hooks{Now: func() time.Time { return now }, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Middleware: mw},
				}
				s := New(withOptional{Store: db, calls: bottom}, cfg)
				var paced *pace.Pacer
				s.onPacer = func(got *pace.Pacer) { paced = got }
				l := s.tune.stmts
				shutdown := func() { s.closeOnce.Do(func() { close(s.closing) }) }
				switch c.shutdownAt {
				case "":
				case "Tables":
					only.onTables = shutdown
				default:
					bottom.before[c.shutdownAt] = shutdown
				}

				st, err := s.Run(context.Background())
				got := bottom.counts()
				if c.shutdownAt != "" {
					if st.Outcome != Interrupted || !errors.Is(err, ErrShutdown) {
						t.Fatalf("outcome %s, err %v; want interrupted by the shutdown", st.Outcome, err)
					}
					want := map[string]int{}
					for _, m := range c.want {
						want[m] = 1
					}
					if !maps.Equal(got, want) {
						t.Errorf("the store got %v; want %v (nothing after the shutdown)", got, want)
					}
					return
				}
				if err != nil || st.Outcome != CompletedBadRows && odd > 0 || st.Outcome != Completed && odd == 0 {
					t.Fatalf("outcome %s, err %v", st.Outcome, err)
				}
				deleted := st.Tables[store.V1].TasksDeleted[ReasonClosedWorkflow] + st.Tables[store.V1].WouldDeleteTasks[ReasonClosedWorkflow]
				var oddRows int64
				for _, b := range st.BadRows {
					var oh *OddHashError
					if errors.As(b.Err, &oh) {
						oddRows++
					}
				}
				if deleted != 3 || oddRows != int64(odd) {
					t.Errorf("the rule deleted %d tasks (want 3), %d odd rows reported (want %d)", deleted, oddRows, odd)
				}
				for _, m := range c.want {
					if got[m] == 0 {
						t.Errorf("the store got no %s call: %v", m, got)
					}
				}
				charged := l.Charged()
				if want := only.calls.Load() + int64(bottom.total()); charged != want {
					t.Errorf("rate limit charged %d statements; want %d (%d Store calls, optional ones %v)", charged, want, only.calls.Load(), got)
				}
				methods := paced.Methods()
				for m := range got {
					if !slices.Contains(methods, m) {
						t.Errorf("the pace's controller saw no %s statement (kinds: %v)", m, methods)
					}
				}
				if c.sees && !maps.Equal(seen.counts(), got) {
					t.Errorf("the middleware that implements them saw %v; the store got %v", seen.counts(), got)
				}
			})
		}
	}
}

// TestOptionalOfStack: the pass calls an optional interface only where a
// store of its stack implements it, whatever wraps it; a middleware that
// implements one over a store that does not is told ErrUnsupported.
func TestOptionalOfStack(t *testing.T) {
	bare := &storeOnly{} // implements neither, wraps nothing it calls
	cases := []struct {
		name      string
		st        store.Store
		mw        []store.Middleware
		exec, odd bool
	}{
		{"a store with neither", bare, nil, false, false},
		{"a store with both, under a store-only middleware", withOptional{Store: bare}, []store.Middleware{func(next store.Store) store.Store { return &storeOnly{next: next} }}, true, true},
		{"a middleware with both over a store with neither", bare, []store.Middleware{func(next store.Store) store.Store { return withOptional{Store: next, calls: &optionalCalls{}} }}, true, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := Config{Hooks: Hooks{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Middleware: c.mw}}
			s := New(c.st, cfg)
			var refused atomic.Int64
			ps, _ := s.stack(context.Background(), &refused, nil)
			if (ps.exec != nil) != c.exec || (ps.odd != nil) != c.odd {
				t.Fatalf("exec %t, odd %t; want %t, %t", ps.exec != nil, ps.odd != nil, c.exec, c.odd)
			}
			if c.st == bare && c.exec {
				if _, err := ps.exec.Namespaces(context.Background()); !errors.Is(err, errors.ErrUnsupported) {
					t.Errorf("Namespaces over a store without them: %v, want ErrUnsupported", err)
				}
			}
		})
	}
}
