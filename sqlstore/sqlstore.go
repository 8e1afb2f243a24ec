// Package sqlstore implements store.Store and store.Writer on Temporal's SQL
// task tables, for SQLite, PostgreSQL and MySQL/MariaDB.
//
// The SQL that is the same on every engine is in this file; what differs
// (placeholders, the fastest limited delete, error classification,
// connection settings) is in one file per engine. Open parses a DSN and
// returns a *DB for any of them.
package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tqscavenger/tqscavenger/store"
)

// Options tune how a database is opened. The zero value is what the
// scavenger wants.
type Options struct {
	// Create allows Open to create a missing SQLite file (seed, demo,
	// schema setup). A file we create is put in WAL mode; an existing
	// file's journal mode is never changed.
	Create bool

	// MaxConns caps open connections on PostgreSQL and MySQL. Default 8.
	// SQLite always uses one connection: it has one writer anyway, and
	// one connection makes writes wait in Go instead of on SQLITE_BUSY.
	MaxConns int

	// StatementTimeout bounds each statement; 0 means no bound. A
	// statement that runs out of time fails with an error wrapping both
	// store.ErrTransient and context.DeadlineExceeded.
	//
	// When a statement's context ends (this timeout or the caller's), the
	// server is told to stop it (PostgreSQL: a cancel request; MySQL: KILL
	// QUERY for writes), so that a write reported as failed does not take
	// effect later, say once a row lock it waited for is released. If it
	// finished first, the call reports its result.
	StatementTimeout time.Duration

	// BusyTimeout is how long SQLite waits for a lock held by another
	// process (such as a running Temporal dev server). Default 5s.
	BusyTimeout time.Duration
}

// DB is a task store on a SQL database. It is safe for concurrent use.
type DB struct {
	db   *sql.DB
	d    *dialect
	dsn  DSN
	opts Options

	mu    sync.Mutex
	stmts map[string]*sql.Stmt

	statements atomic.Int64
	// queueRanges counts batches of queue deletes done as one key range
	// (MySQL); afterRangeLock, if set, runs once their rows are locked.
	// Both are for tests.
	queueRanges    atomic.Int64
	afterRangeLock func()

	// release undoes what Open set up beyond the sql.DB (e.g. a lock file).
	closers []func() error
}

var (
	_ store.Store  = (*DB)(nil)
	_ store.Writer = (*DB)(nil)
)

// ErrUnavailable is wrapped by Open's errors when the database cannot be
// reached or logged in to: a wrong host, password or database name.
var ErrUnavailable = errors.New("database unavailable")

// Open connects to the database named by dsn and checks that it answers.
// It does not check the schema: see Check.
func Open(ctx context.Context, dsn string, opts Options) (*DB, error) {
	d, err := ParseDSN(dsn)
	if err != nil {
		return nil, err
	}
	return OpenDSN(ctx, d, opts)
}

// OpenDSN is Open for a parsed DSN.
func OpenDSN(ctx context.Context, d DSN, opts Options) (*DB, error) {
	if opts.MaxConns <= 0 {
		opts.MaxConns = 8
	}
	if opts.BusyTimeout <= 0 {
		opts.BusyTimeout = 5 * time.Second
	}
	var (
		s   *DB
		err error
	)
	switch d.Engine {
	case SQLite:
		s, err = openSQLite(ctx, d, opts)
	case Postgres:
		s, err = openPostgres(ctx, d, opts)
	case MySQL:
		s, err = openMySQL(ctx, d, opts)
	default:
		err = fmt.Errorf("%w: unknown engine %q", ErrBadDSN, d.Engine)
	}
	if err != nil {
		return nil, err
	}
	return s, nil
}

func newDB(db *sql.DB, d *dialect, dsn DSN, opts Options) *DB {
	return &DB{db: db, d: d, dsn: dsn, opts: opts, stmts: make(map[string]*sql.Stmt)}
}

// Engine reports which engine the store talks to.
func (s *DB) Engine() Engine { return s.d.engine }

// DSN returns the parsed DSN (use its String method for a safe form).
func (s *DB) DSN() DSN { return s.dsn }

// SQL returns the underlying database handle, for tests and tools that
// need plain SQL (the benchmark's raw bound, schema setup).
func (s *DB) SQL() *sql.DB { return s.db }

// Statements returns how many statements the store has issued.
func (s *DB) Statements() int64 { return s.statements.Load() }

