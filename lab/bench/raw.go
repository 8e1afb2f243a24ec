package bench

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/tqscavenger/tqscavenger/scavenger"
	"github.com/tqscavenger/tqscavenger/sqlstore"
	"github.com/tqscavenger/tqscavenger/store"
	"github.com/tqscavenger/tqscavenger/wire"
)

// Defaults of RawConfig.
const (
	DefaultRawPageSize  = 10_000
	DefaultRawBatchSize = 1000
	// maxSpans caps the key ranges OR'ed into one delete, so that a
	// statement stays cheap to plan when live rows break the runs up.
	maxSpans = 100
)

// RawConfig configures Raw.
type RawConfig struct {
	// Now decides expiry and idleness. Default time.Now().
	Now time.Time
	// Grace is how long a queue must have been idle to be deleted when
	// empty. Default 48h, as the scavenger.
	Grace time.Duration
	// PageSize is how many rows one read returns; BatchSize how many rows
	// one delete removes at most. Defaults DefaultRawPageSize and
	// DefaultRawBatchSize.
	PageSize, BatchSize int
	// Safe makes it the safe raw bound: the same least work plus what a
	// scavenger beside a live Temporal must do. Queue rows are deleted
	// fenced on the range_id read (the store's DeleteQueues, the form the
	// scavenger uses), and after the deletes the task table's queue ids are
	// walked once for orphans (the store's ListTaskQueueIDs in pages of
	// 1,000, as the scavenger's orphan re-check).
	Safe bool
	// TxBudget, if positive, runs the deletes in transactions of several
	// statements, each committed once it has been open this long: the
	// best safe commit pattern where every commit costs fsyncs (SQLite's
	// rollback journal). It bounds how long the write lock is held to
	// about TxBudget plus one statement. Default 0: every statement
	// commits on its own.
	TxBudget time.Duration
}

// RawStats are the counts of a raw pass, with the JSON names of `run
// --stats-json`.
type RawStats struct {
	Statements     int64         `json:"statements"`
	TasksProcessed int64         `json:"tasks_processed"`
	TasksDeleted   int64         `json:"tasks_deleted"`
	QueuesListed   int64         `json:"queues_listed"`
	QueuesDeleted  int64         `json:"queues_deleted"`
	Orphans        int64         `json:"orphans_found"`
	Elapsed        time.Duration `json:"-"`
	ElapsedSeconds float64       `json:"elapsed_seconds"`
}

// Raw is the raw bound: the least work any scavenger must do to delete
// what tqscavenger's rules say must go from the v1 tables of db, with
// every expired task deleted wherever it sits (as --past-live-head does).
//
// It reads the task table once in primary-key order, in pages of
// PageSize rows, decoding only each blob's expiry. Consecutive expired
// rows form key ranges, deleted with plain SQL, up to BatchSize rows per
// statement: a range per run of expired tasks, which a B-tree deletes
// without looking anything up. Then it reads the queue table the same way
// and deletes, again by key range, the rows that are idle past the grace,
// own no task left in any subqueue and do not claim tasks in the other
// table version.
//
// It knows nothing a real scavenger could not know, but it does without
// what one must do to be safe beside a running Temporal: it does not
// fence queue deletes on range_id, re-check orphans or look at the v2
// tables (the benchmark seeds v1 only), and it holds the keys of the
// queues that keep tasks in memory.
func Raw(ctx context.Context, db *sqlstore.DB, cfg RawConfig) (RawStats, error) {
	if cfg.Now.IsZero() {
		cfg.Now = time.Now()
	}
	if cfg.Grace <= 0 {
		cfg.Grace = 48 * time.Hour
	}
	if cfg.PageSize <= 0 {
		cfg.PageSize = DefaultRawPageSize
	}
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = DefaultRawBatchSize
	}
	// The raw bound's statements go through a pool of its own, with the
	// connections of the store's (sqlstore.Connector).
	h, err := openSQLDSN(ctx, db.DSN(), sqlstore.Options{})
	if err != nil {
		return RawStats{}, err
	}
	defer h.Close()
	start := time.Now()
	p := &rawPass{db: h, store: db, engine: db.Engine(), cfg: cfg, nonEmpty: map[string]struct{}{}}
	err = p.tasks(ctx)
	if err == nil {
		err = p.queues(ctx)
	}
	if err == nil {
		err = p.commit()
	}
	if err == nil && cfg.Safe {
		err = p.orphanWalk(ctx)
	}
	if p.tx != nil {
		p.tx.Rollback()
	}
	p.st.Elapsed = time.Since(start)
	p.st.ElapsedSeconds = p.st.Elapsed.Seconds()
	return p.st, err
}

