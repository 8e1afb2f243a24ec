package temporalworker

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/tqscavenger/tqscavenger/scavenger"
	"github.com/tqscavenger/tqscavenger/store"
)

// failingReads fails every task read of the queues (subqueue 0 keys) in
// keys: their jobs fail, the walk's mark stays before the first, and the
// queues between and after them finish, as runs beyond the mark.
type failingReads struct {
	store.Store
	keys []store.QueueKey
}

func (f *failingReads) ReadTasks(ctx context.Context, t store.Table, q store.QueueKey, after *store.TaskKey, limit int) ([]store.TaskRow, error) {
	for _, k := range f.keys {
		if q.RangeHash == k.RangeHash && string(q.ID) == string(k.ID) {
			return nil, errors.New("statement failed (injected)")
		}
	}
	return f.Store.ReadTasks(ctx, t, q, after, limit)
}

// TestHeartbeatGoldens: heartbeats written by earlier builds decode, their
// checkpoint's checksum still verifies (the finished runs are a field
// left out when empty, so a checkpoint without them encodes as it did),
// and a retry resumes from them, listing only the queues their positions
// do not pass:
//
//   - progress-599583c.json: the build before finished runs (a first
//     attempt's final heartbeat, its v1 scans of the upper half failed),
//     one low-water mark per walk;
//   - progress-finished-runs.json: this build's, its v2 walk's mark held
//     before the first of two queues whose reads failed, the queues the
//     other jobs finished recorded as two runs beyond it, which the retry
//     skips.
//
// The retry's database is a fresh copy of the seeded data: each golden's
// database identity (a file's inode) is replaced by it and its checksum
// made again, once the written one is verified.
func TestHeartbeatGoldens(t *testing.T) {
	for _, name := range []string{"progress-599583c.json", "progress-finished-runs.json"} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join("testdata", name)
			if writeGolden && name == "progress-finished-runs.json" {
				writeRunsGolden(t, path)
			}
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var p Progress
			if err := json.Unmarshal(raw, &p); err != nil {
				t.Fatal(err)
			}
			if p.Version != ProgressVersion || p.Checkpoint == nil || len(p.Checkpoint.Walks) != 4 || p.Checkpoint.Checksum == "" {
				t.Fatalf("decoded %+v: the progress or its checkpoint was lost", p)
			}
			if err := p.Checkpoint.Verify(); err != nil {
				t.Fatalf("the golden checkpoint's checksum does not verify: %v", err)
			}
			runs := 0
			for _, w := range p.Checkpoint.Walks {
				runs += len(w.Finished)
			}
			if want := name == "progress-finished-runs.json"; (runs > 0) != want {
				t.Fatalf("the golden holds %d finished runs (%v): want some %t", runs, p.Checkpoint.Walks, want)
			}

			db := seeded(t)
			d := newDatabase(t, db)
			desc := describe(t, d, 1)
			cfg, err := desc.Config(0)
			if err != nil {
				t.Fatal(err)
			}
			cp := *p.Checkpoint
			cp.Database = identity(t, d)
			cp.Checksum = cp.Sum()
			if err := cp.Fits(cfg, cp.Database); err != nil {
				t.Fatalf("the golden checkpoint does not fit the pass: %v", err)
			}
			p.Checkpoint = &cp
			// The rows the retry lists: those no position passes.
			want := 0
			for _, w := range cp.Walks {
				if w.Walk != scavenger.WalkQueues || w.Done {
					continue
				}
				rows, err := db.ListQueues(context.Background(), w.Table, nil, 1<<20)
				if err != nil {
					t.Fatal(err)
				}
			row:
				for _, r := range rows {
					if w.After != nil && !w.After.Less(r.QueueKey) {
						continue
					}
					for _, fr := range w.Finished {
						if fr.Contains(r.QueueKey) {
							continue row
						}
					}
					want++
				}
			}
			var (
				beats []Progress
				mu    sync.Mutex
			)
			env := activityEnv(t, &Activities{DB: d, Logger: quiet()}, &beats, &mu)
			env.SetHeartbeatDetails(p)
			res := runPartition(t, env, PartitionInput{Pass: desc})
			if !res.Resumed || !reflect.DeepEqual(res.ResumedFrom, cp.Walks) || res.Outcome != string(scavenger.Completed) {
				t.Fatalf("result %+v: want a completed partition resumed from the golden positions %v", res, cp.Walks)
			}
			if res.ThisAttempt.QueuesListed != int64(want) {
				t.Errorf("the retry listed %d queues, %d lie outside the golden positions", res.ThisAttempt.QueuesListed, want)
			}
			t.Logf("resumed from %v: listed %d queues", cp.Walks, res.ThisAttempt.QueuesListed)
		})
	}
}

// writeRunsGolden writes path: the final heartbeat of a first attempt
// whose reads of the first and the sixth v2 queue failed.
func writeRunsGolden(t *testing.T, path string) {
	db := seeded(t)
	d := newDatabase(t, db)
	rows, err := db.ListQueues(context.Background(), store.V2, nil, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	fail := []store.QueueKey{rows[0].QueueKey, rows[5].QueueKey}
	var (
		beats []Progress
		mu    sync.Mutex
	)
	acts := &Activities{DB: d, Logger: quiet(), Middleware: []store.Middleware{func(s store.Store) store.Store { return &failingReads{Store: s, keys: fail} }}}
	env := activityEnv(t, acts, &beats, &mu)
	desc := describe(t, d, 1)
	desc.CheckpointInterval = time.Millisecond
	if _, err := env.ExecuteActivity(PartitionActivityName, PartitionInput{Pass: desc}); err == nil {
		t.Fatal("the first attempt did not fail")
	}
	mu.Lock()
	last := beats[len(beats)-1]
	mu.Unlock()
	b, err := json.MarshalIndent(last, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
}
