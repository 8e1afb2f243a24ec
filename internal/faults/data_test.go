package faults

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/tqscavenger/tqscavenger/internal/testdb"
	"github.com/tqscavenger/tqscavenger/seed"
	"github.com/tqscavenger/tqscavenger/sqlstore"
	"github.com/tqscavenger/tqscavenger/wire"
)

// workload is what a test seeds: dead queues (idle for days, every task
// expired: all of it goes) and live ones (in use, half their tasks never
// expire: the expired half goes, the queue row and the rest stay).
type workload struct {
	dead, live, tasksPerQueue int
}

// seedWorkload writes w into db and returns the state it made.
func seedWorkload(t *testing.T, db *sqlstore.DB, w workload) state {
	t.Helper()
	now := time.Now()
	for _, spec := range []seed.Spec{
		{NamePrefix: "dead", Queues: w.dead, TasksPerQueue: w.tasksPerQueue, Expired: 1, IdleAge: 72 * time.Hour, Now: now},
		{NamePrefix: "live", Queues: w.live, TasksPerQueue: w.tasksPerQueue, Expired: 0.5, NoExpiry: 0.5, Now: now},
	} {
		if spec.Queues == 0 {
			continue
		}
		if _, err := seed.Write(ctx, db, spec); err != nil {
			t.Fatal(err)
		}
	}
	return snapshot(t, db)
}

// state is what the v1 task tables hold.
type state struct {
	queues map[string]int64 // queue key → range_id
	// tasks maps task keys to whether the task is live (it never expires,
	// or not yet).
	tasks map[string]bool
	// taskQueue maps task keys to their queue's key.
	taskQueue map[string]string
}

func queueKey(rh int64, id []byte) string { return fmt.Sprintf("%d/%x", rh, id) }

// snapshot reads every row of db's v1 task tables with plain SQL.
func snapshot(t *testing.T, db *sqlstore.DB) state {
	t.Helper()
	s := state{queues: map[string]int64{}, tasks: map[string]bool{}, taskQueue: map[string]string{}}
	h := testdb.SQL(t, db)
	// A lock a test forgot to release fails the test instead of hanging it.
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	rows, err := h.QueryContext(ctx, "SELECT range_hash, task_queue_id, range_id FROM task_queues")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var (
			rh, rangeID int64
			id          []byte
		)
		if err := rows.Scan(&rh, &id, &rangeID); err != nil {
			t.Fatal(err)
		}
		s.queues[queueKey(rh, id)] = rangeID
	}
	if err := rows.Close(); err != nil {
		t.Fatal(err)
	}
	rows, err = h.QueryContext(ctx, "SELECT range_hash, task_queue_id, task_id, data, data_encoding FROM tasks")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	for rows.Next() {
		var (
			rh, taskID int64
			id, data   []byte
			enc        string
		)
		if err := rows.Scan(&rh, &id, &taskID, &data, &enc); err != nil {
			t.Fatal(err)
		}
		tt, err := wire.DecodeTaskTimes(enc, data)
		if err != nil {
			t.Fatal(err)
		}
		k := fmt.Sprintf("%s/%d", queueKey(rh, id), taskID)
		s.tasks[k] = !wire.Expired(tt.ExpiryTime, now)
		s.taskQueue[k] = queueKey(rh, id)
	}
	if err := rows.Close(); err != nil {
		t.Fatal(err)
	}
	return s
}

// live counts the live tasks.
func (s state) live() int {
	n := 0
	for _, l := range s.tasks {
		if l {
			n++
		}
	}
	return n
}

// checkSafe checks what no fault may break, between the state before a
// pass and after it: no live task was deleted, no queue row with live
// tasks was deleted, and no task was left without its queue row (no
// orphan created). It returns how many tasks and queue rows went.
func checkSafe(t *testing.T, before, after state) (tasksGone, queuesGone int) {
	t.Helper()
	holdsLive := map[string]bool{}
	for k, live := range before.tasks {
		if live {
			holdsLive[before.taskQueue[k]] = true
			if _, ok := after.tasks[k]; !ok {
				t.Errorf("live task %s was deleted", k)
			}
		}
	}
	for q := range holdsLive {
		if _, ok := after.queues[q]; !ok {
			t.Errorf("queue %s, which holds live tasks, was deleted", q)
		}
	}
	for k, q := range after.taskQueue {
		if _, ok := after.queues[q]; !ok {
			t.Errorf("task %s was left without its queue row", k)
		}
	}
	return len(before.tasks) - len(after.tasks), len(before.queues) - len(after.queues)
}

// checkFinished checks that the job is done: only live tasks, and only
// the queue rows that hold them, are left.
func checkFinished(t *testing.T, s state, w workload) {
	t.Helper()
	if n := len(s.tasks) - s.live(); n != 0 {
		t.Errorf("%d expired tasks left", n)
	}
	if len(s.queues) != w.live {
		t.Errorf("%d queue rows left, want the %d live ones", len(s.queues), w.live)
	}
}

// dsnOf is the DSN of a test store, password included.
func dsnOf(db *sqlstore.DB) string {
	if db.DSN().URL != nil {
		return db.DSN().URL.String()
	}
	return db.DSN().String()
}

// servers are the engines with a server session to break.
var servers = []sqlstore.Engine{sqlstore.Postgres, sqlstore.MySQL}

// engines are the engines by name.
var engines = map[string]sqlstore.Engine{"sqlite": sqlstore.SQLite, "postgres": sqlstore.Postgres, "mysql": sqlstore.MySQL}
