package report_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/tqscavenger/tqscavenger/internal/fixture"
	"github.com/tqscavenger/tqscavenger/internal/testdb"
	"github.com/tqscavenger/tqscavenger/report"
	"github.com/tqscavenger/tqscavenger/sqlstore"
)

// TestReportOnRealDatabase checks the inventory of a real Temporal 1.32
// database against the counts its fixture README gives, and the dry runs
// against what Temporal's own scavenger deleted there.
func TestReportOnRealDatabase(t *testing.T) {
	ctx := context.Background()
	db, err := sqlstore.Open(ctx, "sqlite:"+fixture.Path(t, "temporal-1.32-aged72h"), sqlstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	r, err := report.Take(ctx, db, report.Options{Now: time.Date(2026, 11, 30, 14, 0, 0, 0, time.UTC), Modes: true})
	if err != nil {
		t.Fatal(err)
	}
	v1 := r.Tables["v1"]
	// Matching had acked part of some backlogs before the server stopped;
	// the fixture does not give that count, so only its bounds are checked.
	if v1.BelowAck <= 0 || v1.BelowAck >= v1.Tasks {
		t.Errorf("v1 tasks below the ack level: %d of %d", v1.BelowAck, v1.Tasks)
	}
	got := *v1
	got.BelowAck = 0
	want := report.Counts{Queues: 139, IdleQueues: 139, Tasks: 3446, Expired: 1152, NoExpiry: 2294, InSubqueues: 100}
	if got != want {
		t.Errorf("v1 counts %+v, want %+v", got, want)
	}
	if v2 := r.Tables["v2"]; v2.Queues != 132 || v2.Tasks != 0 {
		t.Errorf("v2 counts %+v, want 132 queues and no task", *v2)
	}
	modes := map[string]report.WouldDelete{}
	for _, m := range r.Modes {
		modes[m.Mode] = m
	}
	// Temporal's scavenger deleted 107 queue rows and 1003 tasks of this
	// database; the default mode deletes every expired task.
	if m := modes["temporal"]; m.Queues != 107 || m.Tasks != 1003 {
		t.Errorf("temporal would delete %+v, want 107 queues and 1003 tasks", m)
	}
	if m := modes["default"]; m.Queues != 107 || m.Tasks != 1152 {
		t.Errorf("default would delete %+v, want 107 queues and 1152 tasks", m)
	}
	// A report only reads: the dry runs deleted nothing.
	var n int
	if err := testdb.SQL(t, db).QueryRow("SELECT count(*) FROM tasks").Scan(&n); err != nil || n != 3446 {
		t.Errorf("tasks after the report: %d (%v), want 3446", n, err)
	}

	var text, js bytes.Buffer
	if err := r.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "What each mode would delete now:") {
		t.Errorf("text report lacks the modes:\n%s", text.String())
	}
	if err := r.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var back report.Report
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || back.Tables["v1"].Expired != 1152 {
		t.Errorf("JSON does not round-trip: %v", err)
	}
}
