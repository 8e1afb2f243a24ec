package scavenger

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/tqscavenger/tqscavenger/internal/testdb"
	"github.com/tqscavenger/tqscavenger/seed"
	"github.com/tqscavenger/tqscavenger/sqlstore"
	"github.com/tqscavenger/tqscavenger/store"
	"github.com/tqscavenger/tqscavenger/wire"
)

var ruleNow = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func taskRow(id int64, create, expiry time.Time) store.TaskRow {
	blob := wire.EncodeAllocatedTaskInfo(wire.AllocatedTaskInfo{TaskID: id, Data: wire.TaskInfo{CreateTime: create, ExpiryTime: expiry}})
	return store.TaskRow{Key: store.TaskKey{Pass: 1, ID: id}, Data: blob, Encoding: wire.EncodingProto3}
}

// TestRuleBookTasks covers every task verdict of the rule book, with no
// store.
func TestRuleBookTasks(t *testing.T) {
	past, future := ruleNow.Add(-time.Hour), ruleNow.Add(time.Hour)
	expired, live, never := taskRow(5, past, past), taskRow(5, past, future), taskRow(5, past, time.Time{})
	bad := store.TaskRow{Key: store.TaskKey{Pass: 1, ID: 5}, Data: []byte{0xff, 0xff}, Encoding: wire.EncodingProto3}
	ack := subqueue{Ack: store.TaskKey{Pass: 1, ID: 5}, HasAck: true}
	noAck := subqueue{}
	cases := []struct {
		name   string
		r      Rules
		sq     subqueue
		row    store.TaskRow
		behind bool
		want   Why
		stop   bool
		del    bool
		err    bool
	}{
		{"expired", Rules{}, noAck, expired, false, WhyExpired, false, true, false},
		{"live", Rules{}, noAck, live, false, WhyLive, true, false, false},
		{"never expires", Rules{}, noAck, never, false, WhyLive, true, false, false},
		{"live with past-live-head does not stop", Rules{PastLiveHead: true}, noAck, live, false, WhyLive, false, false, false},
		{"unreadable: kept, stops", Rules{}, noAck, bad, false, WhyBad, true, false, true},
		{"unreadable with past-live-head", Rules{PastLiveHead: true}, noAck, bad, false, WhyBad, false, false, true},
		{"below the ack level", Rules{BelowAckLevel: true}, ack, live, false, WhyBelowAckLevel, false, true, false},
		{"below the ack level without the rule", Rules{}, ack, live, false, WhyLive, true, false, false},
		{"expired wins over below the ack level", Rules{BelowAckLevel: true}, ack, expired, false, WhyExpired, false, true, false},
		{"above the ack level", Rules{BelowAckLevel: true}, subqueue{Ack: store.TaskKey{Pass: 1, ID: 4}, HasAck: true}, live, false, WhyLive, true, false, false},
		{"no ack level recorded", Rules{BelowAckLevel: true}, noAck, live, false, WhyLive, true, false, false},
		{"unreadable below the ack level goes, reported", Rules{BelowAckLevel: true}, ack, bad, false, WhyBelowAckLevel, false, true, true},
		{"expired behind a live head", Rules{}, noAck, expired, true, WhyExpiredBehindHead, true, false, false},
		{"live behind a live head", Rules{}, noAck, live, true, WhyBehindHead, true, false, false},
		{"unreadable behind a live head: not decided", Rules{}, noAck, bad, true, WhyBehindHead, true, false, false},
		{"below the ack level behind a live head: not decided", Rules{BelowAckLevel: true}, ack, live, true, WhyBehindHead, true, false, false},
		{"expired past the live head", Rules{PastLiveHead: true}, noAck, expired, true, WhyPastLiveHead, false, true, false},
		{"live past the live head", Rules{PastLiveHead: true}, noAck, live, true, WhyLive, false, false, false},
	}
	for _, c := range cases {
		v := c.r.task(c.sq, c.row, c.behind, ruleNow)
		if v.Why != c.want || v.Stop != c.stop || v.Delete() != c.del || (v.Err != nil) != c.err {
			t.Errorf("%s: %s (stop %t, delete %t, err %v); want %s (stop %t, delete %t, err %t)", c.name, v.Why, v.Stop, v.Delete(), v.Err, c.want, c.stop, c.del, c.err)
		}
		if v.Decided() == (c.want == WhyBehindHead || c.want == WhyExpiredBehindHead) {
			t.Errorf("%s: decided %t", c.name, v.Decided())
		}
	}
}