// Close closes the database and releases what Open acquired.
func (s *DB) Close() error {
	s.mu.Lock()
	for _, st := range s.stmts {
		st.Close()
	}
	s.stmts = nil
	s.mu.Unlock()
	err := s.db.Close()
	for _, c := range s.closers {
		err = errors.Join(err, c())
	}
	return err
}

// conn is what both *sql.DB and *sql.Tx offer.
type querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// maxPrepared caps the prepared statement cache.
const maxPrepared = 256

// stmt returns a cached prepared statement for query, or nil where the
// dialect does not prepare.
func (s *DB) stmt(ctx context.Context, query string) (*sql.Stmt, error) {
	if !s.d.prepare {
		return nil, nil
	}
	s.mu.Lock()
	st, ok := s.stmts[query]
	full := len(s.stmts) >= maxPrepared
	s.mu.Unlock()
	if ok {
		return st, nil
	}
	if full {
		// Batched statements come in many shapes; past the cap they run
		// unprepared rather than grow the cache without bound.
		return nil, nil
	}
	st, err := s.db.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stmts == nil { // closed meanwhile
		st.Close()
		return nil, sql.ErrConnDone
	}
	if old, ok := s.stmts[query]; ok {
		st.Close()
		return old, nil
	}
	s.stmts[query] = st
	return st, nil
}

// query runs a read on the pool (prepared where the dialect prepares).
func (s *DB) query(ctx context.Context, q string, args []any) (*sql.Rows, error) {
	s.statements.Add(1)
	st, err := s.stmt(ctx, q)
	if err != nil {
		return nil, err
	}
	if st != nil {
		return st.QueryContext(ctx, args...)
	}
	return s.db.QueryContext(ctx, q, args...)
}

// exec runs a write on the pool and returns rows affected.
func (s *DB) exec(ctx context.Context, q string, args []any) (int64, error) {
	s.statements.Add(1)
	st, err := s.stmt(ctx, q)
	if err != nil {
		return 0, err
	}
	var res sql.Result
	if st != nil {
		res, err = st.ExecContext(ctx, args...)
	} else {
		res, err = s.db.ExecContext(ctx, q, args...)
	}
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// wrap turns a driver error into a store error: ctx errors stay as they
// are (a per-statement timeout becomes transient), the rest is classified
// by the dialect.
func (s *DB) wrap(ctx context.Context, op string, err error) error {
	if err == nil {
		return nil
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		if !errors.Is(context.Cause(ctx), errStatementTimeout) {
			return fmt.Errorf("%s: %w", op, ctxErr)
		}
		return fmt.Errorf("%s: statement timeout (%s): %w", op, s.opts.StatementTimeout, mark(store.ErrTransient, ctxErr))
	}
	return fmt.Errorf("%s: %w", op, s.d.classify(err))
}

// errStatementTimeout is the cause of a statement context that ran out of
// Options.StatementTimeout. It is how wrap tells that timeout, which is
// transient, from the caller's own deadline or cancellation, which is not:
// whichever ends the context first is its cause.
var errStatementTimeout = errors.New("statement timeout")

// withStatement prepares ctx for one store call: it applies the statement
// timeout.
func (s *DB) withStatement(ctx context.Context) (context.Context, context.CancelFunc) {
	if s.opts.StatementTimeout > 0 {
		return context.WithTimeoutCause(ctx, s.opts.StatementTimeout, errStatementTimeout)
	}
	return ctx, func() {}
}

func (s *DB) newBuilder() *builder { return &builder{d: s.d} }

// ListQueues implements store.Store. It reads in primary-key order with a
// keyset condition, so each page is an index range scan.
func (s *DB) ListQueues(ctx context.Context, t store.Table, after *store.QueueKey, limit int) ([]store.QueueRow, error) {
	ctx, cancel := s.withStatement(ctx)
	defer cancel()
	b := s.listQueuesSQL(t, after, limit)
	rows, err := s.query(ctx, b.String(), b.args)
	if err != nil {
		return nil, s.wrap(ctx, "list "+queueTable(t), err)
	}
	defer rows.Close()
	out := make([]store.QueueRow, 0, min(limit, maxPrealloc))
	for rows.Next() {
		var (
			r  store.QueueRow
			rh int64
		)
		if err := rows.Scan(&rh, &r.ID, &r.RangeID, &r.Data, &r.Encoding); err != nil {
			return nil, s.wrap(ctx, "list "+queueTable(t), err)
		}
		r.RangeHash = uint32(rh)
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, s.wrap(ctx, "list "+queueTable(t), err)
	}
	return out, nil
}

func (s *DB) listQueuesSQL(t store.Table, after *store.QueueKey, limit int) *builder {
	b := s.newBuilder()
	b.w("SELECT range_hash, task_queue_id, range_id, data, data_encoding FROM ", queueTable(t))
	if after != nil {
		b.w(" WHERE ").gt([]string{"range_hash", "task_queue_id"}, []any{int64(after.RangeHash), after.ID})
	}
	return b.w(" ORDER BY range_hash, task_queue_id LIMIT ").p(limit)
}

// GetQueue implements store.Store.
func (s *DB) GetQueue(ctx context.Context, t store.Table, q store.QueueKey) (store.QueueRow, error) {
	ctx, cancel := s.withStatement(ctx)
	defer cancel()
	b := s.newBuilder()
	b.w("SELECT range_id, data, data_encoding FROM ", queueTable(t), " WHERE ").whereQueue(q)
	rows, err := s.query(ctx, b.String(), b.args)
	if err != nil {
		return store.QueueRow{}, s.wrap(ctx, "get queue", err)
	}
	defer rows.Close()
	r := store.QueueRow{QueueKey: q}
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return r, s.wrap(ctx, "get queue", err)
		}
		return r, fmt.Errorf("get queue %s %s: %w", t, q, store.ErrNotFound)
	}
	if err := rows.Scan(&r.RangeID, &r.Data, &r.Encoding); err != nil {
		return r, s.wrap(ctx, "get queue", err)
	}
	return r, s.wrap(ctx, "get queue", rows.Err())
}

