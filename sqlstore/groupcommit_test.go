package sqlstore_test

import (
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/tqscavenger/tqscavenger/sqlstore"
	"github.com/tqscavenger/tqscavenger/store"
)

// rollbackFile returns a SQLite file with the task tables in a rollback
// journal (journal_mode=delete), as Temporal's dev server keeps its files,
// and queues queues of tasks tasks each in V1.
func rollbackFile(t *testing.T, queues, tasks int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "rollback.db")
	db, err := sqlstore.Open(ctx, path, sqlstore.Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Setup(ctx); err != nil {
		t.Fatal(err)
	}
	for q := range queues {
		k := qk(uint32(q), fmt.Sprintf("q%d", q))
		var rows []store.TaskRow
		for i := range tasks {
			rows = append(rows, task(0, int64(i+1)))
		}
		mustAppend(t, db, store.V1, k, k, rows...)
	}
	db.Close()
	raw := rawSQLite(t, path)
	if _, err := raw.ExecContext(ctx, "PRAGMA journal_mode = delete"); err != nil {
		t.Fatal(err)
	}
	return path
}

// rawSQLite is a connection of its own on path, outside any store: what
// another process sees.
func rawSQLite(t *testing.T, path string) *sql.DB {
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
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { db.Close() })
	return db
}

func journalMode(t *testing.T, db *sql.DB) string {
	t.Helper()
	var mode string
	if err := db.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		t.Fatal(err)
	}
	return mode
}