// TestRuleBookOrphans covers every orphan verdict.
func TestRuleBookOrphans(t *testing.T) {
	grace := 48 * time.Hour
	old, recent := ruleNow.Add(-grace), ruleNow.Add(-grace+time.Second)
	future := ruleNow.Add(time.Hour)
	bad := store.TaskRow{Data: []byte{0xff}, Encoding: wire.EncodingProto3}
	cases := []struct {
		name   string
		policy OrphanPolicy
		row    store.TaskRow
		want   Why
		reason Reason
	}{
		{"expired", OrphansExpired, taskRow(1, recent, ruleNow.Add(-time.Second)), WhyOrphanExpired, ReasonOrphan},
		{"live, old, policy expired", OrphansExpired, taskRow(1, old, future), WhyLive, ""},
		{"live, old, policy all", OrphansAll, taskRow(1, old, future), WhyOrphanOld, ReasonOrphan},
		{"never expires, old, policy all", OrphansAll, taskRow(1, old, time.Time{}), WhyOrphanOld, ReasonOrphan},
		{"live, recent, policy all", OrphansAll, taskRow(1, recent, future), WhyLive, ""},
		{"no create time, policy all", OrphansAll, taskRow(1, time.Time{}, future), WhyLive, ""},
		{"unreadable", OrphansAll, bad, WhyBad, ""},
	}
	for _, c := range cases {
		v := Rules{Grace: grace, Orphans: c.policy}.orphan(c.row, ruleNow)
		if v.Why != c.want || (v.Why == WhyBad) != (v.Err != nil) {
			t.Errorf("%s: %s (err %v), want %s", c.name, v.Why, v.Err, c.want)
		}
		if v.Delete() && v.Reason() != c.reason {
			t.Errorf("%s: reason %s, want %s", c.name, v.Reason(), c.reason)
		}
	}
}

// TestRuleBookQueues covers every queue verdict, and the scope.
func TestRuleBookQueues(t *testing.T) {
	r := Rules{Grace: 48 * time.Hour, ProtectedPrefixes: []string{"temporal-sys-tl-scanner"}}
	idle := ruleNow.Add(-48 * time.Hour)
	cases := []struct {
		name string
		q    queueFacts
		want Why
	}{
		{"idle and empty", queueFacts{name: "orders", lastUpdate: idle, empty: true}, WhyIdle},
		{"unreadable", queueFacts{bad: true, lastUpdate: idle, empty: true}, WhyBad},
		{"a task left", queueFacts{name: "orders", lastUpdate: idle}, WhyNotEmpty},
		{"protected", queueFacts{name: "temporal-sys-tl-scanner-x", lastUpdate: idle, empty: true}, WhyProtected},
		{"updated within the grace", queueFacts{name: "orders", lastUpdate: idle.Add(time.Second), empty: true}, WhyBusy},
		{"the other table holds its tasks", queueFacts{name: "orders", lastUpdate: idle, empty: true, otherTasks: true}, WhyOtherTableTasks},
	}
	for _, c := range cases {
		v := r.queue(c.q, ruleNow)
		if v.Why != c.want || v.Delete() != (c.want == WhyIdle) {
			t.Errorf("%s: %s (delete %t), want %s", c.name, v.Why, v.Delete(), c.want)
		}
	}
	ns := wire.NamespaceID{1, 2, 3}
	id := wire.QueueID(ns, "orders-1", wire.TaskTypeActivity, 0)
	key := store.QueueKey{ID: id}
	for _, c := range []struct {
		name string
		r    Rules
		want bool
	}{
		{"no scope", Rules{}, true},
		{"its namespace", Rules{Namespaces: []wire.NamespaceID{ns}}, true},
		{"another namespace", Rules{Namespaces: []wire.NamespaceID{{9}}}, false},
		{"matching glob", Rules{QueueGlob: "orders-*"}, true},
		{"other glob", Rules{QueueGlob: "payments-*"}, false},
	} {
		if got := c.r.inScope(key, "orders-1"); got != c.want {
			t.Errorf("scope %s: %t, want %t", c.name, got, c.want)
		}
	}
}