// ReadTasks implements store.Store.
func (s *DB) ReadTasks(ctx context.Context, t store.Table, q store.QueueKey, after *store.TaskKey, limit int) ([]store.TaskRow, error) {
	ctx, cancel := s.withStatement(ctx)
	defer cancel()
	b := s.readTasksSQL(t, q, after, limit)
	rows, err := s.query(ctx, b.String(), b.args)
	if err != nil {
		return nil, s.wrap(ctx, "read "+taskTable(t), err)
	}
	defer rows.Close()
	out := make([]store.TaskRow, 0, min(limit, maxPrealloc))
	for rows.Next() {
		var r store.TaskRow
		if t == store.V2 {
			err = rows.Scan(&r.Key.Pass, &r.Key.ID, &r.Data, &r.Encoding)
		} else {
			err = rows.Scan(&r.Key.ID, &r.Data, &r.Encoding)
		}
		if err != nil {
			return nil, s.wrap(ctx, "read "+taskTable(t), err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, s.wrap(ctx, "read "+taskTable(t), err)
	}
	return out, nil
}

func (s *DB) readTasksSQL(t store.Table, q store.QueueKey, after *store.TaskKey, limit int) *builder {
	b := s.newBuilder()
	b.w("SELECT ", orderBy(t), ", data, data_encoding FROM ", taskTable(t), " WHERE ").queueTasks(t, q, after, ">", nil)
	return b.w(" ORDER BY ", b.taskOrder(t), " LIMIT ").p(limit)
}

// DeleteTasks implements store.Store.
func (s *DB) DeleteTasks(ctx context.Context, t store.Table, q store.QueueKey, r store.TaskRange, limit int) (int64, error) {
	ctx, cancel := s.withStatement(ctx)
	defer cancel()
	op := "delete " + taskTable(t)
	if limit <= 0 {
		return s.deleteTaskSets(ctx, t, []store.TaskSet{{Queue: q, Range: r}})
	}
	f := s.d.deleteLimited(s.newBuilder(), t, q, r, limit)
	if f.probe == "" {
		n, err := s.exec(ctx, f.stmt, f.args)
		return n, s.wrap(ctx, op, err)
	}
	// Probe for the limit-th key, then delete a plain key range up to it:
	// the fastest correct form where DELETE … LIMIT does not exist.
	rows, err := s.query(ctx, f.probe, f.probeArg)
	if err != nil {
		return 0, s.wrap(ctx, op, err)
	}
	max := r.Max // fewer than limit tasks in r: delete all of r
	if rows.Next() {
		if t == store.V2 {
			err = rows.Scan(&max.Pass, &max.ID)
		} else {
			err = rows.Scan(&max.ID)
		}
	}
	if err == nil {
		err = rows.Err()
	}
	rows.Close()
	if err != nil {
		return 0, s.wrap(ctx, op, err)
	}
	b := s.deleteRangeSQL(t, q, store.TaskRange{Min: r.Min, Max: max})
	n, err := s.exec(ctx, b.String(), b.args)
	return n, s.wrap(ctx, op, err)
}

// deleteRangeSQL deletes every task of q inside r.
func (s *DB) deleteRangeSQL(t store.Table, q store.QueueKey, r store.TaskRange) *builder {
	b := s.newBuilder()
	return b.w("DELETE FROM ", taskTable(t), " WHERE ").whereQueue(q).w(" AND ").taskRange(t, r)
}

// deleteKeysSQL deletes the tasks of q with the given keys.
func (s *DB) deleteKeysSQL(t store.Table, q store.QueueKey, keys []store.TaskKey) *builder {
	b := s.newBuilder()
	return b.w("DELETE FROM ", taskTable(t), " WHERE ").whereQueue(q).w(" AND ").keyIn(t, keys)
}

// CompleteTasks implements store.Writer.
func (s *DB) CompleteTasks(ctx context.Context, t store.Table, q store.QueueKey, through store.TaskKey) (int64, error) {
	ctx, cancel := s.withStatement(ctx)
	defer cancel()
	b := s.deleteRangeSQL(t, q, store.TaskRange{Max: through})
	n, err := s.exec(ctx, b.String(), b.args)
	return n, s.wrap(ctx, "delete "+taskTable(t), err)
}

// CreateQueue implements store.Writer.
func (s *DB) CreateQueue(ctx context.Context, t store.Table, row store.QueueRow) error {
	ctx, cancel := s.withStatement(ctx)
	defer cancel()
	b := s.newBuilder()
	b.w("INSERT INTO ", queueTable(t), " (range_hash, task_queue_id, range_id, data, data_encoding) VALUES (").
		p(int64(row.RangeHash)).w(", ").p(row.ID).w(", ").p(row.RangeID).w(", ").p(row.Data).w(", ").p(row.Encoding).w(")")
	_, err := s.exec(ctx, b.String(), b.args)
	return s.wrap(ctx, "create queue "+row.QueueKey.String(), err)
}

// UpdateQueue implements store.Writer.
func (s *DB) UpdateQueue(ctx context.Context, t store.Table, row store.QueueRow, prevRangeID int64) error {
	ctx, cancel := s.withStatement(ctx)
	defer cancel()
	b := s.newBuilder()
	b.w("UPDATE ", queueTable(t), " SET range_id = ").p(row.RangeID).w(", data = ").p(row.Data).
		w(", data_encoding = ").p(row.Encoding).w(" WHERE ").whereQueue(row.QueueKey).w(" AND range_id = ").p(prevRangeID)
	n, err := s.exec(ctx, b.String(), b.args)
	if err != nil {
		return s.wrap(ctx, "update queue", err)
	}
	if n == 0 {
		return fmt.Errorf("update %s %s at range_id %d: %w", queueTable(t), row.QueueKey, prevRangeID, store.ErrConditionFailed)
	}
	return nil
}

// AppendTasks implements store.Writer.
func (s *DB) AppendTasks(ctx context.Context, t store.Table, owner store.QueueKey, rangeID int64, target store.QueueKey, tasks []store.TaskRow) (err error) {
	ctx, cancel := s.withStatement(ctx)
	defer cancel()
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return s.wrap(ctx, "append tasks: begin", err)
	}
	defer func() {
		if err != nil {
			tx.Rollback()
		}
	}()
	b := s.newBuilder()
	b.w("SELECT range_id FROM ", queueTable(t), " WHERE ").whereQueue(owner).w(s.d.forUpdate)
	s.statements.Add(1)
	var got int64
	if err := tx.QueryRowContext(ctx, b.String(), b.args...).Scan(&got); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("append tasks: queue %s %s is gone: %w", t, owner, store.ErrConditionFailed)
		}
		return s.wrap(ctx, "append tasks: fence", err)
	}
	if got != rangeID {
		return fmt.Errorf("append tasks: queue %s %s has range_id %d, want %d: %w", t, owner, got, rangeID, store.ErrConditionFailed)
	}
	for len(tasks) > 0 {
		n := min(len(tasks), 200)
		b.reset()
		b.w("INSERT INTO ", taskTable(t), " (range_hash, task_queue_id, ", orderBy(t), ", data, data_encoding) VALUES ")
		for i, task := range tasks[:n] {
			if i > 0 {
				b.w(", ")
			}
			b.w("(").p(int64(target.RangeHash)).w(", ").p(target.ID).w(", ")
			if t == store.V2 {
				b.p(task.Key.Pass).w(", ")
			}
			b.p(task.Key.ID).w(", ").p(task.Data).w(", ").p(task.Encoding).w(")")
		}
		s.statements.Add(1)
		if _, err := tx.ExecContext(ctx, b.String(), b.args...); err != nil {
			return s.wrap(ctx, "append tasks", err)
		}
		tasks = tasks[n:]
	}
	s.statements.Add(1)
	return s.wrap(ctx, "append tasks: commit", tx.Commit())
}