type rawPass struct {
	db     *sql.DB
	store  *sqlstore.DB // for the safe bound's fenced deletes and orphan walk
	engine sqlstore.Engine
	cfg    RawConfig
	st     RawStats
	// nonEmpty holds the ids of queue rows that keep a task.
	nonEmpty map[string]struct{}
	// tx is the open transaction of TxBudget, begun at txStart.
	tx      *sql.Tx
	txStart time.Time
	// fences are the safe bound's queue rows to delete; pageDone, if
	// set, runs after each page's deletes (last: the sweep's last page).
	fences   []store.QueueFence
	pageDone func(ctx context.Context, last bool) error
}

// conn is what the pass's statements run on: the open transaction, if
// any (SQLite has one connection), else the pool.
func (p *rawPass) conn() interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
	ExecContext(context.Context, string, ...any) (sql.Result, error)
} {
	if p.tx != nil {
		return p.tx
	}
	return p.db
}

// exec runs a delete, in a transaction of TxBudget if there is one.
func (p *rawPass) exec(ctx context.Context, q string, args []any) (int64, error) {
	if p.cfg.TxBudget > 0 && p.tx == nil {
		tx, err := p.db.BeginTx(ctx, nil) // SQLite: BEGIN IMMEDIATE
		if err != nil {
			return 0, err
		}
		p.tx, p.txStart = tx, time.Now()
	}
	p.st.Statements++
	res, err := p.conn().ExecContext(ctx, q, args...)
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	if err == nil && p.tx != nil && time.Since(p.txStart) >= p.cfg.TxBudget {
		err = p.commit()
	}
	return n, err
}

// commit commits the open transaction, if any.
func (p *rawPass) commit() error {
	if p.tx == nil {
		return nil
	}
	tx := p.tx
	p.tx = nil
	p.st.Statements++
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("raw: commit: %w", err)
	}
	return nil
}

// flushFences deletes the safe bound's queue rows, fenced on range_id,
// BatchSize per call of the store.
func (p *rawPass) flushFences(ctx context.Context) error {
	if len(p.fences) == 0 {
		return nil
	}
	// The store has a connection of its own: on SQLite it needs the
	// write lock this pass's transaction holds.
	if err := p.commit(); err != nil {
		return err
	}
	before := p.store.Stats().Statements
	n, err := p.store.DeleteQueues(ctx, store.V1, p.fences)
	p.st.Statements += p.store.Stats().Statements - before
	p.st.QueuesDeleted += n
	p.fences = p.fences[:0]
	if err != nil {
		return fmt.Errorf("raw: delete queues: %w", err)
	}
	return nil
}

// orphanWalk walks the task table's distinct queue ids, as the
// scavenger's orphan re-check does, resolving the parents of the ids
// without a queue row of their own, and counts the orphans it finds (the
// seeded cases have none; the bound deletes none).
func (p *rawPass) orphanWalk(ctx context.Context) error {
	var after *store.QueueKey
	for {
		before := p.store.Stats().Statements
		refs, err := p.store.ListTaskQueueIDs(ctx, store.V1, after, 1000)
		if err != nil {
			p.st.Statements += p.store.Stats().Statements - before
			return fmt.Errorf("raw: orphan walk: %w", err)
		}
		for _, r := range refs {
			if r.HasQueueRow {
				continue
			}
			// A subqueue k > 0, or an orphan: look its parents up, as
			// the scavenger does.
			_, orphan, err := scavenger.ResolveParents(ctx, p.store, store.V1, r.QueueKey)
			if err != nil {
				p.st.Statements += p.store.Stats().Statements - before
				return fmt.Errorf("raw: orphan walk: %w", err)
			}
			if orphan {
				p.st.Orphans++
			}
		}
		p.st.Statements += p.store.Stats().Statements - before
		if len(refs) < 1000 {
			return nil
		}
		after = &refs[len(refs)-1].QueueKey
	}
}

// rowKey is a primary key: (range_hash, task_queue_id), and task_id for
// a task.
type rowKey struct {
	rangeHash int64
	id        []byte
	taskID    int64
}

// keyed is a row read, and whether it goes.
type keyed struct {
	key  rowKey
	gone bool
}

var (
	taskCols  = []string{"range_hash", "task_queue_id", "task_id"}
	queueCols = []string{"range_hash", "task_queue_id"}
)

