package scavenger_test

// The closed-workflow rule's evidence: positive by default (a run found
// COMPLETED), whatever the shard count claims; the inference from absence
// (ClosedDeletedRuns) only under a proven count. Issue 39's findings 1
// (a forged count) and 2 (a true retention case).

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/tqscavenger/tqscavenger/internal/fixture"
	"github.com/tqscavenger/tqscavenger/internal/testdb"
	"github.com/tqscavenger/tqscavenger/scavenger"
	"github.com/tqscavenger/tqscavenger/sqlstore"
	"github.com/tqscavenger/tqscavenger/store"
	"github.com/tqscavenger/tqscavenger/wire"
)

// nsDay is a namespace with a retention of one day.
var nsDay = wire.NamespaceID{0x44, 15: 4}

// TestClosedWorkflowsForgedCount: history rows written with 8 shards, the
// count forged in cluster_metadata_info and shards. The rule alone deletes
// only tasks of runs it finds COMPLETED (some runs are found where the
// forged count happens to agree), never a running run's, and counts the
// misses; with ClosedDeletedRuns the pass is refused before any delete.
func TestClosedWorkflowsForgedCount(t *testing.T) {
	const trueCount = 8
	forgeries := []struct {
		name         string
		meta, shards int32
	}{
		{"2N throughout", 2 * trueCount, 2 * trueCount},
		{"N/2 throughout", trueCount / 2, trueCount / 2},
		{"N+1 throughout", trueCount + 1, trueCount + 1},
	}
	const old = 72*time.Hour + scavenger.RunDeletedMargin + time.Hour
	var cases []closedCase
	for i := range 40 {
		c := closedCase{name: fmt.Sprintf("wf-%d", i), ns: nsOne, wf: fmt.Sprintf("wf-%d", i), run: byte(i + 1), age: old}
		if i%2 == 0 {
			c.history, c.gone = withState(wire.StateCompleted), scavenger.ReasonClosedWorkflow
		} else {
			c.history = withState(wire.StateRunning)
		}
		cases = append(cases, c)
	}
	for _, e := range testdb.Engines {
		for _, f := range forgeries {
			t.Run(string(e)+"/"+f.name, func(t *testing.T) {
				t.Parallel()
				db := testdb.Open(t, e)
				// closedQueue writes the history of the forged count's
				// shards table and metadata; the rows go where 8 shards
				// put them.
				q := closedQueueRows(t, db, f.meta, f.shards, trueCount, cases)
				ctx := context.Background()

				cfg := closedConfig(false)
				cfg.ClosedDeletedRuns = true
				if _, err := scavenger.New(db, cfg).Run(ctx); !errors.Is(err, scavenger.ErrClosedWorkflowsRefused) {
					t.Fatalf("with ClosedDeletedRuns: err = %v, want ErrClosedWorkflowsRefused", err)
				}
				if n := countTasks(t, db, q); n != len(cases) {
					t.Fatalf("the refused pass left %d tasks of %d", n, len(cases))
				}

				st, err := scavenger.New(db, closedConfig(false)).Run(ctx)
				if err != nil {
					t.Fatalf("the rule alone: %v", err)
				}
				left := leftIDs(t, db, q)
				var gone int64
				for i, c := range cases {
					if !left[int64(i+1)] {
						gone++
						if c.gone == "" {
							t.Errorf("%s: a running run's task was deleted", c.name)
						}
					}
				}
				v1 := st.Tables[store.V1]
				if v1.TasksDeleted[scavenger.ReasonRunDeleted] != 0 || v1.TasksDeleted[scavenger.ReasonClosedWorkflow] != gone {
					t.Errorf("deleted %v, want only closed_workflow (%d)", v1.TasksDeleted, gone)
				}
				if st.TasksRunNotFound == 0 || st.TasksRunNotFound+gone > int64(len(cases)) {
					t.Errorf("run_not_found %d with %d deleted of %d: want the misses counted", st.TasksRunNotFound, gone, len(cases))
				}
				t.Logf("%d of %d completed runs' tasks found and deleted, %d tasks kept as run_not_found", gone, len(cases)/2, st.TasksRunNotFound)
			})
		}
	}
}

