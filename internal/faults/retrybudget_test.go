package faults

import (
	"context"
	"database/sql"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/tqscavenger/tqscavenger/internal/testdb"
	"github.com/tqscavenger/tqscavenger/scavenger"
	"github.com/tqscavenger/tqscavenger/sqlstore"
)

// TestRetryBudgetHoldsBusyWait: another process holds a SQLite file's
// write lock for the whole pass, so every delete waits the busy timeout
// and fails SQLITE_BUSY. The retry budget is longer than one busy wait
// and shorter than two, so the retry after the first failure starts
// inside the budget and would end, waiting its busy timeout out, past it.
//
// Invariant: an operation gives up within its retry budget, busy waits
// included: a retry that the budget's end finds waiting is cut there
// (ErrGaveUp with ErrRetryBudget), never let run its whole busy wait on
// top. (Were the first attempt alone to outlast the budget, on a machine
// slowed to a crawl, no retry runs and nothing is cut: that is allowed.)
func TestRetryBudgetHoldsBusyWait(t *testing.T) {
	base := testdb.Open(t, sqlstore.SQLite)
	path := base.DSN().Path
	before := seedWorkload(t, base, workload{dead: 1, tasksPerQueue: 10})
	base.Close()
	db, err := sqlstore.Open(ctx, "sqlite:"+path, sqlstore.Options{BusyTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// The lock holder: a connection of its own with a write transaction.
	holder, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	conn, err := holder.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	defer conn.ExecContext(context.Background(), "ROLLBACK")
	cfg := scavenger.Config{
		Pace:  scavenger.Pace{Workers: 1, RetryFor: 3 * time.Second, RetryInitial: 10 * time.Millisecond, RetryMax: 10 * time.Millisecond},
		Hooks: scavenger.Hooks{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))},
	}
	st, err := scavenger.New(db, cfg).Run(ctx)
	if st.Outcome != scavenger.Failed || st.Cause != scavenger.CauseRetriesExhausted || !errors.Is(err, scavenger.ErrGaveUp) {
		t.Fatalf("a pass whose deletes stay locked: %s (cause %q), %v; want failed, retries_exhausted, ErrGaveUp", st.Outcome, st.Cause, err)
	}
	if st.Retries > 0 && !errors.Is(err, scavenger.ErrRetryBudget) {
		t.Errorf("%d retries, and the operation gave up without its last one cut at the budget's end: %v", st.Retries, err)
	}
	conn.ExecContext(ctx, "ROLLBACK")
	checkSafe(t, before, snapshot(t, db))
}
