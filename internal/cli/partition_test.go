package cli_test

import (
	"context"
	"testing"

	"github.com/tqscavenger/tqscavenger/internal/cli"
	"github.com/tqscavenger/tqscavenger/internal/testdb"
	"github.com/tqscavenger/tqscavenger/scavenger"
	"github.com/tqscavenger/tqscavenger/sqlstore"
)

// TestBadPartition: every malformed or out-of-range --partition, and
// --fresh without a checkpoint, is bad input (status 2) that says what is
// wanted, before the database is opened.
func TestBadPartition(t *testing.T) {
	for _, c := range []struct{ arg, hint string }{
		{"4/4", "I must be 0 to N-1 (3)"},
		{"-1/3", "I must be 0 to N-1"},
		{"0/0", "N must be 1 to 65536"},
		{"1/70000", "N must be 1 to 65536"},
		{"3", "want I/N"},
		{"a/4", "must be integers"},
		{"1/2/3", "must be integers"},
	} {
		checkUsageError(t, []string{"run", "--db", "sqlite:/nonexistent/x.db", "--partition", c.arg}, c.hint, tqs)
		checkUsageError(t, []string{"serve", "--db", "sqlite:/nonexistent/x.db", "--partition", c.arg}, c.hint, tqs)
	}
	checkUsageError(t, []string{"run", "--db", "sqlite:/nonexistent/x.db", "--fresh"}, "--fresh and --checkpoint-interval need --checkpoint FILE", tqs)
}

// TestPartitionLocked: a partition whose range overlaps a held one exits
// with status 5 and names its partition; a disjoint one runs.
func TestPartitionLocked(t *testing.T) {
	db := testdb.Open(t, sqlstore.SQLite)
	l, err := db.LockRange(context.Background(), scavenger.Partition{Index: 0, Count: 4}.Range(), false)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Unlock()
	checkError(t, []string{"run", "--db", db.DSN().String(), "--partition", "1/8"}, "another tqscavenger is running against partition 1/8 of this database", cli.ExitLocked, tqs)
	if code, _, errOut := tqs("run", "--db", db.DSN().String(), "--partition", "2/8", "--progress", "never"); code != 0 {
		t.Errorf("a disjoint partition: exit %d: %s", code, errOut)
	}
}