// closedQueueRows is closedQueue with the shards table and metadata of
// one count (meta, shards) and the history rows of another (rows).
func closedQueueRows(t *testing.T, db *sqlstore.DB, meta, shards, rows int32, cases []closedCase) store.QueueKey {
	t.Helper()
	testdb.CreateHistoryTables(t, db)
	testdb.InsertShards(t, db, int(shards))
	testdb.InsertClusterMetadata(t, db, "active", meta)
	return closedTasks(t, db, rows, cases)
}

// leftIDs returns the task ids left in queue q.
func leftIDs(t *testing.T, db *sqlstore.DB, q store.QueueKey) map[int64]bool {
	t.Helper()
	tasks, err := db.ReadTasks(context.Background(), store.V1, q, nil, 10000)
	if err != nil {
		t.Fatal(err)
	}
	left := map[int64]bool{}
	for _, task := range tasks {
		left[task.Key.ID] = true
	}
	return left
}

// TestClosedWorkflowsRetention is issue 39's finding 2, made reproducible:
// a namespace of one day's retention; 30 workflows on a queue nobody
// polls, 25 terminated and deleted (no executions or current row), 5
// terminated and not yet deleted (COMPLETED), 2 running; 30 other
// workflows in executions; every task 72 h old. The rule alone completes,
// deletes the 5 closed runs' tasks and keeps and counts the 25; with
// ClosedDeletedRuns the 25 go too. The running runs' tasks stay in both.
func TestClosedWorkflowsRetention(t *testing.T) {
	var cases []closedCase
	for i := range 32 {
		c := closedCase{ns: nsDay, wf: fmt.Sprintf("unpolled-%d", i), run: byte(i + 1), age: 72 * time.Hour}
		switch {
		case i < 25:
			c.name, c.gone, c.missing = "deleted", scavenger.ReasonRunDeleted, true
		case i < 30:
			c.name, c.history, c.gone = "terminated", withState(wire.StateCompleted), scavenger.ReasonClosedWorkflow
		default:
			c.name, c.history = "running", withState(wire.StateRunning)
		}
		cases = append(cases, c)
	}
	for _, e := range testdb.Engines {
		for _, m := range []closedMode{{name: "found only"}, {name: "deleted runs", deleted: true, proven: true}} {
			t.Run(string(e)+"/"+m.name, func(t *testing.T) {
				t.Parallel()
				db := testdb.Open(t, e)
				const n = 4
				q := closedQueue(t, db, n, nil)
				testdb.InsertNamespace(t, db, nsDay, "day", 24*time.Hour, false)
				closedTasksInto(t, db, n, q, cases)
				fillers(t, db, n, 30)

				cfg := closedConfig(false)
				cfg.ClosedDeletedRuns = m.deleted
				st, err := scavenger.New(db, cfg).Run(context.Background())
				if err != nil || st.Outcome != scavenger.Completed {
					t.Fatalf("outcome %q, err %v; want completed", st.Outcome, err)
				}
				left := leftIDs(t, db, q)
				want := map[scavenger.Reason]int64{}
				var notFound int64
				for i, c := range cases {
					gone := m.want(c)
					if kept := left[int64(i+1)]; kept != (gone == "") {
						t.Errorf("%s %s: kept %v, want kept %v", c.name, c.wf, kept, gone == "")
					}
					want[gone]++
					if gone == "" && c.missing {
						notFound++
					}
				}
				v1 := st.Tables[store.V1]
				for _, r := range []scavenger.Reason{scavenger.ReasonClosedWorkflow, scavenger.ReasonRunDeleted} {
					if v1.TasksDeleted[r] != want[r] {
						t.Errorf("%s: %d deleted, want %d", r, v1.TasksDeleted[r], want[r])
					}
				}
				if st.TasksRunNotFound != notFound {
					t.Errorf("run_not_found %d, want %d", st.TasksRunNotFound, notFound)
				}
			})
		}
	}
}

