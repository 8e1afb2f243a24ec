package report_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/tqscavenger/tqscavenger/internal/fixture"
	"github.com/tqscavenger/tqscavenger/report"
	"github.com/tqscavenger/tqscavenger/sqlstore"
)

// TestReportClosedWorkflows: on temporal-1.32-aged72h the closed-workflow
// dry run names, per queue, the 13 tasks of completed runs no expiry
// removes (closed and deleted runs apart), and deletes nothing.
func TestReportClosedWorkflows(t *testing.T) {
	ctx := context.Background()
	db, err := sqlstore.Open(ctx, "sqlite:"+fixture.Path(t, "temporal-1.32-aged72h"), sqlstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	o := report.Options{Now: time.Date(2026, 11, 30, 14, 0, 0, 0, time.UTC), ClosedWorkflows: true}
	r, err := report.Take(ctx, db, o)
	if err != nil {
		t.Fatal(err)
	}
	var closed, deleted int64
	for _, q := range r.ClosedWorkflows {
		closed += q.Closed
		deleted += q.RunDeleted
		if q.Namespace == "" || q.Queue == "" {
			t.Errorf("queue without a name: %+v", q)
		}
	}
	if closed != 13 || deleted != 0 {
		t.Errorf("closed_workflow %d, run_deleted %d over %d queues; want 13, 0", closed, deleted, len(r.ClosedWorkflows))
	}
	if len(r.Modes) != 1 || r.Modes[0].Mode != "default --closed-workflows" || r.Modes[0].Tasks != 1152+13 {
		t.Errorf("modes = %+v, want the closed-workflow dry run with 1165 tasks", r.Modes)
	}
	var b bytes.Buffer
	if err := r.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "Tasks of closed runs (--closed-workflows), per queue:") {
		t.Errorf("text report lacks the breakdown:\n%s", b.String())
	}
	again, err := report.Take(ctx, db, o)
	if err != nil {
		t.Fatal(err)
	}
	if again.Tables["v1"].Tasks != r.Tables["v1"].Tasks {
		t.Errorf("the report deleted tasks: %d then %d", r.Tables["v1"].Tasks, again.Tables["v1"].Tasks)
	}
}
