package bench

import (
	"context"
	"testing"

	"github.com/tqscavenger/tqscavenger/internal/testdb"
	"github.com/tqscavenger/tqscavenger/sqlstore"
)

// TestMatchingSessions: the live workload's MySQL sessions read
// committed, as Temporal's, whatever the server's default.
func TestMatchingSessions(t *testing.T) {
	ctx := context.Background()
	dsn := testdb.DSN(t, sqlstore.MySQL)
	db, _, err := openMatchingSQL(ctx, dsn, sqlstore.Options{MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var iso string
	// MySQL 8 names the variable transaction_isolation; MariaDB before
	// 11.1, tx_isolation.
	if err := db.QueryRowContext(ctx, "SELECT @@transaction_isolation").Scan(&iso); err != nil {
		if err := db.QueryRowContext(ctx, "SELECT @@tx_isolation").Scan(&iso); err != nil {
			t.Fatal(err)
		}
	}
	if iso != "READ-COMMITTED" {
		t.Errorf("the workload's sessions are %s, want READ-COMMITTED", iso)
	}
}
