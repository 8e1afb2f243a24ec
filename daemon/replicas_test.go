package daemon_test

import (
	"context"
	"os"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/tqscavenger/tqscavenger/daemon"
	"github.com/tqscavenger/tqscavenger/internal/testdb"
	"github.com/tqscavenger/tqscavenger/scavenger"
	"github.com/tqscavenger/tqscavenger/seed"
	"github.com/tqscavenger/tqscavenger/sqlstore"
	"github.com/tqscavenger/tqscavenger/store"
)

// keepRows turns every delete into one that matched no row, so that a
// real pass, lock and all, leaves the data for the next.
func keepRows(next store.Store) store.Store { return rowKeeper{next} }

type rowKeeper struct{ store.Store } // a test wrapper: only the deletes differ

func (rowKeeper) DeleteTaskSets(context.Context, store.Table, []store.TaskSet) (int64, error) {
	return 0, nil
}

func (rowKeeper) DeleteTasks(context.Context, store.Table, store.QueueKey, store.TaskRange, int) (int64, error) {
	return 0, nil
}

func (rowKeeper) DeleteOrphanTasks(context.Context, store.Table, store.QueueKey, []store.QueueKey, []store.TaskKey) (int64, error) {
	return 0, nil
}

func (rowKeeper) DeleteQueues(context.Context, store.Table, []store.QueueFence) (int64, error) {
	return 0, nil
}

// TestReplicasNeverOverlap runs two daemons, each with its own
// connections, against one PostgreSQL database on a short interval with
// full jitter, and checks from their pass records that no two passes ever
// ran at the same time. TQS_REPLICA_TEST_DURATION (e.g. 60s) lengthens
// the run from its default of 4s.
func TestReplicasNeverOverlap(t *testing.T) {
	// A schema of its own: the lock is per schema on PostgreSQL, so other
	// tests taking it do not disturb this one.
	dsn := testdb.DSN(t, sqlstore.Postgres)
	duration := 4 * time.Second
	if s := os.Getenv("TQS_REPLICA_TEST_DURATION"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatalf("TQS_REPLICA_TEST_DURATION: %v", err)
		}
		duration = d
	}
	ctx := context.Background()
	seedDB := testdb.OpenDSN(t, dsn)
	// keepRows keeps the data, so every pass has the same work to do and
	// lasts long enough (a few hundred statements) for the replicas' ticks
	// to collide. Not a dry run: a dry run takes no lock.
	if _, err := seed.Write(ctx, seedDB, seed.Spec{Queues: 60, TasksPerQueue: 64, Expired: 0.75, NoExpiry: 0.25, IdleAge: 72 * time.Hour}); err != nil {
		t.Fatal(err)
	}

	const replicas = 2
	ds := make([]*daemon.Daemon, replicas)
	for i := range ds {
		d, err := daemon.New(daemon.Config{
			DB:         testdb.OpenDSN(t, dsn),
			Scavenger:  scavenger.Config{Pace: scavenger.Pace{Workers: 4}, Hooks: scavenger.Hooks{Middleware: []store.Middleware{keepRows}}},
			Schedule:   mustEvery(t, 150*time.Millisecond),
			Jitter:     150 * time.Millisecond,
			RunAtStart: true,
			History:    1 << 20,
			Logger:     quiet(),
		})
		if err != nil {
			t.Fatal(err)
		}
		ds[i] = d
	}
	runCtx, cancel := context.WithTimeout(ctx, duration)
	defer cancel()
	var wg sync.WaitGroup
	for _, d := range ds {
		wg.Go(func() {
			if err := d.Run(runCtx); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()

	type span struct {
		replica int
		rec     daemon.PassRecord
	}
	var ran []span
	var skipped, skipErrors, completed [replicas]int
	for i, d := range ds {
		for _, r := range d.Passes() {
			switch r.Outcome {
			case daemon.Skipped:
				// A lock that could not be taken (not held: an error,
				// such as a busy database on a loaded machine) is a skip
				// of its own reason.
				if r.Err == "lock held by another tqscavenger" {
					skipped[i]++
				} else {
					skipErrors[i]++
					t.Logf("replica %d: a pass skipped for a lock error: %s", i, r.Err)
				}
				continue
			case daemon.Completed:
				completed[i]++
			}
			ran = append(ran, span{i, r})
		}
		reg := d.Registry()
		if got, want := metric(t, reg, "tqscavenger_passes_skipped_total", "reason", "lock_held"), float64(skipped[i]); got != want {
			t.Errorf("replica %d: passes_skipped_total{lock_held} = %v, its records say %v", i, got, want)
		}
		if got, want := metric(t, reg, "tqscavenger_passes_skipped_total", "reason", "lock_error"), float64(skipErrors[i]); got != want {
			t.Errorf("replica %d: passes_skipped_total{lock_error} = %v, its records say %v", i, got, want)
		}
	}
	sort.Slice(ran, func(i, j int) bool { return ran[i].rec.Start.Before(ran[j].rec.Start) })
	overlaps := 0
	var busy time.Duration
	for i, s := range ran {
		busy += s.rec.Duration()
		if i > 0 && s.rec.Start.Before(ran[i-1].rec.End) {
			overlaps++
			t.Errorf("replica %d's pass %d (%s–%s) overlaps replica %d's pass %d (%s–%s)",
				s.replica, s.rec.ID, s.rec.Start.Format(time.StampMicro), s.rec.End.Format(time.StampMicro),
				ran[i-1].replica, ran[i-1].rec.ID, ran[i-1].rec.Start.Format(time.StampMicro), ran[i-1].rec.End.Format(time.StampMicro))
		}
	}
	t.Logf("%s, 2 replicas, every 150ms + up to 150ms jitter: passes run %d (completed %d + %d), skipped for the lock %d + %d, overlaps %d; the lock was held %.0f%% of the time",
		duration, len(ran), completed[0], completed[1], skipped[0], skipped[1], overlaps, 100*busy.Seconds()/duration.Seconds())
	if completed[0]+completed[1] < 2 {
		t.Errorf("only %d passes completed in %s", completed[0]+completed[1], duration)
	}
	if skipped[0]+skipped[1] == 0 {
		t.Logf("note: the replicas never collided in this run")
	}
	// Over a long run both replicas must have had their turn.
	if duration >= 20*time.Second && (completed[0] == 0 || completed[1] == 0) {
		t.Errorf("over %s one replica never ran a pass: %v", duration, completed)
	}
}
