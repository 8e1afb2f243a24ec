package scavenger_test

import (
	"context"
	"testing"
	"time"

	"github.com/tqscavenger/tqscavenger/internal/testdb"
	"github.com/tqscavenger/tqscavenger/scavenger"
	"github.com/tqscavenger/tqscavenger/seed"
	"github.com/tqscavenger/tqscavenger/sqlstore"
	"github.com/tqscavenger/tqscavenger/store"
	"github.com/tqscavenger/tqscavenger/wire"
)

// subqueueState is what a test expects of one subqueue after a pass.
type subqueueState struct{ expired, live int }

func subqueueKinds(t *testing.T, st store.Store, tb store.Table, name string, n int) []subqueueState {
	t.Helper()
	out := make([]subqueueState, n)
	for k := range out {
		out[k].expired, out[k].live = taskKinds(t, st, tb, queueKey(name, k))
	}
	return out
}

// TestModes covers what each mode deletes on one layout: 3 subqueues of 40
// tasks, a live head then 30 expired then 9 live; idle queue.
func TestModes(t *testing.T) {
	spec := seed.Spec{Queues: 1, TasksPerQueue: 40, Subqueues: 3, Expired: 0.75, NoExpiry: 0.25, Layout: seed.LiveFirst, IdleAge: 72 * time.Hour}
	cases := []struct {
		name      string
		cfg       scavenger.Config
		table     store.Table
		want      []subqueueState
		wantQueue bool
	}{
		{"temporal: subqueue 0 only, stops at the live head", scavenger.Config{Rules: scavenger.Rules{Compat: scavenger.CompatTemporal}}, store.V1,
			[]subqueueState{{30, 10}, {30, 10}, {30, 10}}, true},
		{"default: stops at the live head in every subqueue", scavenger.Config{}, store.V1,
			[]subqueueState{{30, 10}, {30, 10}, {30, 10}}, true},
		{"past-live-head: every expired task", scavenger.Config{Rules: scavenger.Rules{PastLiveHead: true}}, store.V1,
			[]subqueueState{{0, 10}, {0, 10}, {0, 10}}, true},
		{"past-live-head on v2", scavenger.Config{Rules: scavenger.Rules{PastLiveHead: true}}, store.V2,
			[]subqueueState{{0, 10}, {0, 10}, {0, 10}}, true},
		{"dry run deletes nothing", scavenger.Config{Rules: scavenger.Rules{PastLiveHead: true, DryRun: true}}, store.V1,
			[]subqueueState{{30, 10}, {30, 10}, {30, 10}}, true},
	}
	forEachEngine(t, func(t *testing.T, db *sqlstore.DB) {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				s := spec
				s.Table = c.table
				s.NamePrefix = "modes" + c.table.String() + string(rune('a'+len(c.name)%26)) + c.name[:4]
				mustSeed(t, db, s)
				defer cleanup(t, db)
				cfg := c.cfg
				cfg.Now, cfg.Logger = baseConfig().Now, quiet()
				cfg.Tables = []store.Table{c.table}
				st, err := scavenger.New(db, cfg).Run(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				got := subqueueKinds(t, db, c.table, s.NamePrefix+"-0", 3)
				for k := range got {
					if got[k] != c.want[k] {
						t.Errorf("subqueue %d: %+v, want %+v", k, got[k], c.want[k])
					}
				}
				if queueExists(t, db, c.table, queueKey(s.NamePrefix+"-0", 0)) != c.wantQueue {
					t.Errorf("queue exists: want %v", c.wantQueue)
				}
				if c.cfg.DryRun && (st.WouldDeleteTasks != 90 || st.TasksDeleted != 0) {
					t.Errorf("dry run counted %d tasks it would delete and %d deleted, want 90 and 0", st.WouldDeleteTasks, st.TasksDeleted)
				}
			})
		}
	})
}

// cleanup empties the task tables so the next subtest starts clean.
func cleanup(t *testing.T, db *sqlstore.DB) {
	for _, table := range []string{"tasks", "tasks_v2", "task_queues", "task_queues_v2"} {
		if _, err := testdb.SQL(t, db).Exec("DELETE FROM " + table); err != nil {
			t.Fatal(err)
		}
	}
}

