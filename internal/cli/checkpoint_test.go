package cli_test

// run --checkpoint FILE: a file that is damaged, edited or does not fit
// the pass is refused with exit status 2 naming it, never a silent fresh
// start or a silent skip; a file without a checksum (the build before
// checksums wrote none) is refused too.

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tqscavenger/tqscavenger/internal/cli"
	"github.com/tqscavenger/tqscavenger/scavenger"
	"github.com/tqscavenger/tqscavenger/sqlstore"
	"github.com/tqscavenger/tqscavenger/store"
)

// goldenCheckpoint is a checkpoint file written by the build before
// checksums (3a0493b: tqscavenger run --checkpoint, SIGKILLed after its v1
// walk's first positions) over seedFile's data, with its database
// identity replaced by that of the file at path (a file's identity is its
// inode).
func goldenCheckpoint(t *testing.T, path string) scavenger.Checkpoint {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "checkpoint-3a0493b.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cp scavenger.Checkpoint
	if err := json.Unmarshal(b, &cp); err != nil {
		t.Fatal(err)
	}
	if cp.Checksum != "" || strings.Contains(string(b), "checksum") {
		t.Fatal("the golden checkpoint has a checksum: it is not of the build before them")
	}
	db, err := sqlstore.Open(context.Background(), path, sqlstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if cp.Database, err = db.Identity(context.Background()); err != nil {
		t.Fatal(err)
	}
	return cp
}

func writeCheckpoint(t *testing.T, cp scavenger.Checkpoint) string {
	t.Helper()
	b, err := json.MarshalIndent(cp, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return writeTemp(t, "pass.checkpoint", string(b))
}

// TestCheckpointFileOldFormat: the golden file of the build before
// checksums is refused with exit status 2, naming the file and that it
// has no checksum, before any row is deleted, and the file is left;
// --fresh then starts over and completes. A checkpoint is trusted only
// when it verifies: accepting one without a checksum would make deleting
// the field a way past the check (issue 39), and a pass killed across
// the upgrade only redoes work.
func TestCheckpointFileOldFormat(t *testing.T) {
	setEnv(t, nil)
	db := seedFile(t)
	before := countTasks(t, db)
	file := writeCheckpoint(t, goldenCheckpoint(t, db))
	code, stdout, stderr := tqs("run", "--db", db, "--checkpoint", file, "--output", "json")
	if code != cli.ExitUsage || !strings.Contains(stderr, file) || !strings.Contains(stderr, "it has none") || !strings.Contains(stderr, "--fresh") {
		t.Fatalf("exit %d, want %d naming %s, saying it has no checksum and --fresh: %s", code, cli.ExitUsage, file, stderr)
	}
	if stdout != "" {
		t.Errorf("a refused checkpoint printed a result: %s", stdout)
	}
	if after := countTasks(t, db); after != before {
		t.Errorf("tasks %d → %d: a refused checkpoint let the pass work", before, after)
	}
	if _, err := os.Stat(file); err != nil {
		t.Fatalf("the refused checkpoint file is gone: %v", err)
	}
	code, stdout, stderr = tqs("run", "--db", db, "--checkpoint", file, "--fresh", "--output", "json")
	if code != cli.ExitOK {
		t.Fatalf("--fresh: exit %d: %s", code, stderr)
	}
	var out struct {
		Outcome string `json:"outcome"`
		Resumed bool   `json:"resumed"`
	}
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatalf("%v: %s", err, stdout)
	}
	if out.Outcome != "completed" || out.Resumed {
		t.Errorf("--fresh: outcome %q resumed %t: want completed, not resumed", out.Outcome, out.Resumed)
	}
}

// unsealed returns the checkpoint file at path edited as
// jq '(.walks|=map(.done=true))|del(.checksum)' would: every walk done,
// the checksum gone (issue 39's repro).
func unsealed(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, w := range m["walks"].([]any) {
		w.(map[string]any)["done"] = true
	}
	delete(m, "checksum")
	out, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return writeTemp(t, "unsealed.checkpoint", string(out))
}

// TestCheckpointFileRefused: a checkpoint file that is damaged (cut
// short), edited after it was written (a position moved ahead, a walk
// marked done: its checksum no longer matches; every walk marked done and
// the checksum deleted; a version that carries no checksum), or whose checksummed
// positions do not fit the database (past a table's last row) or are not
// what a pass writes (more finished runs than it records) is refused
// with exit status 2, naming the file and why, before any row is
// deleted, and no result is printed.
func TestCheckpointFileRefused(t *testing.T) {
	setEnv(t, nil)
	db := seedFile(t)
	before := countTasks(t, db)
	sealed := func(edit func(*scavenger.Checkpoint)) scavenger.Checkpoint {
		cp := goldenCheckpoint(t, db)
		edit(&cp)
		cp.Checksum = cp.Sum()
		return cp
	}
	past := &store.QueueKey{RangeHash: math.MaxUint32, ID: []byte{0xff, 0xff}}
	good := writeCheckpoint(t, sealed(func(*scavenger.Checkpoint) {}))
	b, _ := os.ReadFile(good)
	cases := map[string]struct {
		file, says string
	}{
		"cut short":                    {writeTemp(t, "short.checkpoint", string(b[:len(b)/2])), "is not a checkpoint"},
		"position moved ahead":         {writeTemp(t, "ahead.checkpoint", strings.Replace(string(b), `"RangeHash": 543068950`, `"RangeHash": 4000000000`, 1)), "checksum does not verify: it does not match"},
		"walk marked done":             {writeTemp(t, "done.checkpoint", strings.Replace(string(b), `"table": 1,`, `"table": 1, "done": true,`, 1)), "checksum does not verify: it does not match"},
		"walks done, checksum removed": {unsealed(t, good), "checksum does not verify: it has none"},
		"version 0":                    {writeTemp(t, "v0.checkpoint", strings.Replace(strings.Replace(string(b), `"version": 1,`, `"version": 0,`, 1), `"checksum"`, `"x"`, 1)), "version 0, which carries no checksum"},
		"past the last row":            {writeCheckpoint(t, sealed(func(cp *scavenger.Checkpoint) { cp.Walks[1].After = past })), "past the last row of task_queues"},
		"too many finished runs": {writeCheckpoint(t, sealed(func(cp *scavenger.Checkpoint) {
			for i := range scavenger.MaxFinishedRuns + 1 {
				k := store.QueueKey{RangeHash: 4000000000 + uint32(i), ID: []byte{1}}
				cp.Walks[1].Finished = append(cp.Walks[1].Finished, scavenger.KeyRange{First: k, Last: k})
			}
		})), "a pass records at most"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			code, stdout, stderr := tqs("run", "--db", db, "--checkpoint", c.file, "--output", "json")
			if code != cli.ExitUsage || !strings.Contains(stderr, c.file) || !strings.Contains(stderr, c.says) {
				t.Errorf("exit %d, want %d naming %s and saying %q: %s", code, cli.ExitUsage, c.file, c.says, stderr)
			}
			if stdout != "" {
				t.Errorf("a refused checkpoint printed a result: %s", stdout)
			}
			if _, err := os.Stat(c.file); err != nil {
				t.Errorf("the refused checkpoint file is gone: %v", err)
			}
		})
	}
	if after := countTasks(t, db); after != before {
		t.Errorf("tasks %d → %d: a refused checkpoint let the pass work", before, after)
	}
	// The same file, untouched, is accepted: the refusals are the edits'.
	if code, _, stderr := tqs("run", "--db", db, "--checkpoint", good); code != cli.ExitOK {
		t.Errorf("the sealed golden checkpoint: exit %d: %s", code, stderr)
	}
}