// TestGroupCommit: on a rollback-journal file, concurrent deletes share
// commits, and each call that returned has committed: another connection
// sees its rows gone at once. On a WAL file there is no group commit.
func TestGroupCommit(t *testing.T) {
	const queues, tasks, workers = 40, 50, 4
	for _, tc := range []struct {
		name string
		wal  bool
	}{
		{name: "rollback journal"},
		{name: "WAL", wal: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := rollbackFile(t, queues, tasks)
			other := rawSQLite(t, path)
			if tc.wal {
				if _, err := other.ExecContext(ctx, "PRAGMA journal_mode = wal"); err != nil {
					t.Fatal(err)
				}
			}
			db, err := sqlstore.Open(ctx, path, sqlstore.Options{WriteTxBudget: 100 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()

			var wg sync.WaitGroup
			errs := make(chan error, queues)
			for w := range workers {
				wg.Go(func() {
					for q := w; q < queues; q += workers {
						k := qk(uint32(q), fmt.Sprintf("q%d", q))
						// Two statements per queue: a read, then the delete.
						if got, err := db.ReadTasks(ctx, store.V1, k, nil, tasks+1); err != nil || len(got) != tasks {
							errs <- fmt.Errorf("%s: read %d tasks, %v", k, len(got), err)
							continue
						}
						n, err := db.DeleteTasks(ctx, store.V1, k, store.TaskRange{Max: store.TaskKey{ID: tasks}}, 0)
						if err != nil || n != tasks {
							errs <- fmt.Errorf("%s: deleted %d, %v", k, n, err)
							continue
						}
						// Returned, so committed: a connection of its own sees it.
						var left int
						if err := other.QueryRowContext(ctx, "SELECT COUNT(*) FROM tasks WHERE range_hash = ? AND task_queue_id = ?", int64(k.RangeHash), k.ID).Scan(&left); err != nil || left != 0 {
							errs <- fmt.Errorf("%s: another connection sees %d tasks after the delete returned (%v)", k, left, err)
						}
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
			commits, writes, ok := db.GroupCommits()
			t.Logf("group commits %d, writes %d", commits, writes)
			switch {
			case tc.wal:
				if ok {
					t.Errorf("group commit on a WAL file")
				}
			case !ok:
				t.Fatalf("no group commit on a rollback-journal file")
			case writes != queues:
				t.Errorf("groups held %d writes, want %d", writes, queues)
			case commits >= writes:
				t.Errorf("%d commits for %d writes: none shared", commits, writes)
			}
			if mode := journalMode(t, other); mode != map[bool]string{true: "wal", false: "delete"}[tc.wal] {
				t.Errorf("journal mode %s after the pass", mode)
			}
		})
	}
}

// TestGroupCommitFailure: a write that fails fails its whole group: the
// other writes in it report an error wrapping store.ErrTransient and their
// rows are still there; the next group commits as usual.
func TestGroupCommitFailure(t *testing.T) {
	const queues = 3
	path := rollbackFile(t, queues, 10)
	db, err := sqlstore.Open(ctx, path, sqlstore.Options{WriteTxBudget: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	joined, release, err := db.HoldGroup(ctx)
	if err != nil {
		t.Fatal(err)
	}
	all := store.TaskRange{Max: store.TaskKey{ID: 10}}
	results := make(chan error, queues)
	for q := range queues {
		go func() {
			_, err := db.DeleteTasks(ctx, store.V1, qk(uint32(q), fmt.Sprintf("q%d", q)), all, 0)
			results <- err
		}()
	}
	// The failing write joins after the others have run theirs.
	waitFor(t, func() bool { w, idle, _ := joined(); return w == 1+queues && idle })
	bad := make(chan error, 1)
	go func() {
		_, err := db.Exec(ctx, "DELETE FROM no_such_table")
		bad <- err
	}()
	waitFor(t, func() bool { w, idle, _ := joined(); return w == 2+queues && idle })
	release()
	if err := <-bad; err == nil || errors.Is(err, store.ErrTransient) {
		t.Errorf("the failing write: %v, want its own error", err)
	}
	for range queues {
		if err := <-results; !errors.Is(err, store.ErrTransient) {
			t.Errorf("a write of the failed group: %v, want store.ErrTransient", err)
		}
	}
	for q := range queues {
		k := qk(uint32(q), fmt.Sprintf("q%d", q))
		if got := readAll(t, db, store.V1, k); len(got) != 10 {
			t.Errorf("%s: %d tasks after its group rolled back, want 10", k, len(got))
		}
		if n, err := db.DeleteTasks(ctx, store.V1, k, all, 0); err != nil || n != 10 {
			t.Errorf("%s: the retry deleted %d, %v", k, n, err)
		}
	}
	if commits, _, _ := db.GroupCommits(); commits != queues {
		t.Errorf("%d groups committed, want %d (the retries; the failed group none)", commits, queues)
	}
}

// TestGroupCommitBudget: a group past its budget takes no more writes; the
// next write begins a group of its own, which waits for the first to
// commit.
func TestGroupCommitBudget(t *testing.T) {
	const budget = 20 * time.Millisecond
	path := rollbackFile(t, 1, 10)
	db, err := sqlstore.Open(ctx, path, sqlstore.Options{WriteTxBudget: budget})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	joined, release, err := db.HoldGroup(ctx)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(budget) // the time the budget is about
	done := make(chan error, 1)
	go func() {
		_, err := db.DeleteTasks(ctx, store.V1, qk(0, "q0"), store.TaskRange{Max: store.TaskKey{ID: 10}}, 0)
		done <- err
	}()
	waitFor(t, func() bool { _, _, next := joined(); return next })
	if w, _, _ := joined(); w != 1 {
		t.Errorf("the group past its budget took %d writes, want 1", w)
	}
	release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if commits, writes, _ := db.GroupCommits(); commits != 2 || writes != 2 {
		t.Errorf("%d commits of %d writes, want 2 of 2", commits, writes)
	}
}

// TestGroupCommitOff: without Options.WriteTxBudget a rollback-journal
// file commits each statement on its own.
func TestGroupCommitOff(t *testing.T) {
	path := rollbackFile(t, 1, 10)
	db, err := sqlstore.Open(ctx, path, sqlstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, _, ok := db.GroupCommits(); ok || db.SharesCommits() {
		t.Fatal("group commit on without WriteTxBudget")
	}
}

// waitFor waits until cond holds, for at most 10 s.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("timed out waiting")
		}
		time.Sleep(time.Millisecond)
	}
}
