package cli_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tqscavenger/tqscavenger/internal/cli"
	"github.com/tqscavenger/tqscavenger/internal/fixture"
	"github.com/tqscavenger/tqscavenger/internal/testdb"
	"github.com/tqscavenger/tqscavenger/sqlstore"
)

// TestClosedWorkflowsRefusalExits2: --closed-workflows on a database whose
// history shard count cannot be proven (here: no cluster_metadata_info
// row) deletes nothing and exits 2 with the reason; with --compat=temporal
// it is refused as bad input.
func TestClosedWorkflowsRefusalExits2(t *testing.T) {
	path := filepath.Join(t.TempDir(), "closed.db")
	db, err := sqlstore.Open(context.Background(), path, sqlstore.Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Setup(context.Background()); err != nil {
		t.Fatal(err)
	}
	testdb.CreateHistoryTables(t, db)
	testdb.InsertShards(t, db, 4)
	db.Close()

	code, out, errOut := runMain("run", "--db", path, "--closed-workflows", "--progress", "never")
	if code != cli.ExitUsage || !strings.Contains(out+errOut, "cluster_metadata_info has no row") {
		t.Fatalf("exit %d, want %d naming the missing row\n%s\n%s", code, cli.ExitUsage, out, errOut)
	}
	code, out, errOut = runMain("run", "--db", path, "--closed-workflows", "--compat=temporal", "--progress", "never")
	if code != cli.ExitUsage || !strings.Contains(out+errOut, "--compat=temporal") {
		t.Fatalf("with --compat=temporal: exit %d, want %d\n%s\n%s", code, cli.ExitUsage, out, errOut)
	}
	code, out, errOut = runMain("run", "--db", path, "--closed-global", "--progress", "never")
	if code != cli.ExitUsage {
		t.Fatalf("--closed-global alone: exit %d, want %d\n%s\n%s", code, cli.ExitUsage, out, errOut)
	}
}

// TestClosedWorkflowsForgedCountExits: issue 39's finding 1 through the
// command, on temporal-1.32-aged72h with its history shard count forged
// from 1 to 2: --closed-workflows completes (exit 0), deletes no task of a
// run that is not COMPLETED and reports the misses as run_not_found;
// --closed-deleted-runs refuses the pass (exit 2) and deletes nothing.
func TestClosedWorkflowsForgedCountExits(t *testing.T) {
	path := fixture.Path(t, "temporal-1.32-aged72h")
	db, err := sqlstore.Open(context.Background(), "sqlite:"+path, sqlstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	h := testdb.SQL(t, db)
	for _, q := range []string{
		"UPDATE cluster_metadata_info SET data = X'0A066163746976651002' || substr(data, 11)",
		"INSERT INTO shards SELECT 2, range_id, data, data_encoding FROM shards WHERE shard_id = 1",
	} {
		if _, err := h.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	count := func() (n int) {
		if err := h.QueryRow("SELECT COUNT(*) FROM tasks").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := count()
	db.Close()

	code, out, errOut := runMain("run", "--db", path, "--closed-workflows", "--closed-deleted-runs", "--progress", "never")
	if code != cli.ExitUsage || !strings.Contains(errOut, "shard") {
		t.Fatalf("--closed-deleted-runs: exit %d, want %d naming the shard count\n%s\n%s", code, cli.ExitUsage, out, errOut)
	}
	db, err = sqlstore.Open(context.Background(), "sqlite:"+path, sqlstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	h = testdb.SQL(t, db)
	if n := count(); n != before {
		t.Fatalf("the refused pass left %d tasks of %d", n, before)
	}
	db.Close()

	code, out, errOut = runMain("run", "--db", path, "--closed-workflows", "--progress", "never", "--output", "json")
	if code != cli.ExitOK {
		t.Fatalf("--closed-workflows: exit %d, want 0\n%s\n%s", code, out, errOut)
	}
	var st struct {
		Outcome     string `json:"outcome"`
		RunNotFound int64  `json:"tasks_run_not_found"`
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if st.Outcome != "completed" || st.RunNotFound == 0 {
		t.Fatalf("outcome %q, run_not_found %d: want completed with the misses counted\n%s", st.Outcome, st.RunNotFound, out)
	}
	if !strings.Contains(errOut, "--closed-deleted-runs") {
		t.Errorf("no log line names --closed-deleted-runs:\n%s", errOut)
	}
}
