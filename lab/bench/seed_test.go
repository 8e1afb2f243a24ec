package bench

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/tqscavenger/tqscavenger/internal/testdb"
	"github.com/tqscavenger/tqscavenger/seed"
	"github.com/tqscavenger/tqscavenger/sqlstore"
)

// TestSeedLikePackageSeed checks that the bulk seeder (COPY on
// PostgreSQL, multi-row INSERTs elsewhere) writes exactly the rows
// seed.Write writes for the same spec.
func TestSeedLikePackageSeed(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	for _, e := range testdb.Engines {
		for _, c := range []Case{
			{Name: "mixed", Queues: 7, TasksPerQueue: 9, Expired: 0.4, NoExpiry: 0.3, Layout: seed.LiveFirst},
			{Name: "expired", Queues: 3, TasksPerQueue: 2500, Expired: 1, Layout: seed.ExpiredFirst},
			{Name: "empty", Queues: 1200},
		} {
			t.Run(string(e)+"/"+c.Name, func(t *testing.T) {
				ours, theirs := testdb.DSN(t, e), testdb.DSN(t, e)
				if err := seedDatabase(ctx, ours, c, now); err != nil {
					t.Fatal(err)
				}
				db, err := sqlstore.Open(ctx, theirs, sqlstore.Options{})
				if err != nil {
					t.Fatal(err)
				}
				_, err = seed.Write(ctx, db, seed.Spec{NamePrefix: namePrefix, Queues: c.Queues, TasksPerQueue: c.TasksPerQueue,
					Expired: c.Expired, NoExpiry: c.NoExpiry, Layout: c.Layout, IdleAge: idleAge, Now: now})
				db.Close()
				if err != nil {
					t.Fatal(err)
				}
				for _, q := range []string{
					"SELECT range_hash, task_queue_id, range_id, data, data_encoding FROM task_queues ORDER BY range_hash, task_queue_id",
					"SELECT range_hash, task_queue_id, task_id, data, data_encoding FROM tasks ORDER BY range_hash, task_queue_id, task_id",
				} {
					a, b := dump(t, ours, q), dump(t, theirs, q)
					if len(a) != len(b) {
						t.Errorf("%s: bench seeder wrote %d rows, seed.Write %d", q, len(a), len(b))
					} else if i := firstDiff(a, b); i >= 0 {
						t.Errorf("%s: row %d:\nbench seeder: %s\nseed.Write:   %s", q, i, a[i], b[i])
					}
				}
			})
		}
	}
}

func firstDiff(a, b []string) int {
	for i := range a {
		if a[i] != b[i] {
			return i
		}
	}
	return -1
}

// dump returns every row of q, formatted.
func dump(t *testing.T, dsn, q string) []string {
	t.Helper()
	db, _, err := openSQL(context.Background(), dsn, sqlstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(q)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var (
			a, c int64
			b, d []byte
			e    string
		)
		if err := rows.Scan(&a, &b, &c, &d, &e); err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%d %x %d %x %s", a, b, c, d, e))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
