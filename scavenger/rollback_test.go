package scavenger_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/tqscavenger/tqscavenger/internal/testdb"
	"github.com/tqscavenger/tqscavenger/scavenger"
	"github.com/tqscavenger/tqscavenger/seed"
	"github.com/tqscavenger/tqscavenger/sqlstore"
	"github.com/tqscavenger/tqscavenger/store"
)

// TestRollbackJournalSameOutcome: on a SQLite file in a rollback journal,
// with group commit on (Options.WriteTxBudget), a pass at the full pace
// shares commits and spreads pages over windows that keep deletes running
// while they scan on. It must leave exactly the rows, and report exactly
// the counts, of the same pass on the same data in WAL, where none of that
// happens, and of a pass at the gentle pace on the rollback journal, which
// turns sharing off; with transient errors injected too.
func TestRollbackJournalSameOutcome(t *testing.T) {
	specs := []seed.Spec{
		{NamePrefix: "expired", Queues: 150, TasksPerQueue: 40, Expired: 1, IdleAge: 72 * time.Hour},
		{NamePrefix: "tail", Queues: 60, TasksPerQueue: 30, Expired: 0.5, IdleAge: 72 * time.Hour},
		{NamePrefix: "head", Queues: 40, TasksPerQueue: 30, Expired: 0.5, NoExpiry: 0.5, Layout: seed.LiveFirst, IdleAge: 72 * time.Hour},
		{NamePrefix: "busy", Queues: 40, TasksPerQueue: 20, Expired: 1, IdleAge: time.Hour},
		{NamePrefix: "idle", Queues: 80, IdleAge: 72 * time.Hour},
	}
	for _, faulty := range []bool{false, true} {
		t.Run(fmt.Sprintf("faults=%v", faulty), func(t *testing.T) {
			var digests [3]string
			var stats [3]scavenger.Stats
			for i, run := range []struct {
				journal string
				pace    scavenger.PaceMode
			}{{"wal", scavenger.PaceFull}, {"delete", scavenger.PaceFull}, {"delete", scavenger.PaceGentle}} {
				journal := run.journal
				path := filepath.Join(t.TempDir(), "t.db")
				db, err := sqlstore.Open(context.Background(), path, sqlstore.Options{Create: true})
				if err != nil {
					t.Fatal(err)
				}
				if err := db.Setup(context.Background()); err != nil {
					t.Fatal(err)
				}
				for _, s := range specs {
					s.Now = now
					mustSeed(t, db, s)
				}
				db.Close()
				setJournal(t, path, journal)
				db, err = sqlstore.Open(context.Background(), path, sqlstore.Options{WriteTxBudget: 100 * time.Millisecond})
				if err != nil {
					t.Fatal(err)
				}
				defer db.Close()
				if got := db.SharesCommits(); got != (journal == "delete") {
					t.Fatalf("journal %s: SharesCommits = %v", journal, got)
				}
				cfg := baseConfig()
				cfg.ListPageSize = 100 // several pages, each spread over the workers
				cfg.TaskBatchSize = 16 // several scans and deletes per window
				cfg.Mode = run.pace
				if faulty {
					f := &faults{failFirst: 3}
					cfg.Middleware = []store.Middleware{f.middleware()}
				}
				st, err := scavenger.New(db, cfg).Run(context.Background())
				if err != nil {
					t.Fatalf("journal %s: %v", journal, err)
				}
				if got, want := db.SharesCommits(), journal == "delete" && run.pace == scavenger.PaceFull; got != want {
					t.Fatalf("journal %s, pace %s: SharesCommits = %v after the pass, want %v", journal, run.pace, got, want)
				}
				digests[i], stats[i] = testdb.Digest(t, db), st
			}
			if digests[0] != digests[1] || digests[0] != digests[2] {
				t.Errorf("rows left differ:\nWAL:\n%s\nrollback journal:\n%s\nrollback journal, gentle:\n%s", digests[0], digests[1], digests[2])
			}
			// TasksExpiredLeft is not compared: it counts the expired rows
			// behind a live head that a scan happened to read, which
			// depends on where its batches end.
			w := stats[0]
			for _, r := range stats[1:] {
				if w.TasksDeleted != r.TasksDeleted || w.QueuesDeleted != r.QueuesDeleted || w.QueuesProcessed != r.QueuesProcessed ||
					w.QueuesKept != r.QueuesKept || w.TasksProcessed != r.TasksProcessed ||
					w.Errors != 0 || r.Errors != 0 {
					t.Errorf("stats differ:\nWAL:      %+v\nrollback: %+v", w, r)
				}
			}
			if w.TasksDeleted == 0 || w.QueuesDeleted == 0 {
				t.Errorf("nothing deleted: %+v", w)
			}
		})
	}
}

// setJournal switches the SQLite file at path to a journal mode, on a
// connection of its own.
func setJournal(t *testing.T, path, mode string) {
	t.Helper()
	d, err := sqlstore.ParseDSN(path)
	if err != nil {
		t.Fatal(err)
	}
	c, err := sqlstore.Connector(d, sqlstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(c)
	defer db.Close()
	var got string
	if err := db.QueryRow("PRAGMA journal_mode = " + mode).Scan(&got); err != nil || got != mode {
		t.Fatalf("journal mode %s: got %q, %v", mode, got, err)
	}
}
