package sqlstore_test

// The conformance suite of package store (package storetest) against
// SQLite, PostgreSQL and MariaDB, each test on a fresh database from
// package testdb. The suite expects the same of every engine; where one
// legitimately differs (statement counts of the limited delete) the
// options say so.

import (
	"context"
	"testing"

	"github.com/tqscavenger/tqscavenger/internal/testdb"
	"github.com/tqscavenger/tqscavenger/sqlstore"
	"github.com/tqscavenger/tqscavenger/store/storetest"
)

// TestConformance runs the suite on every engine, the engines in
// parallel: whole on stores made by Open, and its queue-row test again on
// stores made by New over a connector built as a caller builds one (see
// testdb.Connector), where MySQL's connector does not report found rows
// and an unchanged row's compare-and-set must succeed all the same.
func TestConformance(t *testing.T) {
	for _, e := range testdb.Engines {
		t.Run(string(e), func(t *testing.T) {
			t.Parallel()
			t.Run("Open", func(t *testing.T) {
				storetest.Run(t, func(t *testing.T) storetest.Harness {
					db := testdb.Open(t, e)
					h := harness(db)
					h.DropTable = func(ctx context.Context, table string) error {
						// On a pool of its own, as an operator would: behind
						// the store's back (see testdb.SQL).
						_, err := testdb.SQL(t, db).ExecContext(ctx, "DROP TABLE "+table)
						return err
					}
					return h
				}, conformanceOptions(e))
			})
			t.Run("New", func(t *testing.T) {
				opts := conformanceOptions(e)
				opts.Only = []string{"QueueRows"}
				storetest.Run(t, func(t *testing.T) storetest.Harness {
					return harness(testdb.OpenNew(t, testdb.DSN(t, e), sqlstore.Options{}))
				}, opts)
			})
		})
	}
}

// harness is db under test, its own writer, with its statement count.
func harness(db *sqlstore.DB) storetest.Harness {
	return storetest.Harness{
		Store:      db,
		Writer:     db,
		Statements: func() int64 { return db.Stats().Statements },
	}
}

// conformanceOptions are the statement counts of engine e: the same on
// every engine but for the limited delete.
func conformanceOptions(e sqlstore.Engine) storetest.Options {
	o := storetest.Options{
		LimitedDeleteStatements: 1,
		// The fence, one INSERT per 200 tasks, the commit.
		AppendStatements: func(n int) int64 { return int64(2 + (n+199)/200) },
		// One DELETE per 500 keys, none for no keys.
		DeleteKeysStatements: func(n int) int64 { return int64((n + 499) / 500) },
	}
	if e == sqlstore.SQLite {
		o.LimitedDeleteStatements = 2 // a probe for the limit-th key, then a range delete
	}
	return o
}
