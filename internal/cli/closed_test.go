package cli_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tqscavenger/tqscavenger/internal/cli"
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
