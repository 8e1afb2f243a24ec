package scavenger_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/tqscavenger/tqscavenger/internal/testdb"
	"github.com/tqscavenger/tqscavenger/scavenger"
	"github.com/tqscavenger/tqscavenger/sqlstore"
	"github.com/tqscavenger/tqscavenger/store"
)

// TestCheckpointResume: on every engine, a pass of a partition (and a
// whole pass) stopped at its k-th checkpoint, then resumed from it, reads
// fewer queue rows than a pass over what is left would, and leaves
// exactly the rows of a clean pass (digests of all four tables equal). A
// checkpoint's positions lie in its partition and never move back.
func TestCheckpointResume(t *testing.T) {
	ctx := context.Background()
	for _, e := range testdb.Engines {
		t.Run(string(e), func(t *testing.T) {
			t.Parallel()
			for _, p := range []scavenger.Partition{{}, {Index: 1, Count: 3}} {
				clean := testdb.Open(t, e)
				seedPartitioned(t, clean)
				if _, err := scavenger.New(clean, partitionConfig(p)).Run(ctx); err != nil {
					t.Fatal(err)
				}
				want := digest(t, clean)
				for _, stopAt := range []int{1, 3, 12} {
					db := testdb.Open(t, e)
					seedPartitioned(t, db)
					cfg := partitionConfig(p)
					cfg.CheckpointInterval = 1 // every advance
					var (
						mu   sync.Mutex
						cps  []scavenger.Checkpoint
						stop context.CancelFunc
					)
					runCtx, stop := context.WithCancel(ctx)
					cfg.Checkpoint = func(_ context.Context, cp scavenger.Checkpoint) error {
						mu.Lock()
						defer mu.Unlock()
						cps = append(cps, cp)
						if len(cps) == stopAt {
							stop() // dies right after this write: what follows is lost
						}
						return nil
					}
					_, err := scavenger.New(db, cfg).Run(runCtx)
					stop()
					if err == nil {
						t.Fatalf("%s: the pass was not stopped at checkpoint %d", p, stopAt)
					}
					mu.Lock()
					last := cps[stopAt-1]
					t.Logf("%s: checkpoint %d: %+v", p, stopAt, last.Walks)
					checkPositions(t, p, cps)
					mu.Unlock()
					left, after := queueRows(t, db, p.Range(), last)

					cfg = partitionConfig(p)
					cfg.Resume = &last
					cfg.CheckpointInterval = 1
					resumed := []scavenger.Checkpoint{last}
					cfg.Checkpoint = func(_ context.Context, cp scavenger.Checkpoint) error {
						mu.Lock()
						defer mu.Unlock()
						resumed = append(resumed, cp)
						return nil
					}
					st, err := scavenger.New(db, cfg).Run(ctx)
					mu.Lock()
					checkPositions(t, p, resumed) // never behind where it resumed
					mu.Unlock()
					if err != nil || st.Outcome != scavenger.Completed {
						t.Fatalf("%s: resumed pass: %v %v", p, st.Outcome, err)
					}
					if !st.Resumed || len(st.ResumedFrom) != len(last.Walks) {
						t.Errorf("%s: a resumed pass reports resumed %t from %v, want from %v", p, st.Resumed, st.ResumedFrom, last.Walks)
					}
					if st.QueuesListed != int64(after) {
						t.Errorf("%s, stopped at checkpoint %d: the resumed pass listed %d queues, want the %d after its positions", p, stopAt, st.QueuesListed, after)
					}
					if stopAt == 12 && after >= left { // a checkpoint a queue at a time: the first ones may pass only deleted rows
						t.Errorf("%s, stopped at checkpoint %d: nothing left before the positions (%d of %d after): the test proves nothing", p, stopAt, after, left)
					}
					t.Logf("%s, stopped at checkpoint %d: resumed pass listed %d of the %d queue rows left, examined %d tasks", p, stopAt, st.QueuesListed, left, st.TasksProcessed)
					if got := digest(t, db); got != want {
						t.Errorf("%s, stopped at checkpoint %d: resumed leaves %s, a clean pass %s", p, stopAt, got, want)
					}
				}
			}
		})
	}
}

