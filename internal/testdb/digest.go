package testdb

import (
	"crypto/sha256"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/tqscavenger/tqscavenger/sqlstore"
)

// Digest hashes every row of the four task tables of db (keys, range_id
// and blobs), so that two databases compare equal exactly when they hold
// the same rows. It reads with plain SQL, not through the store.
func Digest(t testing.TB, db *sqlstore.DB) string {
	t.Helper()
	var lines []string
	for _, q := range []string{
		"SELECT 'q1', range_hash, task_queue_id, range_id, 0, data FROM task_queues",
		"SELECT 'q2', range_hash, task_queue_id, range_id, 0, data FROM task_queues_v2",
		"SELECT 't1', range_hash, task_queue_id, 0, task_id, data FROM tasks",
		"SELECT 't2', range_hash, task_queue_id, pass, task_id, data FROM tasks_v2",
	} {
		rows, err := SQL(t, db).Query(q)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var (
				tab      string
				rh, a, b int64
				id, data []byte
			)
			if err := rows.Scan(&tab, &rh, &id, &a, &b, &data); err != nil {
				t.Fatal(err)
			}
			lines = append(lines, fmt.Sprintf("%s %d %x %d %d %x", tab, rh, id, a, b, data))
		}
		if err := rows.Close(); err != nil {
			t.Fatal(err)
		}
	}
	slices.Sort(lines)
	sum := sha256.Sum256([]byte(strings.Join(lines, "\n")))
	return fmt.Sprintf("%d rows %x", len(lines), sum[:8])
}