// TestQueueDeletedOnlyWhenEverySubqueueIsEmpty: Temporal deletes a queue
// row when subqueue 0 is empty, orphaning the other subqueues; the default
// mode deletes their expired tasks and keeps the row while any task is
// left.
func TestQueueDeletedOnlyWhenEverySubqueueIsEmpty(t *testing.T) {
	cases := []struct {
		name       string
		compat     scavenger.Compat
		noExpiry   float64
		wantQueue  bool
		wantLeftK1 int
	}{
		{"temporal orphans subqueue 1", scavenger.CompatTemporal, 0, false, 20},
		{"default empties every subqueue, then deletes", "", 0, false, 0},
		{"default keeps the row while subqueue 1 has live tasks", "", 0.5, true, 10},
	}
	forEachEngine(t, func(t *testing.T, db *sqlstore.DB) {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				defer cleanup(t, db)
				// Subqueue 0 empty; subqueue 1 holds 20 tasks.
				mustSeed(t, db, seed.Spec{Queues: 1, Subqueues: 2, TasksPerQueue: 20, Expired: 1 - c.noExpiry, NoExpiry: c.noExpiry, IdleAge: 72 * time.Hour})
				q0 := queueKey("seed-0", 0)
				if _, err := db.DeleteTasks(context.Background(), store.V1, q0, store.TaskRange{Max: store.TaskKey{ID: 1 << 40}}, 0); err != nil {
					t.Fatal(err)
				}
				cfg := baseConfig()
				cfg.Compat = c.compat
				if _, err := scavenger.New(db, cfg).Run(context.Background()); err != nil {
					t.Fatal(err)
				}
				if got := queueExists(t, db, store.V1, q0); got != c.wantQueue {
					t.Errorf("queue exists = %v, want %v", got, c.wantQueue)
				}
				if n := countTasks(t, db, queueKey("seed-0", 1)); n != c.wantLeftK1 {
					t.Errorf("subqueue 1 has %d tasks, want %d", n, c.wantLeftK1)
				}
			})
		}
	})
}

// setQueueInfo rewrites a queue row's blob with edit applied.
func setQueueInfo(t *testing.T, db *sqlstore.DB, tb store.Table, q store.QueueKey, edit func(*wire.TaskQueueInfo)) {
	t.Helper()
	ctx := context.Background()
	row, err := db.GetQueue(ctx, tb, q)
	if err != nil {
		t.Fatal(err)
	}
	info, err := wire.DecodeTaskQueueInfo(row.Encoding, row.Data)
	if err != nil {
		t.Fatal(err)
	}
	edit(&info)
	row.Data = wire.EncodeTaskQueueInfo(info)
	if err := db.UpdateQueue(ctx, tb, row, row.RangeID); err != nil {
		t.Fatal(err)
	}
}

// TestOtherHasTasks: other_has_tasks keeps a queue row only while the other
// table version really holds tasks of the queue; Temporal ignores the flag.
func TestOtherHasTasks(t *testing.T) {
	cases := []struct {
		name       string
		compat     scavenger.Compat
		otherTasks int
		want       bool
	}{
		{"flag set, other table empty", "", 0, false},
		{"flag set, other table holds tasks", "", 3, true},
		{"temporal ignores the flag", scavenger.CompatTemporal, 3, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			db := newSQLite(t)
			mustSeed(t, db, seed.Spec{Queues: 1, IdleAge: 72 * time.Hour})
			// The same queue in v2, recently used, holding live tasks.
			mustSeed(t, db, seed.Spec{Table: store.V2, Queues: 1, TasksPerQueue: c.otherTasks, NoExpiry: 1, IdleAge: time.Minute})
			q := queueKey("seed-0", 0)
			setQueueInfo(t, db, store.V1, q, func(i *wire.TaskQueueInfo) { i.OtherHasTasks = true })
			cfg := baseConfig()
			cfg.Compat = c.compat
			if _, err := scavenger.New(db, cfg).Run(context.Background()); err != nil {
				t.Fatal(err)
			}
			if got := queueExists(t, db, store.V1, q); got != c.want {
				t.Errorf("v1 queue exists = %v, want %v", got, c.want)
			}
			if n := countTable(t, db, store.V2, q); n != c.otherTasks {
				t.Errorf("v2 tasks %d, want %d", n, c.otherTasks)
			}
		})
	}
}

