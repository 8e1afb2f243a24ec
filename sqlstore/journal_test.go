package sqlstore_test

import (
	"path/filepath"
	"testing"

	"github.com/tqscavenger/tqscavenger/internal/testdb"
	"github.com/tqscavenger/tqscavenger/sqlstore"
)

// TestJournalMode: a file the store creates is in WAL; a file switched to
// the rollback journal stays in it (the store does not change a user's
// journal mode) and says so; servers have none.
func TestJournalMode(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.db")
	db, err := sqlstore.Open(ctx, "sqlite:"+path, sqlstore.Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	if mode, err := db.JournalMode(ctx); err != nil || mode != "wal" {
		t.Fatalf("created file: %q, %v; want wal", mode, err)
	}
	if _, err := testdb.SQL(t, db).Exec("PRAGMA journal_mode = DELETE"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	db, err = sqlstore.Open(ctx, "sqlite:"+path, sqlstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if mode, err := db.JournalMode(ctx); err != nil || mode != "delete" {
		t.Fatalf("file in a rollback journal: %q, %v; want delete", mode, err)
	}
	for _, e := range []sqlstore.Engine{sqlstore.Postgres, sqlstore.MySQL} {
		t.Run(string(e), func(t *testing.T) {
			if mode, err := testdb.Open(t, e).JournalMode(ctx); err != nil || mode != "" {
				t.Fatalf("%q, %v; want none", mode, err)
			}
		})
	}
}
