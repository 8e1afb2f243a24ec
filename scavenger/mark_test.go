package scavenger_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/tqscavenger/tqscavenger/internal/testdb"
	"github.com/tqscavenger/tqscavenger/scavenger"
	"github.com/tqscavenger/tqscavenger/seed"
	"github.com/tqscavenger/tqscavenger/sqlstore"
	"github.com/tqscavenger/tqscavenger/store"
)

// seedOnePage writes fewer queues than a default listing page: single-
// subqueue v1 queues (scavenged by windows), most of them expired and idle
// (their rows go), some with live tasks (kept), and v2 queues with two
// subqueues (a job each).
func seedOnePage(t *testing.T, db *sqlstore.DB) {
	t.Helper()
	for _, s := range []seed.Spec{
		{NamePrefix: "dead", Queues: 160, TasksPerQueue: 25, Expired: 1, IdleAge: 72 * time.Hour},
		{NamePrefix: "live", Queues: 40, TasksPerQueue: 25, Expired: 0.5, NoExpiry: 0.5, Layout: seed.Shuffled, Seed: 3},
		{Table: store.V2, NamePrefix: "multi", Queues: 20, TasksPerQueue: 10, Subqueues: 2, Expired: 1, IdleAge: 72 * time.Hour},
	} {
		s.Now = seedNow
		if _, err := seed.Write(context.Background(), db, s); err != nil {
			t.Fatal(err)
		}
	}
}

