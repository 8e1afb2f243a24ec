package scavenger_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"

	"github.com/tqscavenger/tqscavenger/internal/testdb"
	"github.com/tqscavenger/tqscavenger/scavenger"
	"github.com/tqscavenger/tqscavenger/sqlstore"
	"github.com/tqscavenger/tqscavenger/store"
)

// recordCheckpoints makes cfg write a checkpoint at every advance and
// returns the list they are kept in.
func recordCheckpoints(cfg *scavenger.Config) func() []scavenger.Checkpoint {
	var (
		mu  sync.Mutex
		cps []scavenger.Checkpoint
	)
	cfg.CheckpointInterval = 1
	cfg.Checkpoint = func(_ context.Context, cp scavenger.Checkpoint) error {
		mu.Lock()
		defer mu.Unlock()
		cps = append(cps, cp)
		return nil
	}
	return func() []scavenger.Checkpoint {
		mu.Lock()
		defer mu.Unlock()
		return cps
	}
}

// TestCheckpointChecksum: every checkpoint a pass writes carries the
// checksum of its contents, which survives its JSON; a checkpoint is
// trusted only when its checksum verifies: one whose contents were
// changed after it was written (a position moved ahead, a walk marked
// done, another partition), one whose checksum was removed (with a walk
// marked done too, or alone: a build before checksums wrote none), one of
// a version that carries none and one of a newer version are refused
// before any work, naming why. SQLite: the checksum is the same code on
// every engine.
func TestCheckpointChecksum(t *testing.T) {
	ctx := context.Background()
	db := testdb.Open(t, sqlstore.SQLite)
	seedPartitioned(t, db)
	cfg := partitionConfig(scavenger.Partition{})
	cfg.DryRun = true
	cps := recordCheckpoints(&cfg)
	if _, err := scavenger.New(db, cfg).Run(ctx); err != nil {
		t.Fatal(err)
	}
	var mid *scavenger.Checkpoint
	for _, cp := range cps() {
		if !strings.HasPrefix(cp.Checksum, "sha256:") || cp.Verify() != nil {
			t.Fatalf("checkpoint %+v: checksum %q does not verify", cp.Walks, cp.Checksum)
		}
		if mid == nil && cp.Walks[0].After != nil && !cp.Walks[0].Done {
			mid = &cp
		}
	}
	if mid == nil {
		t.Fatal("no checkpoint inside the first walk")
	}
	b, _ := json.Marshal(mid)
	var back scavenger.Checkpoint
	if err := json.Unmarshal(b, &back); err != nil || back.Verify() != nil {
		t.Fatalf("the checkpoint read back from its JSON does not verify (%v): %s", err, b)
	}
	c := partitionConfig(scavenger.Partition{})
	c.DryRun, c.Resume = true, &back
	if st, err := scavenger.New(db, c).Run(ctx); err != nil || !st.Resumed {
		t.Fatalf("the checkpoint as written: resumed %t, %v; want it accepted", st.Resumed, err)
	}
	cases := []struct {
		name string
		edit func(*scavenger.Checkpoint)
		want error  // what the refusal wraps
		says string // and what it says
	}{
		{"position moved ahead", func(c *scavenger.Checkpoint) { c.Walks[0].After = &store.QueueKey{RangeHash: math.MaxUint32 - 1} }, scavenger.ErrCheckpointCorrupt, "does not match its contents"},
		{"walk marked done", func(c *scavenger.Checkpoint) { c.Walks[0].Done = true }, scavenger.ErrCheckpointCorrupt, "does not match its contents"},
		{"a byte of its id", func(c *scavenger.Checkpoint) {
			c.Walks[0].After.ID = bytes.Clone(c.Walks[0].After.ID)
			c.Walks[0].After.ID[0]++
		}, scavenger.ErrCheckpointCorrupt, "does not match its contents"},
		{"another partition", func(c *scavenger.Checkpoint) { c.Partition = "1/2" }, scavenger.ErrCheckpointCorrupt, "does not match its contents"},
		{"another checksum", func(c *scavenger.Checkpoint) { c.Checksum = "sha256:00" }, scavenger.ErrCheckpointCorrupt, "does not match its contents"},
		// The repro of issue 39: every walk marked done and the checksum
		// deleted resumed to a completed pass that examined nothing.
		{"walks marked done, checksum removed", func(c *scavenger.Checkpoint) {
			for i := range c.Walks {
				c.Walks[i].Done = true
			}
			c.Checksum = ""
		}, scavenger.ErrCheckpointUnverified, "it has none"},
		{"checksum removed", func(c *scavenger.Checkpoint) { c.Checksum = "" }, scavenger.ErrCheckpointUnverified, "it has none"},
		{"version 0, no checksum", func(c *scavenger.Checkpoint) { c.Version, c.Checksum = 0, "" }, scavenger.ErrCheckpointUnverified, "version 0, which carries no checksum"},
		{"version 0, checksum made again", func(c *scavenger.Checkpoint) { c.Version = 0; c.Checksum = c.Sum() }, scavenger.ErrCheckpointUnverified, "version 0, which carries no checksum"},
		{"a newer version", func(c *scavenger.Checkpoint) { c.Version++; c.Checksum = c.Sum() }, scavenger.ErrCheckpointMismatch, "this build reads version"},
	}
	for _, tc := range cases {
		var cp scavenger.Checkpoint
		if err := json.Unmarshal(b, &cp); err != nil {
			t.Fatal(err)
		}
		tc.edit(&cp)
		if err := cp.Verify(); !errors.Is(err, tc.want) || !strings.Contains(fmt.Sprint(err), tc.says) {
			t.Errorf("%s: Verify: %v, want %v saying %q", tc.name, err, tc.want, tc.says)
		}
		c := partitionConfig(scavenger.Partition{})
		c.DryRun, c.Resume = true, &cp
		st, err := scavenger.New(db, c).Run(ctx)
		if !errors.Is(err, tc.want) || !errors.Is(err, scavenger.ErrCheckpointMismatch) || !strings.Contains(fmt.Sprint(err), tc.says) {
			t.Errorf("%s: Run: %v, want %v saying %q", tc.name, err, tc.want, tc.says)
		}
		if st.Resumed || st.QueuesListed != 0 || st.TasksProcessed != 0 {
			t.Errorf("%s: the refused pass resumed (%t), listed %d queues and read %d tasks", tc.name, st.Resumed, st.QueuesListed, st.TasksProcessed)
		}
	}
}

