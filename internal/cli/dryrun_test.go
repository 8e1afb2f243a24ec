package cli_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tqscavenger/tqscavenger/internal/cli"
	"github.com/tqscavenger/tqscavenger/sqlstore"
)

// TestDryRunSaysWouldDelete: a dry run's --output json and --stats-json
// count nothing as deleted, say dry_run, and put what would go under
// would_delete; its log and summary say "would delete"; nothing is gone.
func TestDryRunSaysWouldDelete(t *testing.T) {
	path := seedFile(t) // 20 queues of 50 tasks, half expired
	stats := filepath.Join(t.TempDir(), "stats.json")
	before := fileSum(t, path)
	code, out, errOut := tqs("run", "--db", path, "--dry-run", "--output", "json", "--stats-json", stats, "--progress", "never")
	if code != cli.ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	file, err := os.ReadFile(stats)
	if err != nil {
		t.Fatal(err)
	}
	for name, doc := range map[string]string{"--output json": out, "--stats-json": string(file)} {
		var m map[string]any
		if err := json.Unmarshal([]byte(doc), &m); err != nil {
			t.Fatalf("%s: %v\n%s", name, err, doc)
		}
		for k, v := range m {
			if strings.HasSuffix(k, "_deleted") && v != 0.0 {
				t.Errorf("%s: %s = %v in a dry run, want 0", name, k, v)
			}
		}
		if m["dry_run"] != true {
			t.Errorf("%s: dry_run = %v, want true", name, m["dry_run"])
		}
		would, _ := m["would_delete"].(map[string]any)
		if would["tasks"] != 500.0 || would["queues"] == nil {
			t.Errorf("%s: would_delete = %v, want 500 tasks and a queue count", name, m["would_delete"])
		}
		if fbc, ok := m["failures_by_cause"].(map[string]any); !ok || len(fbc) != 0 {
			t.Errorf("%s: failures_by_cause = %v, want {}", name, m["failures_by_cause"])
		}
	}
	if !strings.Contains(errOut, "would_delete.tasks=500") || strings.Contains(errOut, "tasks_deleted=500") {
		t.Errorf("the completed log line does not say would_delete.tasks=500, or says tasks_deleted=500:\n%s", errOut)
	}
	if fileSum(t, path) != before {
		t.Error("a dry run changed the database file")
	}
	code, out, _ = tqs("run", "--db", path, "--dry-run", "--progress", "never", "--log-level", "warn")
	if code != cli.ExitOK || !strings.Contains(out, "would delete 500") || !strings.Contains(out, "nothing was deleted") {
		t.Errorf("dry run summary (exit %d) does not say would delete 500 and nothing was deleted:\n%s", code, out)
	}
	// A real pass still says deleted, and has no would_delete.
	code, out, _ = tqs("run", "--db", path, "--output", "json", "--progress", "never", "--log-level", "warn")
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil || code != cli.ExitOK {
		t.Fatalf("exit %d, %v: %s", code, err, out)
	}
	if m["tasks_deleted"] != 500.0 || m["dry_run"] != false || m["would_delete"] != nil {
		t.Errorf("real pass: tasks_deleted %v, dry_run %v, would_delete %v; want 500, false, none", m["tasks_deleted"], m["dry_run"], m["would_delete"])
	}
}

// TestDryRunTakesNoLock: beside a pass holding the lock (whole or a
// partition), a dry run runs and exits 0: it takes no lock, so it neither
// waits for a real pass nor keeps one out.
func TestDryRunTakesNoLock(t *testing.T) {
	path := seedFile(t)
	db, err := sqlstore.Open(context.Background(), path, sqlstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	lock, err := db.Lock(context.Background(), false)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Unlock()
	for _, args := range [][]string{{}, {"--partition", "1/4"}} {
		a := append([]string{"run", "--db", path, "--dry-run", "--progress", "never", "--log-level", "warn"}, args...)
		if code, out, errOut := tqs(a...); code != cli.ExitOK || !strings.Contains(out, "would delete 500") && len(args) == 0 {
			t.Errorf("%v beside a held lock: exit %d, want 0\n%s%s", args, code, out, errOut)
		}
	}
	// The real pass is still kept out: the lock is held.
	checkError(t, []string{"run", "--db", path}, "another tqscavenger is running", cli.ExitLocked, tqs)
}

// TestDryRunRefusesCheckpoint: a dry run never writes or removes a
// checkpoint, so --checkpoint with --dry-run is refused before any work.
func TestDryRunRefusesCheckpoint(t *testing.T) {
	path := seedFile(t)
	cp := filepath.Join(t.TempDir(), "pass.ckpt")
	if err := os.WriteFile(cp, []byte("kept"), 0o644); err != nil {
		t.Fatal(err)
	}
	checkUsageError(t, []string{"run", "--db", path, "--dry-run", "--checkpoint", cp}, "--checkpoint with --dry-run", tqs)
	if b, err := os.ReadFile(cp); err != nil || string(b) != "kept" {
		t.Errorf("the checkpoint file changed: %q, %v", b, err)
	}
}