// Tables implements store.Store.
func (s *DB) Tables(ctx context.Context) ([]store.Table, error) {
	ctx, cancel := s.withStatement(ctx)
	defer cancel()
	s.statements.Add(1)
	names, err := s.tableNames(ctx)
	if err != nil {
		return nil, err
	}
	var out []store.Table
	if names["task_queues"] && names["tasks"] {
		out = append(out, store.V1)
	}
	if names["task_queues_v2"] && names["tasks_v2"] {
		out = append(out, store.V2)
	}
	return out, nil
}

// ListTaskQueueIDs implements store.Store. The distinct ids come from the
// primary key in order (an index scan that stops at limit ids), and the
// existence of an exact queue row is a point lookup per id, in the same
// statement.
func (s *DB) ListTaskQueueIDs(ctx context.Context, t store.Table, after *store.QueueKey, limit int) ([]store.TaskQueueRef, error) {
	if limit <= 0 {
		return nil, nil // the recursive form always yields its first row
	}
	ctx, cancel := s.withStatement(ctx)
	defer cancel()
	b := s.listTaskQueueIDsSQL(t, after, limit)
	op := "list task queue ids of " + taskTable(t)
	rows, err := s.query(ctx, b.String(), b.args)
	if err != nil {
		return nil, s.wrap(ctx, op, err)
	}
	defer rows.Close()
	var out []store.TaskQueueRef
	for rows.Next() {
		var (
			r   store.TaskQueueRef
			rh  int64
			has int
		)
		if err := rows.Scan(&rh, &r.ID, &has); err != nil {
			return nil, s.wrap(ctx, op, err)
		}
		r.RangeHash, r.HasQueueRow = uint32(rh), has == 1
		out = append(out, r)
	}
	return out, s.wrap(ctx, op, rows.Err())
}