// TestCheckpointPositionsChecked: on every engine, a resumed position is
// checked against the tables before any work: one at the table's last
// row, or done, is accepted (and the pass says it resumed, the done walk
// listing nothing); one past the last row of its table, or outside the
// partition, is refused with a reason, though its checksum matches.
func TestCheckpointPositionsChecked(t *testing.T) {
	ctx := context.Background()
	forEachEngine(t, func(t *testing.T, db *sqlstore.DB) {
		seedPartitioned(t, db)
		before := digest(t, db)
		id, err := db.Identity(ctx)
		if err != nil {
			t.Fatal(err)
		}
		lastQueue := lastKey(t, db, "SELECT range_hash, task_queue_id FROM task_queues ORDER BY range_hash DESC, task_queue_id DESC")
		lastTask := lastKey(t, db, "SELECT range_hash, task_queue_id FROM tasks ORDER BY range_hash DESC, task_queue_id DESC")
		past := store.QueueKey{RangeHash: math.MaxUint32, ID: bytes.Repeat([]byte{0xff}, 40)}
		half := scavenger.Partition{Index: 0, Count: 2}
		inHalf := store.QueueKey{RangeHash: 5, ID: []byte{1}}
		cases := []struct {
			name   string
			part   scavenger.Partition
			walks  []scavenger.WalkPosition
			refuse string // what the error says; "" accepted
		}{
			{"at the last queue row", scavenger.Partition{}, []scavenger.WalkPosition{{Walk: scavenger.WalkQueues, Table: store.V1, After: &lastQueue}}, ""},
			{"at the last task row", scavenger.Partition{}, []scavenger.WalkPosition{
				{Walk: scavenger.WalkQueues, Table: store.V2, Done: true}, {Walk: scavenger.WalkQueues, Table: store.V1, Done: true},
				{Walk: scavenger.WalkOrphans, Table: store.V1, After: &lastTask}}, ""},
			{"queues done", scavenger.Partition{}, []scavenger.WalkPosition{{Walk: scavenger.WalkQueues, Table: store.V1, Done: true}}, ""},
			{"past the last queue row", scavenger.Partition{}, []scavenger.WalkPosition{{Walk: scavenger.WalkQueues, Table: store.V1, After: &past}}, "past the last row of task_queues"},
			{"past the last v2 queue row", scavenger.Partition{}, []scavenger.WalkPosition{{Walk: scavenger.WalkQueues, Table: store.V2, After: &past}}, "past the last row of task_queues_v2"},
			{"past the last task row", scavenger.Partition{}, []scavenger.WalkPosition{{Walk: scavenger.WalkOrphans, Table: store.V1, After: &past}}, "past the last row of tasks"},
			{"inside the partition", half, []scavenger.WalkPosition{{Walk: scavenger.WalkQueues, Table: store.V1, After: &inHalf}}, ""},
			{"outside the partition", half, []scavenger.WalkPosition{{Walk: scavenger.WalkQueues, Table: store.V1, After: &lastQueue}}, "outside partition"},
		}
		for _, c := range cases {
			cfg := partitionConfig(c.part)
			cfg.DryRun = true
			cp := scavenger.Checkpoint{Version: scavenger.CheckpointVersion, Partition: c.part.String(), Settings: scavenger.SettingsDigest(cfg), Database: id, Walks: c.walks}
			cp.Checksum = cp.Sum()
			cfg.Resume = &cp
			// FitsTables, what a host asks before it sets a pass up,
			// says what Run will of the positions in the tables.
			ferr := cp.FitsTables(ctx, db)
			if past := strings.Contains(c.refuse, "past the last row"); past != errors.Is(ferr, scavenger.ErrCheckpointMismatch) || (past && !strings.Contains(ferr.Error(), c.refuse)) || (!past && ferr != nil) {
				t.Errorf("%s: FitsTables: %v", c.name, ferr)
			}
			st, err := scavenger.New(db, cfg).Run(ctx)
			switch {
			case c.refuse == "" && err != nil:
				t.Errorf("%s: refused: %v", c.name, err)
			case c.refuse == "" && (!st.Resumed || len(st.ResumedFrom) != len(c.walks)):
				t.Errorf("%s: resumed %t from %v: the pass does not say it resumed", c.name, st.Resumed, st.ResumedFrom)
			case c.refuse != "" && (!errors.Is(err, scavenger.ErrCheckpointMismatch) || !strings.Contains(err.Error(), c.refuse)):
				t.Errorf("%s: %v, want ErrCheckpointMismatch saying %q", c.name, err, c.refuse)
			case c.refuse != "" && (st.QueuesListed != 0 || st.TasksProcessed != 0):
				t.Errorf("%s: the refused pass listed %d queues and read %d tasks", c.name, st.QueuesListed, st.TasksProcessed)
			case c.name == "queues done" && st.Tables[store.V1].QueuesListed != 0:
				t.Errorf("%s: listed %d v1 queues of a done walk", c.name, st.Tables[store.V1].QueuesListed)
			}
		}
		if got := digest(t, db); got != before {
			t.Errorf("the dry runs changed the database")
		}
	})
}

