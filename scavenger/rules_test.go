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
