package faults

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tqscavenger/tqscavenger/internal/testdb"
	"github.com/tqscavenger/tqscavenger/scavenger"
	"github.com/tqscavenger/tqscavenger/seed"
	"github.com/tqscavenger/tqscavenger/sqlstore"
)

// seedPinned writes w into db with the seed's clock at now, so that two
// databases seeded alike hold the same bytes.
func seedPinned(t *testing.T, db *sqlstore.DB, w workload, now time.Time) {
	t.Helper()
	for _, spec := range []seed.Spec{
		{NamePrefix: "dead", Queues: w.dead, TasksPerQueue: w.tasksPerQueue, Expired: 1, IdleAge: 72 * time.Hour, Now: now},
		{NamePrefix: "live", Queues: w.live, TasksPerQueue: w.tasksPerQueue, Expired: 0.5, NoExpiry: 0.5, Now: now},
	} {
		if _, err := seed.Write(ctx, db, spec); err != nil {
			t.Fatal(err)
		}
	}
}

// waitFile waits until the file at path holds a position of the v1 queue
// walk (the first checkpoint of a pass can be the empty v2 walk's end), or
// p has exited.
func waitFile(t *testing.T, p *proc, path string, limit time.Duration) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		var cp scavenger.Checkpoint
		if b, err := os.ReadFile(path); err == nil && json.Unmarshal(b, &cp) == nil {
			for _, w := range cp.Walks {
				if w.Table == 1 && w.After != nil {
					return
				}
			}
		}
		select {
		case <-p.done:
			return
		case <-time.After(10 * time.Millisecond):
		}
	}
	t.Fatalf("no checkpoint with a v1 position at %s after %s", path, limit)
}

