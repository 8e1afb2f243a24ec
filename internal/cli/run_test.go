package cli_test

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tqscavenger/tqscavenger/internal/cli"
	"github.com/tqscavenger/tqscavenger/internal/testdb"
	"github.com/tqscavenger/tqscavenger/seed"
	"github.com/tqscavenger/tqscavenger/sqlstore"
	"github.com/tqscavenger/tqscavenger/store"
	"github.com/tqscavenger/tqscavenger/wire"
)

func runMain(args ...string) (code int, stdout, stderr string) {
	var o, e bytes.Buffer
	code = cli.Main(args, &o, &e)
	return code, o.String(), e.String()
}

// TestDemo: the demo leaves every live task and no expired one.
func TestDemo(t *testing.T) {
	path := filepath.Join(t.TempDir(), "demo.db")
	code, out, errOut := runMain("demo", "--db", path, "--log-level", "warn")
	if code != 0 {
		t.Fatalf("demo exit %d\n%s\n%s", code, out, errOut)
	}
	for _, want := range []string{"Before:", "After:", "Scavenger pass:"} {
		if !strings.Contains(out, want) {
			t.Errorf("demo output lacks %q:\n%s", want, out)
		}
	}
	db, err := sqlstore.Open(context.Background(), path, sqlstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	now := time.Now()
	live := map[store.Table]int{}
	for _, tb := range []store.Table{store.V1, store.V2} {
		rows, err := testdb.SQL(t, db).Query("SELECT data, data_encoding FROM " + map[store.Table]string{store.V1: "tasks", store.V2: "tasks_v2"}[tb])
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var data []byte
			var enc string
			if err := rows.Scan(&data, &enc); err != nil {
				t.Fatal(err)
			}
			tt, err := wire.DecodeTaskTimes(enc, data)
			if err != nil {
				t.Fatal(err)
			}
			if wire.Expired(tt.ExpiryTime, now) {
				t.Fatalf("%s: an expired task is left", tb)
			}
			live[tb]++
		}
		rows.Close()
	}
	// The demo seeds 20×200×40% + 10×50 live v1 tasks and 8×2×100×50% in v2.
	if live[store.V1] != 20*80+10*50 || live[store.V2] != 8*2*50 {
		t.Errorf("live tasks left: v1 %d, v2 %d; want %d, %d", live[store.V1], live[store.V2], 20*80+10*50, 8*2*50)
	}
}

// TestBadRowsExitStatus: a corrupted queue blob and a corrupted task are
// kept and named, every other queue is processed, and the exit status is 3.
func TestBadRowsExitStatus(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.db")
	ctx := context.Background()
	db, err := sqlstore.Open(ctx, path, sqlstore.Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Setup(ctx); err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	if _, err := seed.Write(ctx, db, seed.Spec{Queues: 5, TasksPerQueue: 10, Expired: 1, IdleAge: 72 * time.Hour, Now: now}); err != nil {
		t.Fatal(err)
	}
	badQ := wire.QueueID(seed.DefaultNamespace, "seed-0", wire.TaskTypeActivity, 0)
	badT := wire.QueueID(seed.DefaultNamespace, "seed-1", wire.TaskTypeActivity, 0)
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{"UPDATE task_queues SET data = ? WHERE task_queue_id = ?", []any{[]byte{0x12, 0x7f}, badQ}},
		{"UPDATE tasks SET data_encoding = 'Json' WHERE task_queue_id = ? AND task_id = 1", []any{badT}},
	} {
		if _, err := testdb.SQL(t, db).Exec(q.sql, q.args...); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()

	code, out, errOut := runMain("run", "--db", path, "--now", now.Format(time.RFC3339), "--progress", "never")
	if code != cli.ExitBadRows {
		t.Fatalf("exit %d, want %d\n%s\n%s", code, cli.ExitBadRows, out, errOut)
	}
	for _, want := range []string{"bad rows: 2", "v1 queue ", "v1 task ", `unknown data_encoding "Json"`} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	for _, want := range []string{"bad queue row", "bad task row"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("log lacks %q:\n%s", want, errOut)
		}
	}
	// Three healthy queues and the bad-blob queue's tasks are processed:
	// 40 tasks and 3 queues deleted.
	if !strings.Contains(out, "deleted 3\n") || !strings.Contains(out, "deleted 40\n") {
		t.Errorf("want 3 queues and 40 tasks deleted:\n%s", out)
	}
}
