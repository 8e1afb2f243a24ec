package scavenger_test

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/tqscavenger/tqscavenger/internal/testdb"
	"github.com/tqscavenger/tqscavenger/scavenger"
	"github.com/tqscavenger/tqscavenger/seed"
	"github.com/tqscavenger/tqscavenger/sqlstore"
	"github.com/tqscavenger/tqscavenger/store"
	"github.com/tqscavenger/tqscavenger/wire"
)

func TestParsePartition(t *testing.T) {
	for _, c := range []struct {
		in      string
		want    scavenger.Partition
		wantErr bool
	}{
		{"0/1", scavenger.Partition{Index: 0, Count: 1}, false},
		{"3/4", scavenger.Partition{Index: 3, Count: 4}, false},
		{"0/65536", scavenger.Partition{Index: 0, Count: 65536}, false},
		{" 0/2", scavenger.Partition{}, true}, // issue 25: a stray blank is a typo to show
		{"+0/2", scavenger.Partition{}, true},
		{"4/4", scavenger.Partition{}, true},
		{"-1/4", scavenger.Partition{}, true},
		{"0/0", scavenger.Partition{}, true},
		{"0/65537", scavenger.Partition{}, true},
		{"1", scavenger.Partition{}, true},
		{"a/b", scavenger.Partition{}, true},
		{"1/2/3", scavenger.Partition{}, true},
		{"", scavenger.Partition{}, true},
	} {
		got, err := scavenger.ParsePartition(c.in)
		if (err != nil) != c.wantErr || (!c.wantErr && got != c.want) {
			t.Errorf("ParsePartition(%q) = %v, %v; want %v, error %t", c.in, got, err, c.want, c.wantErr)
		}
		if err != nil && !errors.Is(err, scavenger.ErrBadPartition) {
			t.Errorf("ParsePartition(%q): %v does not wrap ErrBadPartition", c.in, err)
		}
	}
}

// TestPartitionRanges: for every N up to 1000 (and a few large ones), the
// ranges of 0..N-1 start at 0, end at 2³²-1, meet without gap or overlap,
// and differ in size by at most one hash.
func TestPartitionRanges(t *testing.T) {
	ns := []int{65536, 65535, 4097}
	for n := 1; n <= 1000; n++ {
		ns = append(ns, n)
	}
	for _, n := range ns {
		var next uint64
		minSize, maxSize := uint64(math.MaxUint64), uint64(0)
		for i := 0; i < n; i++ {
			r := scavenger.Partition{Index: i, Count: n}.Range()
			if uint64(r.Lo) != next || r.Hi < r.Lo {
				t.Fatalf("%d/%d = %s: want it to start at %d", i, n, r, next)
			}
			size := uint64(r.Hi) - uint64(r.Lo) + 1
			minSize, maxSize = min(minSize, size), max(maxSize, size)
			next = uint64(r.Hi) + 1
		}
		if next != 1<<32 || maxSize-minSize > 1 {
			t.Fatalf("N=%d: ends at %d (want 2^32), sizes %d..%d", n, next, minSize, maxSize)
		}
	}
	if r := (scavenger.Partition{}).Range(); !r.Full() {
		t.Fatalf("zero partition = %s, want the full range", r)
	}
}

// seedNow pins the seeded data's clock, so that every copy of the data set
// is the same bytes and digests compare.
var seedNow = time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)