// listKeys returns the queue keys of table tb, in key order.
func listKeys(t *testing.T, st store.Store, tb store.Table) []store.QueueKey {
	t.Helper()
	rows, err := st.ListQueues(context.Background(), tb, nil, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	keys := make([]store.QueueKey, len(rows))
	for i, r := range rows {
		keys[i] = r.QueueKey
	}
	return keys
}

// TestCheckpointPerQueue: at the default page size, with a partition of
// fewer queues than a page, the queue walk's mark moves inside the page
// and inside a window of queues (today's code moved it only at a page's
// end, so a retry redid the whole partition); at every checkpoint, every
// queue row at or before its position that the pass deletes is already
// deleted (the mark waits for a row's delete); and a pass stopped at a
// checkpoint inside the page, then resumed from it, lists only the rows
// after it and leaves the rows of a clean pass. On every engine.
func TestCheckpointPerQueue(t *testing.T) {
	for _, mode := range []scavenger.PaceMode{scavenger.PaceGentle, scavenger.PaceFull} {
		t.Run(string(mode), func(t *testing.T) { testCheckpointPerQueue(t, mode) })
	}
}

// testCheckpointPerQueue is TestCheckpointPerQueue at one pace: at
// PaceFull a window's scan reads the whole page of queues at once, and its
// deletes go out a batch at a time.
func testCheckpointPerQueue(t *testing.T, mode scavenger.PaceMode) {
	ctx := context.Background()
	baseConfig := func() scavenger.Config {
		cfg := baseConfig()
		cfg.Mode = mode
		return cfg
	}
	for _, e := range testdb.Engines {
		t.Run(string(e), func(t *testing.T) {
			t.Parallel()
			clean := testdb.Open(t, e)
			seedOnePage(t, clean)
			if _, err := scavenger.New(clean, baseConfig()).Run(ctx); err != nil {
				t.Fatal(err)
			}
			want := digest(t, clean)

			// A whole pass, a checkpoint at every advance.
			db := testdb.Open(t, e)
			seedOnePage(t, db)
			before := map[store.Table][]store.QueueKey{store.V1: listKeys(t, db, store.V1), store.V2: listKeys(t, db, store.V2)}
			var (
				mu      sync.Mutex
				deleted = map[string]bool{} // queue rows whose delete returned
				cps     []scavenger.Checkpoint
				seen    []map[string]bool // deleted, at each checkpoint
			)
			rec := func(next store.Store) store.Store {
				return &hookStore{next: next, before: func(context.Context, call) error { return nil },
					after: func(_ context.Context, c call, err error) error {
						if c.op == "deletequeues" && err == nil {
							mu.Lock()
							for _, f := range c.fences {
								deleted[f.QueueKey.String()] = true
							}
							mu.Unlock()
						}
						return err
					}}
			}
			cfg := baseConfig()
			cfg.CheckpointInterval = 1 // every advance
			cfg.Middleware = []store.Middleware{rec}
			cfg.Checkpoint = func(_ context.Context, cp scavenger.Checkpoint) error {
				mu.Lock()
				defer mu.Unlock()
				cps = append(cps, cp)
				snap := make(map[string]bool, len(deleted))
				for k := range deleted {
					snap[k] = true
				}
				seen = append(seen, snap)
				return nil
			}
			if _, err := scavenger.New(db, cfg).Run(ctx); err != nil {
				t.Fatal(err)
			}
			checkPositions(t, scavenger.Partition{}, cps)
			gone := map[store.Table][]store.QueueKey{}
			for tb, keys := range before {
				left := map[string]bool{}
				for _, k := range listKeys(t, db, tb) {
					left[k.String()] = true
				}
				for _, k := range keys {
					if !left[k.String()] {
						gone[tb] = append(gone[tb], k)
					}
				}
			}
			if len(gone[store.V1]) < 100 || len(gone[store.V2]) == 0 {
				t.Fatalf("the pass deleted %d v1 and %d v2 queue rows: the data set proves nothing", len(gone[store.V1]), len(gone[store.V2]))
			}
			inside := 0 // distinct v1 positions before the last v1 key
			last := before[store.V1][len(before[store.V1])-1]
			var prev *store.QueueKey
			for i, cp := range cps {
				for _, w := range cp.Walks {
					if w.Walk != scavenger.WalkQueues || w.After == nil {
						continue
					}
					for _, k := range gone[w.Table] {
						if !w.After.Less(k) && !seen[i][k.String()] {
							t.Fatalf("checkpoint %d: position %s of %s is past queue %s, whose row delete had not run", i, w.After, w.Table, k)
						}
					}
					if w.Table == store.V1 && !w.Done && w.After.Less(last) && (prev == nil || prev.Less(*w.After)) {
						inside++
						k := *w.After
						prev = &k
					}
				}
			}
			if inside < 2 {
				t.Fatalf("the v1 walk's mark took %d positions inside its one page of %d queues (%d checkpoints): it must move a queue at a time", inside, len(before[store.V1]), len(cps))
			}
			t.Logf("%d checkpoints, %d distinct v1 positions inside the page of %d queues", len(cps), inside, len(before[store.V1]))

			// Stopped at the 60th v1 position, inside the page, resumed.
			db = testdb.Open(t, e)
			seedOnePage(t, db)
			cfg = baseConfig()
			cfg.CheckpointInterval = 1
			runCtx, stop := context.WithCancel(ctx)
			defer stop()
			var at *scavenger.Checkpoint
			n := 0
			cfg.Checkpoint = func(_ context.Context, cp scavenger.Checkpoint) error {
				mu.Lock()
				defer mu.Unlock()
				for _, w := range cp.Walks {
					if w.Walk == scavenger.WalkQueues && w.Table == store.V1 && w.After != nil && !w.Done && at == nil {
						if n++; n == 60 {
							c := cp
							at = &c
							stop() // dies right after this write
						}
					}
				}
				return nil
			}
			if _, err := scavenger.New(db, cfg).Run(runCtx); err == nil || at == nil {
				t.Fatalf("the pass was not stopped inside its page: %v", err)
			}
			left, after := queueRows(t, db, scavenger.Partition{}.Range(), *at)
			cfg = baseConfig()
			cfg.Resume = at
			cfg.Checkpoint = func(context.Context, scavenger.Checkpoint) error { return nil }
			st, err := scavenger.New(db, cfg).Run(ctx)
			if err != nil || st.Outcome != scavenger.Completed {
				t.Fatalf("resumed pass: %v %v", st.Outcome, err)
			}
			if st.QueuesListed != int64(after) || after >= left {
				t.Errorf("the resumed pass listed %d queues of the %d left; %d lie after its position", st.QueuesListed, left, after)
			}
			t.Logf("resumed from %+v: listed %d of the %d queue rows left", at.Walks, st.QueuesListed, left)
			if got := digest(t, db); got != want {
				t.Errorf("resumed leaves %s, a clean pass %s", got, want)
			}
		})
	}
}