// tasks reads the task table and deletes the expired tasks.
func (p *rawPass) tasks(ctx context.Context) error {
	var (
		lastEnc []byte
		encStr  string
		lastID  []byte
	)
	n, err := p.sweep(ctx, "tasks", taskCols, "data_encoding, data", func(rows *sql.Rows) (keyed, error) {
		var (
			k         rowKey
			enc, data sql.RawBytes
		)
		if err := rows.Scan(&k.rangeHash, &k.id, &k.taskID, &enc, &data); err != nil {
			return keyed{}, err
		}
		if !bytes.Equal(enc, lastEnc) {
			lastEnc, encStr = append(lastEnc[:0], enc...), string(enc)
		}
		p.st.TasksProcessed++
		t, err := wire.DecodeTaskTimes(encStr, data)
		gone := err == nil && wire.Expired(t.ExpiryTime, p.cfg.Now)
		if !gone && !bytes.Equal(k.id, lastID) {
			// A task stays: the queue owning this (sub)queue is not
			// empty. Which row owns it is ambiguous for some names;
			// keep every candidate.
			for _, c := range wire.CandidateParents(k.id) {
				p.nonEmpty[string(c.QueueID)] = struct{}{}
			}
			lastID = k.id
		}
		return keyed{key: k, gone: gone}, nil
	})
	p.st.TasksDeleted = n
	return err
}

// queues reads the queue table and deletes the queue rows that are idle
// and empty.
func (p *rawPass) queues(ctx context.Context) error {
	if p.cfg.Safe {
		// The fenced deletes go after each page is read: on SQLite the
		// store's connection cannot write while this one reads in
		// rollback-journal mode.
		p.pageDone = func(ctx context.Context, last bool) error {
			if last || len(p.fences) >= p.cfg.BatchSize {
				return p.flushFences(ctx)
			}
			return nil
		}
	}
	n, err := p.sweep(ctx, "task_queues", queueCols, "range_id, data_encoding, data", func(rows *sql.Rows) (keyed, error) {
		var (
			k       rowKey
			rangeID int64
			enc     string
			data    sql.RawBytes
		)
		if err := rows.Scan(&k.rangeHash, &k.id, &rangeID, &enc, &data); err != nil {
			return keyed{}, err
		}
		p.st.QueuesListed++
		info, err := wire.DecodeTaskQueueInfo(enc, data)
		_, kept := p.nonEmpty[string(k.id)]
		gone := err == nil && !kept && !info.OtherHasTasks && p.cfg.Now.Sub(info.LastUpdateTime) >= p.cfg.Grace
		if gone && p.cfg.Safe {
			p.fences = append(p.fences, store.QueueFence{QueueKey: store.QueueKey{RangeHash: uint32(k.rangeHash), ID: bytes.Clone(k.id)}, RangeID: rangeID})
			gone = false // deleted fenced, not by key range
		}
		return keyed{key: k, gone: gone}, nil
	})
	p.st.QueuesDeleted += n
	return err
}

// sweep reads table in primary-key order (its key columns cols, then
// rest), PageSize rows a statement, turns each row into a keyed one with
// row, and deletes the rows that go by key range. It returns how many rows
// it deleted.
func (p *rawPass) sweep(ctx context.Context, table string, cols []string, rest string, row func(*sql.Rows) (keyed, error)) (int64, error) {
	del := &spans{p: p, table: table, cols: cols}
	var after *rowKey
	page := make([]keyed, 0, p.cfg.PageSize)
	for {
		page = page[:0]
		key := strings.Join(cols, ", ")
		b := p.sql().w("SELECT " + key + ", " + rest + " FROM " + table)
		if after != nil {
			b.w(" WHERE ").cmp(cols, after.vals(cols), ">")
		}
		b.w(" ORDER BY " + key + " LIMIT " + strconv.Itoa(p.cfg.PageSize))
		err := p.query(ctx, b, func(rows *sql.Rows) error {
			r, err := row(rows)
			if err != nil {
				return err
			}
			page = append(page, r)
			return nil
		})
		if err != nil {
			return del.deleted, fmt.Errorf("raw: read %s: %w", table, err)
		}
		// The deletes wait for the read to finish: SQLite has one
		// connection, and deleting behind the keyset cursor does not move it.
		for _, r := range page {
			if err := del.add(ctx, r); err != nil {
				return del.deleted, err
			}
		}
		last := len(page) < p.cfg.PageSize
		if p.pageDone != nil {
			if err := del.flush(ctx); err != nil {
				return del.deleted, err
			}
			if err := p.pageDone(ctx, last); err != nil {
				return del.deleted, err
			}
		}
		if last {
			break
		}
		after = &page[len(page)-1].key
	}
	err := del.flush(ctx)
	return del.deleted, err
}