func (s *DB) listTaskQueueIDsSQL(t store.Table, after *store.QueueKey, limit int) *builder {
	b := s.newBuilder()
	if s.d.listTaskQueueIDs != nil {
		return s.d.listTaskQueueIDs(b, t, after, limit)
	}
	b.w("SELECT d.range_hash, d.task_queue_id, CASE WHEN EXISTS (SELECT 1 FROM ", queueTable(t),
		" q WHERE q.range_hash = d.range_hash AND q.task_queue_id = d.task_queue_id) THEN 1 ELSE 0 END FROM (SELECT DISTINCT range_hash, task_queue_id FROM ", taskTable(t))
	if after != nil {
		b.w(" WHERE ").gt([]string{"range_hash", "task_queue_id"}, []any{int64(after.RangeHash), after.ID})
	}
	return b.w(" ORDER BY range_hash, task_queue_id LIMIT ").p(limit).w(") d ORDER BY d.range_hash, d.task_queue_id")
}

// DeleteOrphanTasks implements store.Store.
func (s *DB) DeleteOrphanTasks(ctx context.Context, t store.Table, q store.QueueKey, parents []store.QueueKey, keys []store.TaskKey) (int64, error) {
	ctx, cancel := s.withStatement(ctx)
	defer cancel()
	var total int64
	for len(keys) > 0 {
		n := min(len(keys), 500)
		b := s.newBuilder()
		b.w("DELETE FROM ", taskTable(t), " WHERE ").whereQueue(q).w(" AND ").keyIn(t, keys[:n])
		for _, p := range parents {
			// MySQL cannot reference the target table in a subquery of a
			// DELETE, but the queue table is another table.
			b.w(" AND NOT EXISTS (SELECT 1 FROM ", queueTable(t), " WHERE range_hash = ").p(int64(p.RangeHash)).
				w(" AND task_queue_id = ").p(p.ID).w(")")
		}
		d, err := s.exec(ctx, b.String(), b.args)
		total += d
		if err != nil {
			return total, s.wrap(ctx, "delete orphans of "+taskTable(t), err)
		}
		keys = keys[n:]
	}
	return total, nil
}
