package scavenger_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tqscavenger/tqscavenger/internal/testdb"
	"github.com/tqscavenger/tqscavenger/scavenger"
	"github.com/tqscavenger/tqscavenger/seed"
	"github.com/tqscavenger/tqscavenger/sqlstore"
	"github.com/tqscavenger/tqscavenger/store"
)

// TestQueuesCountAsTheyFinishInAPage: the queues of a page scanned together
// count as processed as the scan passes each, not all at the page's end,
// so progress shown while a page runs is true.
func TestQueuesCountAsTheyFinishInAPage(t *testing.T) {
	db := testdb.Open(t, sqlstore.SQLite)
	const queues, tasks = 100, 10
	mustSeed(t, db, seed.Spec{Queues: queues, TasksPerQueue: tasks, Expired: 1, IdleAge: 72 * time.Hour})
	cfg := baseConfig()
	// One page of 100 queues, read 50 tasks (5 queues) per statement.
	cfg.TaskBatchSize = 50
	var (
		s     *scavenger.Scavenger
		scans atomic.Int64
		mid   = make(chan scavenger.Stats, 1)
	)
	cfg.Middleware = []store.Middleware{hooked(func(_ context.Context, c call) error {
		if c.op == "scan" && scans.Add(1) == 6 {
			mid <- s.Stats() // five batches of the page are behind
		}
		return nil
	})}
	s = scavenger.New(db, cfg)
	if st := s.Stats(); st.ListingDone || st.QueuesProcessed != 0 {
		t.Fatalf("before the pass: %+v", st)
	}
	end, err := s.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var st scavenger.Stats
	select {
	case st = <-mid:
	default:
		t.Fatalf("the pass made %d scans, want more than 5 (one page of %d queues in batches of 50)", scans.Load(), queues)
	}
	// After five batches of 50 rows, 24 queues are behind the scan (the
	// 25th's last row was read but nothing after it). A queue counts once
	// its delete has returned; where the store shares commits a window
	// keeps up to two deletes running while it scans on, and then the
	// first three batches' deletes have: 14 to 24 queues count.
	if st.QueuesProcessed < 14 || st.QueuesProcessed > 24 {
		t.Errorf("mid-page: %d queues processed, want the ones the scan passed whose deletes returned (14 to 24 of %d)", st.QueuesProcessed, queues)
	}
	if st.QueuesDeleted != 0 {
		t.Errorf("mid-page: %d queues deleted, want 0 (the page deletes its empty queues at its end)", st.QueuesDeleted)
	}
	if st.TasksDeleted < st.QueuesProcessed*tasks {
		t.Errorf("mid-page: %d tasks deleted for %d queues processed of %d tasks each", st.TasksDeleted, st.QueuesProcessed, tasks)
	}
	if end.QueuesProcessed != queues || end.QueuesDeleted != queues || !end.ListingDone {
		t.Errorf("at the end: %d processed, %d deleted, listing done %v; want %d, %d, true", end.QueuesProcessed, end.QueuesDeleted, end.ListingDone, queues, queues)
	}
}