func newSQLite(t *testing.T) *sqlstore.DB {
	t.Helper()
	return openEngine(t, sqlstore.SQLite)
}

// TestBelowAckLevel: tasks at or below the subqueue's ack level go with
// BelowAckLevel, live or not; nothing above it.
func TestBelowAckLevel(t *testing.T) {
	for _, tb := range []store.Table{store.V1, store.V2} {
		t.Run(tb.String(), func(t *testing.T) {
			forEachEngine(t, func(t *testing.T, db *sqlstore.DB) {
				mustSeed(t, db, seed.Spec{Table: tb, Queues: 1, Subqueues: 2, TasksPerQueue: 30, NoExpiry: 1, IdleAge: 72 * time.Hour})
				// Subqueue 0 holds ids 1..30, subqueue 1 ids 31..60 (pass 1 in v2).
				setQueueInfo(t, db, tb, queueKey("seed-0", 0), func(i *wire.TaskQueueInfo) {
					i.Subqueues[0].AckLevel, i.Subqueues[1].AckLevel = 10, 45
					i.Subqueues[0].FairAckLevel, i.Subqueues[0].HasFairAckLevel = wire.FairLevel{Pass: 1, TaskID: 10}, true
					i.Subqueues[1].FairAckLevel, i.Subqueues[1].HasFairAckLevel = wire.FairLevel{Pass: 1, TaskID: 45}, true
				})
				for _, below := range []bool{false, true} {
					cfg := baseConfig()
					cfg.BelowAckLevel = below
					st, err := scavenger.New(db, cfg).Run(context.Background())
					if err != nil {
						t.Fatal(err)
					}
					want0, want1 := 30, 30
					if below {
						want0, want1 = 20, 15
						if n := st.Tables[tb].TasksDeleted[scavenger.ReasonBelowAckLevel]; n != 25 {
							t.Errorf("below_ack_level deletions %d, want 25", n)
						}
					}
					got0, got1 := countTable(t, db, tb, queueKey("seed-0", 0)), countTable(t, db, tb, queueKey("seed-0", 1))
					if got0 != want0 || got1 != want1 {
						t.Errorf("below=%v: subqueues hold %d, %d tasks; want %d, %d", below, got0, got1, want0, want1)
					}
				}
			})
		})
	}
}

func countTable(t *testing.T, st store.Store, tb store.Table, q store.QueueKey) int {
	t.Helper()
	tasks, err := st.ReadTasks(context.Background(), tb, q, nil, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	return len(tasks)
}

func TestOrphans(t *testing.T) {
	cases := []struct {
		name     string
		policy   scavenger.OrphanPolicy
		revive   bool
		wantLeft int // of 40 orphans: 20 expired, 20 never expiring, created 73 h ago
	}{
		{"default deletes expired orphans", scavenger.OrphansExpired, false, 20},
		{"all deletes old live orphans too", scavenger.OrphansAll, false, 0},
		{"none leaves them", scavenger.OrphansNone, false, 40},
		{"a re-created queue keeps its tasks", scavenger.OrphansAll, true, 40},
	}
	forEachEngine(t, func(t *testing.T, db *sqlstore.DB) {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				defer cleanup(t, db)
				// Queue seed-0: subqueue 0 and 1 with 20 tasks each; then its
				// row disappears (as after Temporal's scavenger).
				mustSeed(t, db, seed.Spec{Queues: 1, Subqueues: 2, TasksPerQueue: 20, Expired: 0.5, NoExpiry: 0.5, IdleAge: 72 * time.Hour})
				q0 := queueKey("seed-0", 0)
				row, err := db.GetQueue(context.Background(), store.V1, q0)
				if err != nil {
					t.Fatal(err)
				}
				if n, err := db.DeleteQueues(context.Background(), store.V1, []store.QueueFence{{QueueKey: q0, RangeID: row.RangeID}}); err != nil || n != 1 {
					t.Fatalf("delete the queue row: %d rows, %v", n, err)
				}
				cfg := baseConfig()
				cfg.Orphans = c.policy
				if c.revive {
					// A matching host re-creates the queue just before the
					// orphan deletes (of subqueues 0 and 1) run.
					revived := row
					revived.RangeID = 1
					cfg.Middleware = []store.Middleware{hooked(func(_ context.Context, c call) error {
						if c.op == "deleteorphans" {
							if err := db.CreateQueue(context.Background(), store.V1, revived); err != nil && !isCondition(err) {
								t.Error(err)
							}
						}
						return nil
					})}
				}
				res, err := scavenger.New(db, cfg).Run(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				left := countTasks(t, db, q0) + countTasks(t, db, queueKey("seed-0", 1))
				if left != c.wantLeft {
					t.Errorf("%d orphans left, want %d (stats: found %d, left %d)", left, c.wantLeft, res.OrphansFound, res.OrphansLeft)
				}
				if c.policy != scavenger.OrphansNone && res.OrphansFound != 40 {
					t.Errorf("found %d orphans, want 40", res.OrphansFound)
				}
			})
		}
	})
}