// checkPositions: positions lie in the partition and never move back.
func checkPositions(t *testing.T, p scavenger.Partition, cps []scavenger.Checkpoint) {
	t.Helper()
	type walk struct {
		w  scavenger.Walk
		tb store.Table
	}
	last := map[walk]scavenger.WalkPosition{}
	for i, cp := range cps {
		if cp.Partition != p.String() {
			t.Fatalf("checkpoint of partition %s, want %s", cp.Partition, p)
		}
		for _, w := range cp.Walks {
			k := walk{w.Walk, w.Table}
			prev := last[k]
			if w.After != nil && !p.Range().Contains(w.After.RangeHash) {
				t.Fatalf("position %s outside %s", w.After, p.Range())
			}
			if (prev.Done && !w.Done) || (prev.After != nil && (w.After == nil || w.After.Less(*prev.After))) {
				t.Fatalf("%s %s moved back: %+v then %+v", w.Walk, w.Table, prev, w)
			}
			last[k] = w
		}
		for k := range last {
			found := false
			for _, w := range cp.Walks {
				found = found || (walk{w.Walk, w.Table} == k)
			}
			if !found {
				t.Fatalf("checkpoint %d lost the position of %s %s", i, k.w, k.tb)
			}
		}
	}
}

// queueRows counts the queue rows of both tables in r, and those a pass
// resumed from cp lists: after the position of their table's walk, and
// in none of its finished runs.
func queueRows(t *testing.T, db *sqlstore.DB, r store.HashRange, cp scavenger.Checkpoint) (left, after int) {
	t.Helper()
	for _, tb := range []store.Table{store.V1, store.V2} {
		var pos scavenger.WalkPosition
		for _, w := range cp.Walks {
			if w.Walk == scavenger.WalkQueues && w.Table == tb {
				pos = w
			}
		}
		rows, err := testdb.SQL(t, db).Query(fmt.Sprintf("SELECT range_hash, task_queue_id FROM %s WHERE range_hash BETWEEN %d AND %d", tb.QueueTable(), r.Lo, r.Hi))
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var (
				k  store.QueueKey
				rh int64
			)
			if err := rows.Scan(&rh, &k.ID); err != nil {
				t.Fatal(err)
			}
			k.RangeHash = uint32(rh)
			left++
			skipped := false
			for _, r := range pos.Finished {
				skipped = skipped || r.Contains(k)
			}
			if !pos.Done && (pos.After == nil || pos.After.Less(k)) && !skipped {
				after++
			}
		}
		rows.Close()
	}
	return left, after
}

// TestCheckpointRefused: a checkpoint of another database, partition or
// settings of what to delete is refused before any work, on every engine.
func TestCheckpointRefused(t *testing.T) {
	ctx := context.Background()
	forEachEngine(t, func(t *testing.T, db *sqlstore.DB) {
		other := testdb.Open(t, db.Engine())
		seedPartitioned(t, db)
		before := digest(t, db)
		var cp scavenger.Checkpoint
		cfg := partitionConfig(scavenger.Partition{Index: 0, Count: 2})
		cfg.DryRun = true
		cfg.Checkpoint = func(_ context.Context, c scavenger.Checkpoint) error { cp = c; return nil }
		if _, err := scavenger.New(other, cfg).Run(ctx); err != nil {
			t.Fatal(err)
		}
		if cp.Database == "" {
			t.Fatal("no checkpoint written")
		}
		own, err := db.Identity(ctx)
		if err != nil || own == cp.Database {
			t.Fatalf("identities %q and %q (%v): two databases must differ", own, cp.Database, err)
		}
		sameDB := cp
		sameDB.Database = own
		sameDB.Checksum = sameDB.Sum() // as a pass over db would have written it
		for name, c := range map[string]struct {
			cp  scavenger.Checkpoint
			cfg func(*scavenger.Config)
		}{
			"another database":    {cp, func(*scavenger.Config) {}},
			"another partition":   {sameDB, func(c *scavenger.Config) { c.Partition = scavenger.Partition{Index: 1, Count: 2} }},
			"another grace":       {sameDB, func(c *scavenger.Config) { c.Grace = 72 * 3600e9 }},
			"not a dry run":       {sameDB, func(c *scavenger.Config) { c.DryRun = false }},
			"another orphan rule": {sameDB, func(c *scavenger.Config) { c.Orphans = scavenger.OrphansAll }},
		} {
			cfg := partitionConfig(scavenger.Partition{Index: 0, Count: 2})
			cfg.DryRun = true
			c.cfg(&cfg)
			cfg.Resume = &c.cp
			if _, err := scavenger.New(db, cfg).Run(ctx); !errors.Is(err, scavenger.ErrCheckpointMismatch) {
				t.Errorf("%s: %v, want ErrCheckpointMismatch", name, err)
			}
		}
		cfg = partitionConfig(scavenger.Partition{Index: 0, Count: 2})
		cfg.DryRun = true
		cfg.Resume = &sameDB
		if _, err := scavenger.New(db, cfg).Run(ctx); err != nil {
			t.Errorf("the matching checkpoint: %v", err)
		}
		if got := digest(t, db); got != before {
			t.Errorf("a refused checkpoint changed the database: %s, was %s", got, before)
		}
	})
}