// lastKey reads the first key query returns.
func lastKey(t *testing.T, db *sqlstore.DB, query string) store.QueueKey {
	t.Helper()
	var (
		k  store.QueueKey
		rh int64
	)
	if err := testdb.SQL(t, db).QueryRow(query).Scan(&rh, &k.ID); err != nil {
		t.Fatal(err)
	}
	k.RangeHash = uint32(rh)
	return k
}

// TestCheckpointDoneAtLastRow: on every engine, a walk's mark is done as
// soon as its last row is finished, so no checkpoint holds the key of a
// walk's last row as an open position: the pass may have deleted that
// row, and a position past a table's last row is refused on resume.
// (Before, the checkpoint written when the last row finished said "after
// the last key", and the walk was done only at its next write.)
func TestCheckpointDoneAtLastRow(t *testing.T) {
	ctx := context.Background()
	forEachEngine(t, func(t *testing.T, db *sqlstore.DB) {
		seedPartitioned(t, db)
		cfg := partitionConfig(scavenger.Partition{})
		cps := recordCheckpoints(&cfg)
		if _, err := scavenger.New(db, cfg).Run(ctx); err != nil {
			t.Fatal(err)
		}
		all := cps()
		if len(all) == 0 {
			t.Fatal("no checkpoint")
		}
		final := all[len(all)-1]
		for i, w := range final.Walks {
			if !w.Done {
				t.Fatalf("the final checkpoint's %s: want done", w)
			}
			if w.After == nil {
				continue // a walk of no rows
			}
			for _, cp := range all {
				if p := cp.Walks[i]; !p.Done && p.After != nil && p.After.Compare(*w.After) == 0 {
					t.Errorf("a checkpoint holds %s, the walk's last row, as an open position", p)
				}
			}
		}
	})
}