// keepExpired is the rule book with one verdict flipped on purpose: an
// expired task (owned or orphaned) is kept as live.
type keepExpired struct{ ruleBook }

func flipExpired(v Verdict) Verdict {
	switch v.Why {
	case WhyExpired, WhyPastLiveHead, WhyOrphanExpired:
		return Verdict{Why: WhyLive, Stop: true}
	}
	return v
}

func (k keepExpired) task(sq subqueue, row store.TaskRow, behind bool, now time.Time) Verdict {
	return flipExpired(k.ruleBook.task(sq, row, behind, now))
}

func (k keepExpired) orphan(row store.TaskRow, now time.Time) Verdict {
	return flipExpired(k.ruleBook.orphan(row, now))
}

// TestEveryWalkerDefersToTheRuleBook: with the expiry verdict flipped,
// every walker (queueJob's walk of several subqueues, the window of
// single-subqueue queues, in v1 and v2, Temporal's mode, the orphan walk)
// deletes no expired task, where the true book deletes them: no walker
// decides for itself.
func TestEveryWalkerDefersToTheRuleBook(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name   string
		spec   seed.Spec
		cfg    Config
		orphan bool // the queue row is deleted: its tasks are orphans
	}{
		{"v1 window", seed.Spec{Queues: 3, TasksPerQueue: 10, Expired: 0.5, IdleAge: 72 * time.Hour}, Config{}, false},
		{"v1 walk of subqueues", seed.Spec{Queues: 2, Subqueues: 2, TasksPerQueue: 10, Expired: 0.5, IdleAge: 72 * time.Hour}, Config{}, false},
		{"v2 window", seed.Spec{Table: store.V2, Queues: 3, TasksPerQueue: 10, Expired: 0.5, IdleAge: 72 * time.Hour}, Config{}, false},
		{"v2 walk of subqueues", seed.Spec{Table: store.V2, Queues: 2, Subqueues: 2, TasksPerQueue: 10, Expired: 0.5, IdleAge: 72 * time.Hour}, Config{}, false},
		{"v1 past the live head", seed.Spec{Queues: 2, TasksPerQueue: 10, Expired: 0.5, Layout: seed.LiveFirst, IdleAge: 72 * time.Hour}, Config{Rules: Rules{PastLiveHead: true}}, false},
		{"temporal mode", seed.Spec{Queues: 3, TasksPerQueue: 40, Expired: 0.5, IdleAge: 72 * time.Hour}, Config{Rules: Rules{Compat: CompatTemporal}}, false},
		{"orphans", seed.Spec{Queues: 1, TasksPerQueue: 20, Expired: 0.5, IdleAge: 72 * time.Hour}, Config{}, true},
	}
	pass := func(t *testing.T, c int, flip bool) (Stats, int) {
		db := testdb.Open(t, sqlstore.SQLite)
		spec := cases[c].spec
		spec.Now = ruleNow
		if _, err := seed.Write(ctx, db, spec); err != nil {
			t.Fatal(err)
		}
		tb := store.V1
		if spec.Table == store.V2 {
			tb = store.V2
		}
		if cases[c].orphan {
			rows, err := db.ListQueues(ctx, tb, nil, 100)
			if err != nil || len(rows) != 1 {
				t.Fatalf("%d queue rows, %v", len(rows), err)
			}
			if n, err := db.DeleteQueues(ctx, tb, []store.QueueFence{{QueueKey: rows[0].QueueKey, RangeID: rows[0].RangeID}}); err != nil || n != 1 {
				t.Fatalf("delete the queue row: %d, %v", n, err)
			}
		}
		cfg := cases[c].cfg
		cfg.Now, cfg.Logger = func() time.Time { return ruleNow }, slog.New(slog.NewTextHandler(io.Discard, nil))
		s := New(db, cfg)
		if flip {
			s.book = keepExpired{s.book}
		}
		st, err := s.Run(ctx)
		if err != nil {
			t.Fatal(err)
		}
		left := 0
		for q := 0; q < spec.Queues; q++ {
			for k := 0; k < max(1, spec.Subqueues); k++ {
				id := wire.QueueID(seed.DefaultNamespace, fmt.Sprintf("seed-%d", q), wire.TaskTypeActivity, k)
				tasks, err := db.ReadTasks(ctx, tb, store.QueueKey{RangeHash: wire.RangeHash(id), ID: id}, nil, 1<<20)
				if err != nil {
					t.Fatal(err)
				}
				left += len(tasks)
			}
		}
		return st, left
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			trueStats, trueLeft := pass(t, i, false)
			flipStats, flipLeft := pass(t, i, true)
			if trueStats.TasksDeleted == 0 {
				t.Fatalf("the true rule book deletes nothing here: the case proves nothing")
			}
			if flipStats.TasksDeleted != 0 || flipLeft <= trueLeft {
				t.Errorf("with expired tasks kept by the book, the walker deleted %d tasks (%d left, %d with the true book): it decided for itself",
					flipStats.TasksDeleted, flipLeft, trueLeft)
			}
			if c.orphan && (trueStats.OrphansFound == 0 || flipStats.OrphansLeft != flipStats.OrphansFound) {
				t.Errorf("Orphans: found %d (true book), left %d of %d (flipped)", trueStats.OrphansFound, flipStats.OrphansLeft, flipStats.OrphansFound)
			}
		})
	}
}