// TestClosedWorkflowsForgedFixture is issue 39's finding 1 on a real
// Temporal server's databases (1 history shard): the metadata claims 2 and
// shards gains the row of shard 2. The rule alone deletes no task of a run
// that is not COMPLETED (what an untampered pass deletes, and less: the
// runs the forged count looks up in shard 2 are not found); with
// ClosedDeletedRuns the pass is refused.
func TestClosedWorkflowsForgedFixture(t *testing.T) {
	for _, name := range []string{"temporal-1.32-aged72h", "temporal-1.32-fair-aged72h"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			path := fixture.Path(t, name)
			db, err := sqlstore.Open(context.Background(), "sqlite:"+path, sqlstore.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			h := testdb.SQL(t, db)
			for _, q := range []string{
				// HistoryShardCount (field 2) 1 → 2, as the repro.
				"UPDATE cluster_metadata_info SET data = X'0A066163746976651002' || substr(data, 11)",
				"INSERT INTO shards SELECT 2, range_id, data, data_encoding FROM shards WHERE shard_id = 1",
			} {
				if _, err := h.Exec(q); err != nil {
					t.Fatal(err)
				}
			}
			ctx := context.Background()
			cfg := baseConfig()
			cfg.Now = func() time.Time { return fixtureNow.Add(365 * 24 * time.Hour) } // every task old
			cfg.ClosedWorkflows, cfg.ClosedDeletedRuns = true, true
			before := liveTasks(t, db, cfg.Now())
			if _, err := scavenger.New(db, cfg).Run(ctx); !errors.Is(err, scavenger.ErrClosedWorkflowsRefused) {
				t.Fatalf("with ClosedDeletedRuns: err = %v, want ErrClosedWorkflowsRefused", err)
			}
			if after := liveTasks(t, db, cfg.Now()); len(after) != len(before) {
				t.Fatalf("the refused pass: %d live tasks, was %d", len(after), len(before))
			}

			cfg.ClosedDeletedRuns = false
			st, err := scavenger.New(db, cfg).Run(ctx)
			if err != nil {
				t.Fatal(err)
			}
			after := liveTasks(t, db, cfg.Now())
			for k, completed := range before {
				if _, left := after[k]; !left && !completed {
					t.Errorf("task %s of a run that is not COMPLETED was deleted", k)
				}
			}
			var deleted int64
			for _, ts := range st.Tables {
				deleted += ts.TasksDeleted[scavenger.ReasonClosedWorkflow]
				if n := ts.TasksDeleted[scavenger.ReasonRunDeleted]; n != 0 {
					t.Errorf("run_deleted %d, want 0", n)
				}
			}
			t.Logf("%d unexpired tasks before, %d after; closed_workflow %d, run_not_found %d", len(before), len(after), deleted, st.TasksRunNotFound)
			if st.TasksRunNotFound == 0 {
				t.Errorf("run_not_found 0: the forged count's misses are not counted")
			}
		})
	}
}