// TestFitsFinishedRuns: Fits refuses, as not written by a pass, a position
// whose finished runs are not what a pass writes: a run that ends before
// it starts, a first run that ends at or before the position, runs out of
// key order or overlapping, a run outside the partition, and more runs
// than MaxFinishedRuns (a pass never writes more; a file of thousands
// would make every listed row of the resume scan them). It accepts the
// runs a pass writes, the first beginning at or before the position.
func TestFitsFinishedRuns(t *testing.T) {
	key := func(h uint32, id byte) store.QueueKey { return store.QueueKey{RangeHash: h, ID: []byte{id}} }
	run := func(h uint32, a, b byte) scavenger.KeyRange {
		return scavenger.KeyRange{First: key(h, a), Last: key(h, b)}
	}
	after := key(10, 5)
	many := func(n int) []scavenger.KeyRange {
		var rs []scavenger.KeyRange
		for i := range n {
			rs = append(rs, run(uint32(20+i), 1, 2))
		}
		return rs
	}
	for _, tc := range []struct {
		name     string
		p        scavenger.Partition
		after    *store.QueueKey
		finished []scavenger.KeyRange
		ok       bool
	}{
		{name: "runs a pass writes", after: &after, finished: []scavenger.KeyRange{run(10, 6, 9), run(11, 1, 1), run(12, 0, 3)}, ok: true},
		{name: "first run begins before the position", after: &after, finished: []scavenger.KeyRange{run(10, 2, 7)}, ok: true},
		{name: "no position yet", finished: []scavenger.KeyRange{run(0, 1, 1)}, ok: true},
		{name: "as many runs as the bound", after: &after, finished: many(scavenger.MaxFinishedRuns), ok: true},
		{name: "run ends before it starts", after: &after, finished: []scavenger.KeyRange{run(10, 9, 7)}},
		{name: "first run ends at the position", after: &after, finished: []scavenger.KeyRange{run(10, 1, 5)}},
		{name: "runs out of order", after: &after, finished: []scavenger.KeyRange{run(12, 1, 2), run(11, 1, 2)}},
		{name: "runs overlap", after: &after, finished: []scavenger.KeyRange{run(11, 1, 4), run(11, 4, 6)}},
		{name: "run outside the partition", p: scavenger.Partition{Index: 1, Count: 2}, finished: []scavenger.KeyRange{run(0, 1, 2)}},
		{name: "more runs than the bound", after: &after, finished: many(scavenger.MaxFinishedRuns + 1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := baseConfig()
			cfg.Partition = tc.p
			cp := scavenger.Checkpoint{Version: scavenger.CheckpointVersion, Partition: tc.p.String(), Settings: scavenger.SettingsDigest(cfg), Database: "sqlite:test",
				Walks: []scavenger.WalkPosition{{Walk: scavenger.WalkQueues, Table: store.V1, After: tc.after, Finished: tc.finished}}}
			cp.Checksum = cp.Sum() // whole: only the runs are at fault
			err := cp.Fits(cfg, "sqlite:test")
			switch {
			case tc.ok && err != nil:
				t.Fatalf("Fits: %v, want the runs accepted", err)
			case !tc.ok && !errors.Is(err, scavenger.ErrCheckpointMismatch):
				t.Fatalf("Fits: %v, want ErrCheckpointMismatch", err)
			case err != nil:
				t.Logf("refused: %v", err)
			}
		})
	}
}