// query runs a read and calls f for each row.
func (p *rawPass) query(ctx context.Context, b *sqlBuf, f func(*sql.Rows) error) error {
	p.st.Statements++
	rows, err := p.conn().QueryContext(ctx, b.String(), b.args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := f(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

func (p *rawPass) sql() *sqlBuf { return &sqlBuf{engine: p.engine} }

// vals returns the key's values for cols.
func (k rowKey) vals(cols []string) []any {
	v := []any{k.rangeHash, k.id, k.taskID}
	return v[:len(cols)]
}

// span is a run of consecutive rows in key order that all go.
type span struct{ lo, hi rowKey }

// spans gathers the runs of rows that go and deletes them, up to
// BatchSize rows and maxSpans runs per statement.
type spans struct {
	p       *rawPass
	table   string
	cols    []string
	runs    []span
	open    bool // the last run may grow
	rows    int
	deleted int64
}

// add takes the next row in key order.
func (s *spans) add(ctx context.Context, r keyed) error {
	if !r.gone {
		s.open = false
		if len(s.runs) >= maxSpans {
			return s.flush(ctx)
		}
		return nil
	}
	if s.open {
		s.runs[len(s.runs)-1].hi = r.key
	} else {
		s.runs = append(s.runs, span{lo: r.key, hi: r.key})
		s.open = true
	}
	s.rows++
	if s.rows >= s.p.cfg.BatchSize {
		return s.flush(ctx)
	}
	return nil
}

// flush deletes the gathered runs in one statement.
func (s *spans) flush(ctx context.Context) error {
	if len(s.runs) == 0 {
		return nil
	}
	b := s.p.sql().w("DELETE FROM " + s.table + " WHERE ")
	for i, r := range s.runs {
		if i > 0 {
			b.w(" OR ")
		}
		b.w("(")
		sameQueue := r.lo.rangeHash == r.hi.rangeHash && bytes.Equal(r.lo.id, r.hi.id)
		switch {
		case sameQueue && len(s.cols) == 2:
			b.w("range_hash = ").p(r.lo.rangeHash).w(" AND task_queue_id = ").p(r.lo.id)
		case sameQueue && r.lo.taskID == r.hi.taskID:
			b.w("range_hash = ").p(r.lo.rangeHash).w(" AND task_queue_id = ").p(r.lo.id).w(" AND task_id = ").p(r.lo.taskID)
		case sameQueue:
			b.w("range_hash = ").p(r.lo.rangeHash).w(" AND task_queue_id = ").p(r.lo.id).
				w(" AND task_id >= ").p(r.lo.taskID).w(" AND task_id <= ").p(r.hi.taskID)
		default:
			b.cmp(s.cols, r.lo.vals(s.cols), ">=").w(" AND ").cmp(s.cols, r.hi.vals(s.cols), "<=")
		}
		b.w(")")
	}
	s.runs, s.open, s.rows = s.runs[:0], false, 0
	n, err := s.p.exec(ctx, b.String(), b.args)
	if err != nil {
		return fmt.Errorf("raw: delete from %s: %w", s.table, err)
	}
	s.deleted += n
	return nil
}

// sqlBuf builds a statement and its arguments for one engine.
type sqlBuf struct {
	engine sqlstore.Engine
	b      strings.Builder
	args   []any
}

func (s *sqlBuf) String() string { return s.b.String() }

func (s *sqlBuf) w(str string) *sqlBuf {
	s.b.WriteString(str)
	return s
}

// p writes a placeholder for v.
func (s *sqlBuf) p(v any) *sqlBuf {
	s.args = append(s.args, v)
	if s.engine == sqlstore.Postgres {
		s.b.WriteString("$" + strconv.Itoa(len(s.args)))
	} else {
		s.b.WriteByte('?')
	}
	return s
}

// cmp writes (cols) op (vals) for op >, >= or <=: a row comparison where
// the engine turns one into an index range (SQLite, PostgreSQL), spelled
// out column by column on MySQL, whose range optimizer does not take row
// comparisons.
func (s *sqlBuf) cmp(cols []string, vals []any, op string) *sqlBuf {
	if s.engine != sqlstore.MySQL {
		s.w("(" + strings.Join(cols, ", ") + ") " + op + " (")
		for i, v := range vals {
			if i > 0 {
				s.w(", ")
			}
			s.p(v)
		}
		return s.w(")")
	}
	strict := op[:1]
	var expand func(i int)
	expand = func(i int) {
		if i == len(cols)-1 {
			s.w(cols[i] + " " + op + " ").p(vals[i])
			return
		}
		s.w("(" + cols[i] + " " + strict + " ").p(vals[i]).w(" OR (" + cols[i] + " = ").p(vals[i]).w(" AND ")
		expand(i + 1)
		s.w("))")
	}
	expand(0)
	return s
}
