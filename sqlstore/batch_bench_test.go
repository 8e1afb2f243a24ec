package sqlstore_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/tqscavenger/tqscavenger/internal/testdb"
	"github.com/tqscavenger/tqscavenger/sqlstore"
	"github.com/tqscavenger/tqscavenger/store"
)

// BenchmarkDeleteQueues measures what the range_id fence costs: a batch of
// 1,000 idle queue rows deleted with DeleteQueues (each row only if its
// range_id is still the one read) against the same rows deleted as one
// key range with no fence, the form of the benchmark's raw bound. The rows
// are inserted in random key order before each batch (not timed), as a
// Temporal cluster creates queues, beside 20,000 others that stay; the
// batch is all the rows of its key range, as on a page of idle queues: the
// best case for MySQL's range form of the fenced delete.
//
//	TQS_TEST_POSTGRES=… TQS_TEST_MYSQL=… go test -run '^$' -bench DeleteQueues ./sqlstore
func BenchmarkDeleteQueues(b *testing.B) {
	const batch, others = 1000, 20_000
	for _, e := range testdb.Engines {
		b.Run(string(e), func(b *testing.B) {
			db := testdb.Open(b, e)
			rng := rand.New(rand.NewPCG(1, 1))
			insertQueues(b, db, "task_queues", randomKeys(rng, others, 1<<31))
			for _, form := range []string{"fenced", "unfenced-range"} {
				b.Run(form, func(b *testing.B) {
					for range b.N {
						b.StopTimer()
						keys := randomKeys(rng, batch, 0)
						insertQueues(b, db, "task_queues", keys)
						slices.SortFunc(keys, store.QueueKey.Compare)
						b.StartTimer()
						var n int64
						if form == "fenced" {
							fences := make([]store.QueueFence, len(keys))
							for i, k := range keys {
								fences[i] = store.QueueFence{QueueKey: k, RangeID: 1}
							}
							var err error
							if n, err = db.DeleteQueues(ctx, store.V1, fences); err != nil {
								b.Fatal(err)
							}
						} else {
							lo, hi := keys[0], keys[len(keys)-1]
							p := db.Placeholder
							n, _ = testdb.Exec(b, db, "DELETE FROM task_queues WHERE (range_hash > "+p(1)+" OR (range_hash = "+p(2)+" AND task_queue_id >= "+p(3)+
								")) AND (range_hash < "+p(4)+" OR (range_hash = "+p(5)+" AND task_queue_id <= "+p(6)+"))",
								int64(lo.RangeHash), int64(lo.RangeHash), lo.ID, int64(hi.RangeHash), int64(hi.RangeHash), hi.ID).RowsAffected()
						}
						if n != int64(len(keys)) {
							b.Fatalf("deleted %d rows, want %d", n, len(keys))
						}
					}
					b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*batch), "ns/row")
				})
			}
		})
	}
}

// randomKeys returns n random v1 queue keys, their range_hash at least
// minHash and below minHash+2^31.
func randomKeys(rng *rand.Rand, n int, minHash uint32) []store.QueueKey {
	keys := make([]store.QueueKey, n)
	for i := range keys {
		id := make([]byte, 40)
		for j := range id {
			id[j] = byte(rng.Uint32())
		}
		keys[i] = store.QueueKey{RangeHash: minHash + rng.Uint32()>>1, ID: id}
	}
	return keys
}

// insertQueues inserts queue rows into table at range_id 1, in the order
// given, with multi-row INSERTs: faster than CreateQueue for big tables.
func insertQueues(tb testing.TB, db *sqlstore.DB, table string, keys []store.QueueKey) {
	tb.Helper()
	for start := 0; start < len(keys); start += 500 {
		var b strings.Builder
		var args []any
		fmt.Fprintf(&b, "INSERT INTO %s (range_hash, task_queue_id, range_id, data, data_encoding) VALUES ", table)
		for i, k := range keys[start:min(len(keys), start+500)] {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString("(")
			for j, v := range []any{int64(k.RangeHash), k.ID, int64(1), []byte("blob"), "Proto3"} {
				if j > 0 {
					b.WriteString(", ")
				}
				args = append(args, v)
				b.WriteString(db.Placeholder(len(args)))
			}
			b.WriteString(")")
		}
		testdb.Exec(tb, db, b.String(), args...)
	}
}
