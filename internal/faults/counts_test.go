package faults

import (
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tqscavenger/tqscavenger/internal/testdb"
	"github.com/tqscavenger/tqscavenger/scavenger"
	"github.com/tqscavenger/tqscavenger/sqlstore"
)

// quiet is a logger for passes whose logs the tests do not read.
var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// TestCountsWithLostConnections runs a pass over a few thousand expired
// tasks while its connections are lost mid-statement: cut by a proxy when
// the server answers a DELETE it ran (the client never hears of it), or
// ended by the server (pg_terminate_backend, KILL) while deletes run.
//
// Invariant: what the pass counts as deleted plus what it counts as
// unknown is at least what went (rows counted before and after), for
// tasks and queue rows; nothing live is deleted and no orphan is made;
// and a rerun without faults finishes the job.
func TestCountsWithLostConnections(t *testing.T) {
	for _, e := range servers {
		for _, how := range []string{"answers cut", "sessions killed"} {
			t.Run(string(e)+"/"+how, func(t *testing.T) {
				t.Parallel()
				db := testdb.Open(t, e)
				w := workload{dead: 60, live: 10, tasksPerQueue: 50}
				before := seedWorkload(t, db, w)
				dsn := dsnOf(db)
				switch how {
				case "answers cut":
					px := newProxy(t, db.DSN().URL.Host)
					st := testdb.OpenDSN(t, px.via(dsn))
					px.cutDeletes(3, 30)
					runCounted(t, db, st, before, w, func() int64 { px.cutDeletes(0, 0); return px.severed.Load() })
				case "sessions killed":
					app := fmt.Sprintf("tqs-faults-%d", time.Now().UnixNano())
					if e == sqlstore.Postgres {
						u, _ := url.Parse(dsn)
						q := u.Query()
						q.Set("application_name", app)
						u.RawQuery = q.Encode()
						dsn = u.String()
					}
					st := testdb.OpenDSN(t, dsn)
					var kills atomic.Int64
					stop := make(chan struct{})
					var wg sync.WaitGroup
					wg.Add(1)
					go func() {
						defer wg.Done()
						killDeletes(t, db, app, stop, &kills)
					}()
					runCounted(t, db, st, before, w, func() int64 { close(stop); wg.Wait(); return kills.Load() })
				}
			})
		}
	}
}

// runCounted runs a pass on st, whose connections faults break, and checks
// its counts against db's rows; then a clean pass on db. faults ends the
// faults and says how many there were.
func runCounted(t *testing.T, db, st *sqlstore.DB, before state, w workload, faults func() int64) {
	t.Helper()
	cfg := scavenger.Config{Pace: scavenger.Pace{ListPageSize: 5, TaskBatchSize: 100, RetryInitial: 5 * time.Millisecond, RetryMax: 50 * time.Millisecond, RetryFor: 30 * time.Second}, Hooks: scavenger.Hooks{Logger: quiet}}
	stats, err := scavenger.New(st, cfg).Run(ctx)
	n := faults()
	direct := db
	after := snapshot(t, direct)
	tasksGone, queuesGone := checkSafe(t, before, after)
	t.Logf("%d faults; pass %s (%v): tasks %d deleted + %d unknown, %d went; queues %d deleted + %d unknown, %d went; %d retries",
		n, stats.Outcome, err, stats.TasksDeleted, stats.TasksUnknown, tasksGone, stats.QueuesDeleted, stats.QueuesUnknown, queuesGone, stats.Retries)
	if n == 0 {
		t.Fatal("no fault hit the pass: the test proves nothing")
	}
	if stats.TasksDeleted+stats.TasksUnknown < int64(tasksGone) {
		t.Errorf("tasks: %d deleted + %d unknown < %d that went: the pass under-reports", stats.TasksDeleted, stats.TasksUnknown, tasksGone)
	}
	if stats.QueuesDeleted+stats.QueuesUnknown < int64(queuesGone) {
		t.Errorf("queues: %d deleted + %d unknown < %d that went: the pass under-reports", stats.QueuesDeleted, stats.QueuesUnknown, queuesGone)
	}
	// A rerun without faults finishes the job.
	cfg.ListPageSize, cfg.TaskBatchSize = 0, 0
	if stats, err := scavenger.New(direct, cfg).Run(ctx); err != nil || stats.Outcome != scavenger.Completed {
		t.Fatalf("rerun: %s, %v", stats.Outcome, err)
	}
	final := snapshot(t, direct)
	checkSafe(t, before, final)
	checkFinished(t, final, w)
}

// killDeletes ends, until stop is closed, every session of db's database
// (PostgreSQL: of application app) that runs a DELETE, and counts them.
func killDeletes(t *testing.T, db *sqlstore.DB, app string, stop <-chan struct{}, kills *atomic.Int64) {
	h := testdb.SQL(t, db)
	for {
		select {
		case <-stop:
			return
		default:
		}
		if db.Engine() == sqlstore.Postgres {
			var n int64
			if err := h.QueryRowContext(ctx, "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity"+
				" WHERE application_name = $1 AND state = 'active' AND query ILIKE 'DELETE%'", app).Scan(&n); err == nil {
				kills.Add(n)
			}
			continue
		}
		rows, err := h.QueryContext(ctx, "SELECT id FROM information_schema.processlist WHERE db = DATABASE() AND id <> CONNECTION_ID() AND info LIKE 'DELETE%'")
		if err != nil {
			continue
		}
		var ids []int64
		for rows.Next() {
			var id int64
			if rows.Scan(&id) == nil {
				ids = append(ids, id)
			}
		}
		rows.Close()
		for _, id := range ids {
			if _, err := h.ExecContext(ctx, fmt.Sprintf("KILL %d", id)); err == nil {
				kills.Add(1)
			}
		}
	}
}