// TestCheckpointSIGKILL kills `run --checkpoint` with SIGKILL at a random
// point after its first checkpoint write (seeded, so a failure
// reproduces), twice, then reruns it with the same checkpoint; with --now
// pinned, on every engine.
//
// Invariant: the checkpoint file is a whole checkpoint after every kill
// (atomic write); the rerun resumes (it lists fewer queue rows and
// examines fewer tasks than are left, which a pass from the first row
// would), exits 0, removes the file, and leaves the database digest-equal
// to a clean pass over an identical copy; a checkpoint of another database,
// with other settings, or with its walks marked done and its checksum
// removed is refused with status 2 and changes nothing.
func TestCheckpointSIGKILL(t *testing.T) {
	for i, e := range []string{"sqlite", "postgres", "mysql"} {
		t.Run(e, func(t *testing.T) {
			t.Parallel()
			pinned := time.Now().Add(-time.Minute).UTC().Truncate(time.Second)
			now := pinned.Format(time.RFC3339)
			w := workload{dead: 100, live: 100, tasksPerQueue: 10}
			db, clean := testdb.Open(t, engines[e]), testdb.Open(t, engines[e])
			seedPinned(t, db, w, pinned)
			seedPinned(t, clean, w, pinned)
			if a, b := testdb.Digest(t, db), testdb.Digest(t, clean); a != b {
				t.Fatalf("the two copies differ: %s, %s", a, b)
			}
			if code, out := tqs(t, time.Minute, "run", "--db", dsnOf(clean), "--now", now, "--progress", "never"); code != 0 {
				t.Fatalf("clean pass: exit %d:\n%s", code, out)
			}
			want := testdb.Digest(t, clean)

			cpFile := filepath.Join(t.TempDir(), "pass.checkpoint")
			args := []string{"run", "--db", dsnOf(db), "--now", now, "--progress", "never", "--wait-lock", "--checkpoint", cpFile}
			rng := rand.New(rand.NewPCG(uint64(i), 0xc4e2))
			var saved []byte
			for kill := 0; kill < 2; kill++ {
				p := start(t, append(args, "--list-page-size", "5", "--workers", "2", "--max-statements-per-second", "40", "--checkpoint-interval", "100ms")...)
				waitFile(t, p, cpFile, time.Minute)
				delay := time.Duration(rng.IntN(1500)) * time.Millisecond
				select {
				case <-time.After(delay):
				case <-p.done:
				}
				p.cmd.Process.Signal(syscall.SIGKILL)
				code := p.wait(time.Minute)
				b, err := os.ReadFile(cpFile)
				var cp scavenger.Checkpoint
				if err != nil || json.Unmarshal(b, &cp) != nil || cp.Database == "" {
					t.Fatalf("kill %d: the checkpoint is not whole (%v):\n%s", kill+1, err, b)
				}
				saved = b
				t.Logf("kill %d after %s past the first v1 checkpoint (exit %d): %s", kill+1, delay, code, strings.Join(strings.Fields(string(b)), " "))
			}

			// The killed process's last statement may still run on the
			// server; its session (and lock) ends when it has.
			lctx, cancel := context.WithTimeout(ctx, time.Minute)
			l, err := db.Lock(lctx, true)
			cancel()
			if err != nil {
				t.Fatal(err)
			}
			l.Unlock()
			// Refused: another database, other settings. Nothing changes.
			before := testdb.Digest(t, db)
			other := filepath.Join(t.TempDir(), "other.checkpoint")
			os.WriteFile(other, saved, 0o644)
			code, out := tqs(t, time.Minute, "run", "--db", dsnOf(clean), "--now", now, "--progress", "never", "--checkpoint", other)
			if code != 2 || !strings.Contains(out, "another database") || !strings.Contains(out, "--fresh") {
				t.Errorf("a checkpoint of another database: exit %d, want 2 naming it:\n%s", code, out)
			}
			code, out = tqs(t, time.Minute, append(args, "--grace", "96h")...)
			if code != 2 || !strings.Contains(out, "other settings") {
				t.Errorf("a checkpoint with other settings: exit %d, want 2 naming them:\n%s", code, out)
			}
			// Issue 39: every walk marked done and the checksum deleted
			// (jq '(.walks|=map(.done=true))|del(.checksum)') resumed to
			// a completed pass that examined nothing.
			var m map[string]any
			if err := json.Unmarshal(saved, &m); err != nil {
				t.Fatal(err)
			}
			for _, w := range m["walks"].([]any) {
				w.(map[string]any)["done"] = true
			}
			delete(m, "checksum")
			edited := filepath.Join(t.TempDir(), "edited.checkpoint")
			eb, _ := json.Marshal(m)
			os.WriteFile(edited, eb, 0o644)
			code, out = tqs(t, time.Minute, "run", "--db", dsnOf(db), "--now", now, "--progress", "never", "--checkpoint", edited)
			if code != 2 || !strings.Contains(out, edited) || !strings.Contains(out, "checksum does not verify: it has none") {
				t.Errorf("a checkpoint without its checksum: exit %d, want 2 naming it and why:\n%s", code, out)
			}
			if got := testdb.Digest(t, db); got != before {
				t.Fatalf("a refused checkpoint changed the database: %s, was %s", got, before)
			}
			if b, _ := os.ReadFile(cpFile); string(b) != string(saved) {
				t.Fatal("a refused run changed the checkpoint")
			}

			left := snapshot(t, db)
			stats := filepath.Join(t.TempDir(), "stats.json")
			if code, out := tqs(t, time.Minute, append(args, "--stats-json", stats)...); code != 0 {
				t.Fatalf("rerun: exit %d:\n%s", code, out)
			}
			var st struct {
				QueuesListed   int64 `json:"queues_listed"`
				TasksProcessed int64 `json:"tasks_processed"`
			}
			if b, err := os.ReadFile(stats); err != nil || json.Unmarshal(b, &st) != nil {
				t.Fatalf("stats: %v", err)
			}
			t.Logf("rerun from the checkpoint: listed %d of the %d queue rows left, examined %d of the %d tasks left", st.QueuesListed, len(left.queues), st.TasksProcessed, len(left.tasks))
			if st.QueuesListed >= int64(len(left.queues)) || st.TasksProcessed >= int64(len(left.tasks)) {
				t.Errorf("the rerun from %s did not resume: listed %d of %d queues, examined %d of %d tasks", saved, st.QueuesListed, len(left.queues), st.TasksProcessed, len(left.tasks))
			}
			if _, err := os.Stat(cpFile); !os.IsNotExist(err) {
				t.Errorf("the completed pass left its checkpoint: %v", err)
			}
			if got := testdb.Digest(t, db); got != want {
				t.Errorf("after kills and a resumed rerun: %s, a clean pass: %s", got, want)
			}
		})
	}
}