// TestRuleBookClosed covers every verdict of the closed-workflow rule, with
// no store: which tasks are looked up, and the verdict on a looked-up run.
func TestRuleBookClosed(t *testing.T) {
	on := Rules{ClosedWorkflows: true}
	ret := nsFacts{retention: 72 * time.Hour, readable: true}
	good := taskRun{run: wire.TaskRun{NamespaceID: "n", WorkflowID: "wf", RunID: "r"}, canonical: true, ns: ret, nsKnown: true}
	with := func(f func(*taskRun)) taskRun { c := good; f(&c); return c }
	for _, c := range []struct {
		name string
		r    Rules
		t    taskRun
		want bool
	}{
		{"a run of a known namespace", on, good, true},
		{"an unknown namespace: looked up (a COMPLETED row still proves it)", on, with(func(c *taskRun) { c.nsKnown, c.ns = false, nsFacts{} }), true},
		{"rule off", Rules{}, good, false},
		{"compat temporal", Rules{ClosedWorkflows: true, Compat: CompatTemporal}, good, false},
		{"unreadable blob", on, with(func(c *taskRun) { c.err = errBadTest }), false},
		{"unknown fields", on, with(func(c *taskRun) { c.run.Unknown = true }), false},
		{"component_ref", on, with(func(c *taskRun) { c.run.ComponentRef = true }), false},
		{"empty workflow id", on, with(func(c *taskRun) { c.run.WorkflowID = "" }), false},
		{"empty run id", on, with(func(c *taskRun) { c.run.RunID = "" }), false},
		{"ids not canonical", on, with(func(c *taskRun) { c.canonical = false }), false},
		{"global namespace", on, with(func(c *taskRun) { c.ns.global = true }), false},
		{"global namespace, opted in", Rules{ClosedWorkflows: true, ClosedWorkflowsGlobal: true}, with(func(c *taskRun) { c.ns.global = true }), true},
	} {
		if got := c.r.closedCandidate(c.t); got != c.want {
			t.Errorf("candidate: %s: %t, want %t", c.name, got, c.want)
		}
	}

	old := ruleNow.Add(-72*time.Hour - RunDeletedMargin - time.Second)
	young := ruleNow.Add(-72*time.Hour - RunDeletedMargin + time.Second)
	gone := runFacts{looked: true, missProven: true, ns: ret, nsKnown: true, create: old}
	deleted := Rules{ClosedWorkflows: true, ClosedDeletedRuns: true}
	row := func(s wire.ExecutionState) runFacts {
		return runFacts{looked: true, found: true, stateOK: true, state: s, ns: ret, nsKnown: true, create: old}
	}
	edit := func(f runFacts, e func(*runFacts)) runFacts { e(&f); return f }
	live := Verdict{Why: WhyLive, Stop: true}
	for _, c := range []struct {
		name string
		r    Rules
		v    Verdict
		f    runFacts
		want Why
		stop bool
	}{
		{"completed", on, live, row(wire.StateCompleted), WhyClosedRun, false},
		{"completed, rule off", Rules{}, live, row(wire.StateCompleted), WhyLive, true},
		{"completed, compat temporal", Rules{ClosedWorkflows: true, Compat: CompatTemporal}, live, row(wire.StateCompleted), WhyLive, true},
		{"completed, not looked up", on, live, edit(row(wire.StateCompleted), func(f *runFacts) { f.looked = false }), WhyLive, false},
		{"completed, state unreadable", on, live, edit(row(wire.StateCompleted), func(f *runFacts) { f.stateOK = false }), WhyLive, false},
		{"created (cron or retry backoff)", on, live, row(wire.StateCreated), WhyLive, false},
		{"running", on, live, row(wire.StateRunning), WhyLive, false},
		{"zombie", on, live, row(wire.StateZombie), WhyLive, false},
		{"corrupted", on, live, row(wire.StateCorrupted), WhyLive, false},
		{"run deleted, older than retention", deleted, live, gone, WhyRunDeleted, false},
		{"run deleted, without ClosedDeletedRuns", on, live, gone, WhyLive, false},
		{"run deleted, the miss not proven", deleted, live, edit(gone, func(f *runFacts) { f.missProven = false }), WhyLive, false},
		{"run deleted, younger than retention", deleted, live, edit(gone, func(f *runFacts) { f.create = young }), WhyLive, false},
		{"run missing, current points at it", deleted, live, edit(gone, func(f *runFacts) { f.currentIsRun = true }), WhyLive, false},
		{"run missing, namespace unknown", deleted, live, edit(gone, func(f *runFacts) { f.nsKnown = false }), WhyLive, false},
		{"run missing, retention unreadable", deleted, live, edit(gone, func(f *runFacts) { f.ns.readable = false }), WhyLive, false},
		{"run missing, no create time", deleted, live, edit(gone, func(f *runFacts) { f.create = time.Time{} }), WhyLive, false},
		{"an expired task stays expired", on, Verdict{Why: WhyExpired}, row(wire.StateCompleted), WhyExpired, false},
		{"behind a live head, its run closed", on, Verdict{Why: WhyBehindHead, Stop: true}, row(wire.StateCompleted), WhyClosedRun, false},
		{"behind a live head, running: read on", on, Verdict{Why: WhyBehindHead, Stop: true}, row(wire.StateRunning), WhyBehindHead, false},
		{"unreadable (bad) task, not looked up", on, Verdict{Why: WhyBad, Stop: true}, runFacts{}, WhyBad, false},
	} {
		v := c.r.closed(c.v, c.f, ruleNow)
		if v.Why != c.want || v.Stop != c.stop {
			t.Errorf("closed: %s: %s (stop %t), want %s (stop %t)", c.name, v.Why, v.Stop, c.want, c.stop)
		}
		switch {
		case v.Why == WhyClosedRun && v.Reason() != ReasonClosedWorkflow, v.Why == WhyRunDeleted && v.Reason() != ReasonRunDeleted:
			t.Errorf("closed: %s: reason %s", c.name, v.Reason())
		}
	}
}