func TestScope(t *testing.T) {
	other := wire.NamespaceID{1, 2, 3}
	cases := []struct {
		name     string
		cfg      scavenger.Config
		wantLeft map[string]int // queue name -> tasks left
	}{
		{"namespace", scavenger.Config{Rules: scavenger.Rules{Namespaces: []wire.NamespaceID{other}}}, map[string]int{"a-0": 10, "b-0": 10, "o-0": 0}},
		{"glob", scavenger.Config{Rules: scavenger.Rules{QueueGlob: "a-*"}}, map[string]int{"a-0": 0, "b-0": 10, "o-0": 10}},
		{"v2 only", scavenger.Config{Rules: scavenger.Rules{Tables: []store.Table{store.V2}}}, map[string]int{"a-0": 10, "b-0": 10, "o-0": 10}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			db := newSQLite(t)
			for _, p := range []string{"a", "b"} {
				mustSeed(t, db, seed.Spec{NamePrefix: p, Queues: 1, TasksPerQueue: 10, Expired: 1, IdleAge: time.Hour})
			}
			mustSeed(t, db, seed.Spec{Namespace: other, NamePrefix: "o", Queues: 1, TasksPerQueue: 10, Expired: 1, IdleAge: time.Hour})
			cfg := c.cfg
			cfg.Now, cfg.Logger = baseConfig().Now, quiet()
			if _, err := scavenger.New(db, cfg).Run(context.Background()); err != nil {
				t.Fatal(err)
			}
			for name, want := range c.wantLeft {
				ns := seed.DefaultNamespace
				if name == "o-0" {
					ns = other
				}
				id := wire.QueueID(ns, name, wire.TaskTypeActivity, 0)
				if got := countTasks(t, db, store.QueueKey{RangeHash: wire.RangeHash(id), ID: id}); got != want {
					t.Errorf("%s: %d tasks left, want %d", name, got, want)
				}
			}
		})
	}
}

// TestExpiredLeftBehindALiveHead: the expired tasks a pass reads but must
// leave (behind a live head) are counted, in both job kinds.
func TestExpiredLeftBehindALiveHead(t *testing.T) {
	cases := []struct {
		name      string
		compat    scavenger.Compat
		subqueues int
		want      int64
	}{
		{"default, one subqueue (page scan)", "", 1, 30},
		{"default, two subqueues (queue job)", "", 2, 60},
		{"temporal: the rest of the first batch of 16", scavenger.CompatTemporal, 1, 15},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			db := newSQLite(t)
			mustSeed(t, db, seed.Spec{Queues: 1, Subqueues: c.subqueues, TasksPerQueue: 40, Expired: 0.75, NoExpiry: 0.25, Layout: seed.LiveFirst, IdleAge: 72 * time.Hour})
			cfg := baseConfig()
			cfg.Compat = c.compat
			st, err := scavenger.New(db, cfg).Run(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if st.TasksExpiredLeft != c.want || st.TasksDeleted != 0 {
				t.Errorf("expired left %d, deleted %d; want %d, 0", st.TasksExpiredLeft, st.TasksDeleted, c.want)
			}
			if v1, v2 := st.Tables[store.V1].TasksExpiredLeft, st.Tables[store.V2].TasksExpiredLeft; v1 != c.want || v2 != 0 {
				t.Errorf("expired left by table: v1 %d, v2 %d; want %d, 0", v1, v2, c.want)
			}
		})
	}
}
