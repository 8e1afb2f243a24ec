package scavenger_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/tqscavenger/tqscavenger/internal/fixture"
	"github.com/tqscavenger/tqscavenger/internal/testdb"
	"github.com/tqscavenger/tqscavenger/scavenger"
	"github.com/tqscavenger/tqscavenger/sqlstore"
	"github.com/tqscavenger/tqscavenger/store"
	"github.com/tqscavenger/tqscavenger/wire"
)

// fixtureTask is a v1 task of a fixture with its run's state, found
// independently of the rule: the task's blob through the general decoder,
// the run by run id alone (no shard formula), its state by hand.
type fixtureTask struct {
	expired bool
	state   wire.ExecutionState // 0: no executions row
}

func fixtureTasks(t *testing.T, db *sqlstore.DB) map[string]fixtureTask {
	t.Helper()
	h := testdb.SQL(t, db)
	states := map[wire.NamespaceID]wire.ExecutionState{}
	erows, err := h.Query("SELECT run_id, state FROM executions")
	if err != nil {
		t.Fatal(err)
	}
	for erows.Next() {
		var run, state []byte
		if err := erows.Scan(&run, &state); err != nil {
			t.Fatal(err)
		}
		states[wire.NamespaceID(run)] = stateByHand(t, state)
	}
	if err := erows.Close(); err != nil {
		t.Fatal(err)
	}
	rows, err := h.Query("SELECT range_hash, task_queue_id, task_id, data, data_encoding FROM tasks")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]fixtureTask{}
	for rows.Next() {
		var (
			rh, id   int64
			qid, blb []byte
			enc      string
		)
		if err := rows.Scan(&rh, &qid, &id, &blb, &enc); err != nil {
			t.Fatal(err)
		}
		info, err := wire.DecodeAllocatedTaskInfo(enc, blb)
		if err != nil {
			t.Fatal(err)
		}
		run, err := wire.ParseNamespaceID(info.Data.RunID)
		if err != nil {
			t.Fatalf("task %d: run id %q: %v", id, info.Data.RunID, err)
		}
		out[fmt.Sprintf("%d/%x/%d", rh, qid, id)] = fixtureTask{expired: wire.Expired(info.Data.ExpiryTime, fixtureNow), state: states[run]}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// stateByHand reads field 3 of a WorkflowExecutionState with protowire.
func stateByHand(t *testing.T, b []byte) wire.ExecutionState {
	var s wire.ExecutionState
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			t.Fatal("bad state blob")
		}
		b = b[n:]
		if num == 3 && typ == protowire.VarintType {
			v, m := protowire.ConsumeVarint(b)
			s, b = wire.ExecutionState(v), b[m:]
			continue
		}
		m := protowire.ConsumeFieldValue(num, typ, b)
		if m < 0 {
			t.Fatal("bad state blob")
		}
		b = b[m:]
	}
	return s
}

// TestClosedWorkflowsFixture: on temporal-1.32-aged72h, a real Temporal
// server's database, the tasks of completed runs that no expiry will ever
// remove go, and nothing of a run that is not completed does, beyond what
// the default rules delete (expired tasks).
func TestClosedWorkflowsFixture(t *testing.T) {
	path := fixture.Path(t, "temporal-1.32-aged72h")
	db, err := sqlstore.Open(context.Background(), "sqlite:"+path, sqlstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	before := fixtureTasks(t, db)
	var completed, deadNoExpiry, liveOther int
	for _, ft := range before {
		if ft.state == wire.StateCompleted {
			completed++
			if !ft.expired {
				deadNoExpiry++
			}
		} else if !ft.expired {
			liveOther++
		}
	}
	t.Logf("%d tasks: %d of completed runs (%d without expiry), %d unexpired of other runs", len(before), completed, deadNoExpiry, liveOther)
	if completed != 1165 || deadNoExpiry != 13 {
		t.Fatalf("independent count: %d tasks of completed runs, %d without expiry; the issue counts 1165 and 13", completed, deadNoExpiry)
	}

	cfg := baseConfig()
	cfg.Now = func() time.Time { return fixtureNow }
	cfg.ClosedWorkflows = true
	st, err := scavenger.New(db, cfg).Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	after := fixtureTasks(t, db)
	for k, ft := range before {
		_, left := after[k]
		switch {
		case ft.state == wire.StateCompleted && left:
			t.Errorf("task %q of a completed run is left", k)
		case ft.state != wire.StateCompleted && !ft.expired && !left:
			t.Errorf("task %q of a run in state %v, not expired, was deleted", k, ft.state)
		}
	}
	v1 := st.Tables[store.V1]
	t.Logf("deleted: %v", v1.TasksDeleted)
	if n := v1.TasksDeleted[scavenger.ReasonClosedWorkflow]; n != int64(deadNoExpiry) {
		t.Errorf("closed_workflow deletes %d, want the %d without expiry (the expired ones go as expired first)", n, deadNoExpiry)
	}
	if n := v1.TasksDeleted[scavenger.ReasonRunDeleted]; n != 0 {
		t.Errorf("run_deleted %d, want 0: every task's run has its executions row", n)
	}
}
