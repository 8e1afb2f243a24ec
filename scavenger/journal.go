package scavenger

import "time"

// A SQLite file in a rollback journal (journal_mode=delete, as Temporal's
// dev server keeps its files) pays for every commit: the journal written
// and synced, the file synced, the journal deleted, four fsyncs with
// synchronous=FULL. Each delete is its own statement and transaction (one
// statement per atomic decision), so the commits of a pass are its delete
// statements: with 1,000 rows a statement, 300,000 expired tasks cost 301
// commits and 1,204 fsyncs, against 34 fsyncs in WAL. Larger statements
// commit less often; the write lock they hold is bounded by a lower
// SlowStatement, after which the batcher halves the batch, so that
// Temporal's own writers, which wait for the same lock, do not starve.
const (
	// RollbackTaskBatchSize is TaskBatchSize's default on a rollback
	// journal: 61 commits for those 300,000 tasks.
	RollbackTaskBatchSize = 5000
	// RollbackSlowStatement is SlowStatement's default there: the bound
	// on one write transaction (one statement). A statement that takes
	// longer halves the batch for the next; reads are bounded the same
	// way, since in a rollback journal a reader holds off a writer's
	// commit too.
	RollbackSlowStatement = 100 * time.Millisecond
)

// ForJournal returns c with the defaults for a SQLite file in journal
// mode mode (sqlstore.DB.JournalMode; "" for other engines): on a
// rollback journal, TaskBatchSize and SlowStatement default to
// RollbackTaskBatchSize and RollbackSlowStatement, within TasksPerJob.
// Values the caller set, WAL files, other engines and CompatTemporal
// (Temporal's knob values) are left as they are.
func (c Config) ForJournal(mode string) Config {
	if c.Compat == CompatTemporal {
		return c
	}
	switch mode {
	case "delete", "truncate", "persist":
	default:
		return c
	}
	if c.TaskBatchSize == 0 {
		c.TaskBatchSize = RollbackTaskBatchSize
		if c.TasksPerJob > 0 {
			c.TaskBatchSize = min(c.TaskBatchSize, c.TasksPerJob)
		}
	}
	if c.SlowStatement == 0 {
		c.SlowStatement = RollbackSlowStatement
	}
	return c
}