// seedPartitioned writes a small data set over the whole hash space: dead
// and live queues of both table versions, queues with several subqueues
// (whose task rows hash elsewhere than their queue row), orphans, and
// queue rows, tasks and orphans moved to the edge hashes 0 and 2³²-1. It
// returns the number of queue rows per table and their hashes.
func seedPartitioned(t *testing.T, db *sqlstore.DB) map[store.Table][]uint32 {
	t.Helper()
	ctx := context.Background()
	specs := []seed.Spec{
		{NamePrefix: "dead", Queues: 12, TasksPerQueue: 6, Expired: 1, IdleAge: 72 * time.Hour},
		{NamePrefix: "live", Queues: 6, TasksPerQueue: 6, Expired: 0.5, NoExpiry: 0.5},
		{NamePrefix: "multi", Queues: 4, TasksPerQueue: 4, Subqueues: 3, Expired: 1, IdleAge: 72 * time.Hour},
		{NamePrefix: "orphan", Queues: 5, TasksPerQueue: 4, Expired: 0.5, NoExpiry: 0.5, IdleAge: 72 * time.Hour},
		{NamePrefix: "edge", Queues: 6, TasksPerQueue: 4, Expired: 0.75, NoExpiry: 0.25, IdleAge: 72 * time.Hour},
		{Table: store.V2, NamePrefix: "dead2", Queues: 6, TasksPerQueue: 5, Expired: 1, IdleAge: 72 * time.Hour},
		{Table: store.V2, NamePrefix: "live2", Queues: 3, TasksPerQueue: 5, Expired: 0.4, NoExpiry: 0.6},
		{Table: store.V2, NamePrefix: "edge2", Queues: 2, TasksPerQueue: 3, Expired: 1, IdleAge: 72 * time.Hour},
	}
	for _, s := range specs {
		s.Now = seedNow
		if _, err := seed.Write(ctx, db, s); err != nil {
			t.Fatal(err)
		}
	}
	id := func(name string) []byte { return wire.QueueID(seed.DefaultNamespace, name, wire.TaskTypeActivity, 0) }
	move := func(tb store.Table, name string, to uint32) {
		for _, tab := range []string{tb.QueueTable(), tb.TaskTable()} {
			testdb.Exec(t, db, "UPDATE "+tab+" SET range_hash = "+fmt.Sprint(to)+" WHERE task_queue_id = "+hexLit(db, id(name)))
		}
	}
	// Orphans: the queue rows go, their tasks stay; two of them at the
	// edges.
	for i := 0; i < 5; i++ {
		testdb.Exec(t, db, "DELETE FROM task_queues WHERE task_queue_id = "+hexLit(db, id(fmt.Sprintf("orphan-%d", i))))
	}
	move(store.V1, "orphan-0", 0)
	move(store.V1, "orphan-1", math.MaxUint32)
	for i, h := range []uint32{0, 0, 1, math.MaxUint32, math.MaxUint32, math.MaxUint32 - 1} {
		move(store.V1, fmt.Sprintf("edge-%d", i), h)
	}
	move(store.V2, "edge2-0", 0)
	move(store.V2, "edge2-1", math.MaxUint32)

	out := map[store.Table][]uint32{}
	for _, tb := range []store.Table{store.V1, store.V2} {
		rows, err := testdb.SQL(t, db).Query("SELECT range_hash FROM " + tb.QueueTable())
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var h int64
			if err := rows.Scan(&h); err != nil {
				t.Fatal(err)
			}
			out[tb] = append(out[tb], uint32(h))
		}
		rows.Close()
	}
	return out
}

// hexLit writes b as a blob literal of db's engine.
func hexLit(db *sqlstore.DB, b []byte) string {
	if db.Engine() == sqlstore.Postgres {
		return `'\x` + hex.EncodeToString(b) + `'::bytea`
	}
	return "X'" + hex.EncodeToString(b) + "'"
}

func digest(t *testing.T, db *sqlstore.DB) string { return testdb.Digest(t, db) }

func partitionConfig(p scavenger.Partition) scavenger.Config {
	cfg := baseConfig()
	cfg.Partition = p
	cfg.ListPageSize = 3 // pages end inside partitions, and inside the edge hashes
	cfg.TaskBatchSize = 4
	cfg.Workers = 2
	return cfg
}

// TestPartitionsEqualFullPass: on every engine, the partitions 0..N-1 of a
// data set, run one after the other, leave exactly the rows a full pass
// leaves (the digests of all four tables are equal), and each partition
// lists exactly the queue rows whose hash lies in its range, so no queue is
// listed twice or missed; hashes 0 and 2³²-1 (queues, tasks, orphans) are
// in the data set. SQLite runs every N from 1 to 64, the servers a sample.
func TestPartitionsEqualFullPass(t *testing.T) {
	ctx := context.Background()
	for _, e := range testdb.Engines {
		ns := []int{1, 2, 3, 7, 64}
		if e == sqlstore.SQLite {
			ns = nil
			for n := 1; n <= 64; n++ {
				ns = append(ns, n)
			}
		}
		t.Run(string(e), func(t *testing.T) {
			t.Parallel()
			full := testdb.Open(t, e)
			seedPartitioned(t, full)
			before := digest(t, full)
			if st, err := scavenger.New(full, partitionConfig(scavenger.Partition{})).Run(ctx); err != nil || st.Outcome != scavenger.Completed {
				t.Fatalf("full pass: %v %v", st.Outcome, err)
			}
			want := digest(t, full)
			if want == before {
				t.Fatalf("the full pass deleted nothing (%s): the test proves nothing", want)
			}
			for _, n := range ns {
				db := testdb.Open(t, e)
				hashes := seedPartitioned(t, db)
				if got := digest(t, db); got != before {
					t.Fatalf("N=%d: the data set is not the same bytes: %s, want %s", n, got, before)
				}
				for i := 0; i < n; i++ {
					p := scavenger.Partition{Index: i, Count: n}
					st, err := scavenger.New(db, partitionConfig(p)).Run(ctx)
					if err != nil || st.Outcome != scavenger.Completed {
						t.Fatalf("partition %s: %v %v", p, st.Outcome, err)
					}
					r := p.Range()
					for _, tb := range []store.Table{store.V1, store.V2} {
						in := 0
						for _, h := range hashes[tb] {
							if r.Contains(h) {
								in++
							}
						}
						if got := st.Tables[tb].QueuesListed; got != int64(in) {
							t.Fatalf("partition %s %s: listed %d queues, %d lie in %s", p, tb, got, in, r)
						}
					}
				}
				if got := digest(t, db); got != want {
					t.Fatalf("N=%d: partitions leave %s, a full pass %s", n, got, want)
				}
			}
		})
	}
}
