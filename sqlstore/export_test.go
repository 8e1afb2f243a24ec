package sqlstore

import (
	"context"
	"database/sql"
	"path/filepath"

	"github.com/go-sql-driver/mysql"

	"github.com/tqscavenger/tqscavenger/store"
)

// Stmt is a statement the store runs, with its arguments, for tests that
// EXPLAIN it.
type Stmt struct {
	SQL  string
	Args []any
}

func stmtOf(b *builder) Stmt { return Stmt{SQL: b.String(), Args: b.args} }

// ListQueuesStmt is the statement ListQueues runs.
func (s *DB) ListQueuesStmt(t store.Table, after *store.QueueKey, limit int) Stmt {
	return stmtOf(s.listQueuesSQL(t, after, limit))
}

// ReadTasksStmt is the statement ReadTasks runs.
func (s *DB) ReadTasksStmt(t store.Table, q store.QueueKey, after *store.TaskKey, limit int) Stmt {
	return stmtOf(s.readTasksSQL(t, q, after, limit))
}

// DeleteTasksStmts are the statements DeleteTasks runs. Where a limited
// delete probes for the limit-th key first (SQLite), the range delete that
// follows is given with r.Max standing in for the key found.
func (s *DB) DeleteTasksStmts(t store.Table, q store.QueueKey, r store.TaskRange, limit int) []Stmt {
	if limit <= 0 {
		return []Stmt{stmtOf(s.deleteRangeSQL(t, q, r))}
	}
	f := s.d.deleteLimited(s.newBuilder(), t, q, r, limit)
	if f.probe == "" {
		return []Stmt{{SQL: f.stmt, Args: f.args}}
	}
	return []Stmt{{SQL: f.probe, Args: f.probeArg}, stmtOf(s.deleteRangeSQL(t, q, r))}
}

// DeleteTaskKeysStmt is the statement DeleteTaskSets runs for one set of
// keys.
func (s *DB) DeleteTaskKeysStmt(t store.Table, q store.QueueKey, keys []store.TaskKey) Stmt {
	return stmtOf(s.deleteKeysSQL(t, q, keys))
}

// ListTaskQueueIDsStmt is the statement ListTaskQueueIDs runs.
func (s *DB) ListTaskQueueIDsStmt(t store.Table, after *store.QueueKey, limit int) Stmt {
	return stmtOf(s.listTaskQueueIDsSQL(t, after, limit))
}

// Placeholder returns the n-th (1-based) parameter marker of the engine.
func (s *DB) Placeholder(n int) string {
	b := s.newBuilder()
	for range n {
		b.sb.Reset()
		b.p(nil)
	}
	return b.String()
}

// MySQLConfig is the driver configuration Open uses for a mysql:// DSN.
func MySQLConfig(dsn string) (*mysql.Config, error) {
	d, err := ParseDSN(dsn)
	if err != nil {
		return nil, err
	}
	return mysqlConfig(d)
}

// MySQLLockName is the GET_LOCK name of database db.
var MySQLLockName = mysqlLockName

// VersionAtLeast compares Temporal schema versions.
var VersionAtLeast = versionAtLeast

// ScanTasksStmt is the statement ScanTasks runs.
func (s *DB) ScanTasksStmt(t store.Table, after store.TaskPos, through store.QueueKey, limit int) Stmt {
	return stmtOf(s.scanTasksSQL(t, after, through, limit))
}

// DeleteTaskSetsStmt is the first statement DeleteTaskSets runs.
func (s *DB) DeleteTaskSetsStmt(t store.Table, sets []store.TaskSet) Stmt {
	b, _ := s.deleteSetsSQL(t, sets)
	return stmtOf(b)
}

// DeleteQueuesStmt is the statement DeleteQueues runs to delete fences as
// a list.
func (s *DB) DeleteQueuesStmt(t store.Table, fences []store.QueueFence) Stmt {
	return stmtOf(s.deleteQueuesSQL(t, fences))
}

// QueueRangeStmts are the statements of MySQL's locked range delete of the
// n fences from lo to hi: the locking read and the delete.
func (s *DB) QueueRangeStmts(t store.Table, lo, hi store.QueueKey, n int) (lock, del Stmt) {
	l, d := s.queueRangeSQL(t, lo, hi, n)
	return stmtOf(l), stmtOf(d)
}

// QueueRanges counts the batches of queue deletes done as one key range.
func (s *DB) QueueRanges() int64 { return s.queueRanges.Load() }

// SetAfterRangeLock makes f run while a range delete holds its locks.
func (s *DB) SetAfterRangeLock(f func()) { s.afterRangeLock = f }

// SQL returns the store's own pool, for tests that need plain SQL on the
// store's connections (on SQLite, its one connection).
func (s *DB) SQL() *sql.DB { return s.db }

// Wrap is how a store of engine e reports err, a driver's error of a read
// (or, with write, of a write), for tests of error classes made up where
// a real server cannot be made to fail so (a full disk on PostgreSQL).
func Wrap(e Engine, err error, write bool) error {
	s := &DB{d: map[Engine]*dialect{SQLite: sqliteDialect, Postgres: postgresDialect, MySQL: mysqlDialect}[e]}
	if write {
		return s.wrapWrite(context.Background(), "op", err)
	}
	return s.wrap(context.Background(), "op", err)
}

// IdentityLockFile is the lock file named from the identity of the SQLite
// file at path.
func IdentityLockFile(path string) (string, error) {
	id, err := fileIdentity(path)
	return filepath.Join(lockDir(), id+".lock"), err
}

// Cover is cover, as the ranges of its cells, and Ancestors ancestors,
// likewise.
func Cover(r store.HashRange) []store.HashRange { return cellRanges(cover(r)) }

func Ancestors(r store.HashRange) []store.HashRange { return cellRanges(ancestors(cover(r))) }

func cellRanges(cells []cell) []store.HashRange {
	out := make([]store.HashRange, len(cells))
	for i, c := range cells {
		lo := c.index << c.level
		out[i] = store.HashRange{Lo: uint32(lo), Hi: uint32(lo + 1<<c.level - 1)}
	}
	return out
}

// GroupCommits reports the shared write transactions the store committed
// and the writes they held; ok is false where the store has no group
// commit (WAL files, the servers).
func (s *DB) GroupCommits() (commits, writes int64, ok bool) {
	if s.group == nil {
		return 0, 0, false
	}
	return s.group.commits.Load(), s.group.writes.Load(), true
}

// HoldGroup opens a shared write transaction as a write would, and keeps
// it open until release: the writes that join it meanwhile wait for its
// commit. joined reports how many writes have joined it (this one
// included), whether only this one is still running, and whether another
// group has opened after it.
func (s *DB) HoldGroup(ctx context.Context) (joined func() (writes int, idle, next bool), release func(), err error) {
	g, err := s.group.join(ctx)
	if err != nil {
		return nil, nil, err
	}
	joined = func() (int, bool, bool) {
		s.group.mu.Lock()
		defer s.group.mu.Unlock()
		return g.writes, g.inflight == 1, s.group.cur != nil && s.group.cur != g
	}
	release = func() {
		s.group.leave(g)
		<-g.done
	}
	return joined, release, nil
}

// Exec runs a write as the store's methods do.
func (s *DB) Exec(ctx context.Context, q string, args ...any) (int64, error) {
	return s.exec(ctx, q, args)
}

// ProbeQueue is the queue a probe of OpenProbe reads.
func ProbeQueue(p store.Probe) store.QueueKey { return p.(*probe).q }