var errBadTest = fmt.Errorf("a blob that does not decode")

// keepClosed is the rule book with the closed-workflow verdicts flipped
// on purpose: a task of a closed or deleted run is kept.
type keepClosed struct{ ruleBook }

func (k keepClosed) closed(v Verdict, f runFacts, now time.Time) Verdict {
	w := k.ruleBook.closed(v, f, now)
	if w.Why == WhyClosedRun || w.Why == WhyRunDeleted {
		return Verdict{Why: WhyLive}
	}
	return w
}

// TestClosedWalkerDefersToTheRuleBook: with the closed-workflow verdicts
// flipped, the walk of a queue (v1 and v2, one and several subqueues)
// deletes no task of a closed run where the true book deletes them all:
// the walker decides nothing of the rule itself.
func TestClosedWalkerDefersToTheRuleBook(t *testing.T) {
	ctx := context.Background()
	const shards = 4
	ns := wire.NamespaceID{0x11, 15: 1}
	for _, c := range []struct {
		name string
		tb   store.Table
		subs int
	}{{"v1", store.V1, 1}, {"v1 subqueues", store.V1, 2}, {"v2", store.V2, 1}, {"v2 subqueues", store.V2, 2}} {
		pass := func(t *testing.T, flip bool) (Stats, int) {
			db := testdb.Open(t, sqlstore.SQLite)
			testdb.CreateHistoryTables(t, db)
			testdb.InsertShards(t, db, shards)
			testdb.InsertClusterMetadata(t, db, "active", shards)
			testdb.InsertNamespace(t, db, ns, "one", 72*time.Hour, false)
			id := wire.QueueID(ns, "closed", wire.TaskTypeActivity, 0)
			owner := store.QueueKey{RangeHash: wire.RangeHash(id), ID: id}
			info := wire.TaskQueueInfo{NamespaceID: ns.String(), Name: "closed", TaskType: wire.TaskTypeActivity, LastUpdateTime: ruleNow.Add(-72 * time.Hour)}
			for k := range c.subs {
				info.Subqueues = append(info.Subqueues, wire.SubqueueInfo{Priority: int32(3 + k)})
			}
			if err := db.CreateQueue(ctx, c.tb, store.QueueRow{QueueKey: owner, RangeID: 1, Data: wire.EncodeTaskQueueInfo(info), Encoding: wire.EncodingProto3}); err != nil {
				t.Fatal(err)
			}
			var keys []store.QueueKey
			for k := range c.subs {
				target := owner
				if k > 0 {
					sid := wire.QueueID(ns, "closed", wire.TaskTypeActivity, k)
					target = store.QueueKey{RangeHash: wire.RangeHash(sid), ID: sid}
				}
				keys = append(keys, target)
				var rows []store.TaskRow
				for i := range 6 {
					run := wire.NamespaceID{0xee, 14: byte(k), 15: byte(i + 1)}
					wf := fmt.Sprintf("wf-%d-%d", k, i)
					state := wire.StateRunning // a live head first, then closed runs
					if i > 0 {
						state = wire.StateCompleted
					}
					testdb.InsertExecution(t, db, shards, ns, wf, run, state)
					ti := wire.TaskInfo{NamespaceID: ns.String(), WorkflowID: wf, RunID: run.String(), CreateTime: ruleNow.Add(-time.Hour), ScheduledEventID: 5}
					key := store.TaskKey{ID: int64(i + 1)}
					if c.tb == store.V2 {
						key.Pass = 1
					}
					rows = append(rows, store.TaskRow{Key: key, Data: wire.EncodeAllocatedTaskInfo(wire.AllocatedTaskInfo{TaskID: key.ID, TaskPass: key.Pass, Data: ti}), Encoding: wire.EncodingProto3})
				}
				if err := db.AppendTasks(ctx, c.tb, owner, 1, target, rows); err != nil {
					t.Fatal(err)
				}
			}
			cfg := Config{Rules: Rules{ClosedWorkflows: true, Orphans: OrphansNone}}
			cfg.Now, cfg.Logger = func() time.Time { return ruleNow }, slog.New(slog.NewTextHandler(io.Discard, nil))
			s := New(db, cfg)
			if flip {
				s.book = keepClosed{s.book}
			}
			st, err := s.Run(ctx)
			if err != nil {
				t.Fatal(err)
			}
			left := 0
			for _, k := range keys {
				tasks, err := db.ReadTasks(ctx, c.tb, k, nil, 1000)
				if err != nil {
					t.Fatal(err)
				}
				left += len(tasks)
			}
			return st, left
		}
		t.Run(c.name, func(t *testing.T) {
			trueStats, trueLeft := pass(t, false)
			flipStats, flipLeft := pass(t, true)
			if got, want := trueStats.Tables[c.tb].TasksDeleted[ReasonClosedWorkflow], int64(5*c.subs); got != want || trueLeft != c.subs {
				t.Fatalf("true book: deleted %d as closed_workflow (want %d), %d left (want %d)", got, want, trueLeft, c.subs)
			}
			if flipStats.TasksDeleted != 0 || flipLeft != 6*c.subs {
				t.Errorf("with closed runs' tasks kept by the book, the walker deleted %d tasks (%d left of %d): it decided for itself", flipStats.TasksDeleted, flipLeft, 6*c.subs)
			}
		})
	}
}