// liveTasks returns the unexpired tasks of both task tables, and whether
// each one's run is COMPLETED: read without the rule's code (the run by
// run id alone, its state by hand).
func liveTasks(t *testing.T, db *sqlstore.DB, now time.Time) map[string]bool {
	t.Helper()
	h := testdb.SQL(t, db)
	completed := map[wire.NamespaceID]bool{}
	erows, err := h.Query("SELECT run_id, state FROM executions")
	if err != nil {
		t.Fatal(err)
	}
	for erows.Next() {
		var run, state []byte
		if err := erows.Scan(&run, &state); err != nil {
			t.Fatal(err)
		}
		completed[wire.NamespaceID(run)] = stateByHand(t, state) == wire.StateCompleted
	}
	if err := erows.Close(); err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, q := range []string{
		"SELECT 'v1', range_hash, task_queue_id, 0, task_id, data, data_encoding FROM tasks",
		"SELECT 'v2', range_hash, task_queue_id, pass, task_id, data, data_encoding FROM tasks_v2",
	} {
		rows, err := h.Query(q)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var (
				table        string
				rh, pass, id int64
				qid, blob    []byte
				enc          string
			)
			if err := rows.Scan(&table, &rh, &qid, &pass, &id, &blob, &enc); err != nil {
				t.Fatal(err)
			}
			info, err := wire.DecodeAllocatedTaskInfo(enc, blob)
			if err != nil {
				t.Fatal(err)
			}
			if wire.Expired(info.Data.ExpiryTime, now) {
				continue
			}
			run, _ := wire.ParseNamespaceID(info.Data.RunID)
			out[fmt.Sprintf("%s/%d/%x/%d/%d", table, rh, qid, pass, id)] = completed[run]
		}
		if err := rows.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// TestClosedWorkflowsForgedFewWorkflows: the count forged (2N throughout)
// on a database of fewer than MinProofWorkflows workflows, each of which
// happens to sit where both counts put it, so the proof finds no fault
// but cannot hold. With ClosedDeletedRuns the pass runs; a miss counts
// only where the workflow's current row, found in the shard its rows are
// in, points at another run: those tasks go, a running run's stay, and a
// run deleted with its workflow (no current row) is kept and counted.
func TestClosedWorkflowsForgedFewWorkflows(t *testing.T) {
	const trueCount, forged = 8, 16
	const old = 72*time.Hour + scavenger.RunDeletedMargin + time.Hour
	// Workflow ids whose shard is the same under both counts.
	var ids []string
	for i := 0; len(ids) < 12; i++ {
		id := fmt.Sprintf("agree-%d", i)
		if wire.HistoryShard(nsOne.String(), id, trueCount) == wire.HistoryShard(nsOne.String(), id, forged) {
			ids = append(ids, id)
		}
	}
	var cases []closedCase
	for i, id := range ids {
		c := closedCase{name: id, ns: nsOne, wf: id, run: byte(i + 1), age: old}
		switch i % 3 {
		case 0:
			c.history = withState(wire.StateRunning)
		case 1:
			c.history, c.gone, c.byCurrent, c.missing = runGone(false), scavenger.ReasonRunDeleted, true, true
		default:
			c.gone, c.missing = scavenger.ReasonRunDeleted, true // no current row: kept
		}
		cases = append(cases, c)
	}
	for _, e := range testdb.Engines {
		t.Run(string(e), func(t *testing.T) {
			t.Parallel()
			db := testdb.Open(t, e)
			q := closedQueueRows(t, db, forged, forged, trueCount, cases)
			// The current rows' runs exist: the later run each points at.
			for _, c := range cases {
				if c.byCurrent {
					testdb.InsertExecution(t, db, trueCount, c.ns, c.wf, runID(c.run+100), wire.StateRunning)
				}
			}
			cfg := closedConfig(false)
			cfg.ClosedDeletedRuns = true
			st, err := scavenger.New(db, cfg).Run(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			m := closedMode{deleted: true} // not proven
			left := leftIDs(t, db, q)
			var notFound int64
			for i, c := range cases {
				gone := m.want(c)
				if kept := left[int64(i+1)]; kept != (gone == "") {
					t.Errorf("%s: kept %v, want kept %v", c.name, kept, gone == "")
				}
				if gone == "" && c.missing {
					notFound++
				}
			}
			if st.TasksRunNotFound != notFound {
				t.Errorf("run_not_found %d, want %d", st.TasksRunNotFound, notFound)
			}
		})
	}
}
