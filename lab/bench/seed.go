package bench

import (
	"context"
	"database/sql"
	"fmt"
	"iter"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/tqscavenger/tqscavenger/seed"
	"github.com/tqscavenger/tqscavenger/sqlstore"
	"github.com/tqscavenger/tqscavenger/wire"
)

// namePrefix names the seeded queues bench-0, bench-1, …
const namePrefix = "bench"

// The kinds of seeded task, as in package seed.
const (
	kindExpired = iota
	kindNoExpiry
	kindFuture
)

// kinds returns the kind of each task of one queue, in task id order, the
// way package seed lays them out for c's shares and layout.
func kinds(c Case) []uint8 {
	n := c.TasksPerQueue
	ne := int(float64(n)*c.Expired + 0.5)
	nn := min(int(float64(n)*c.NoExpiry+0.5), n-ne)
	ks := make([]uint8, 0, n)
	if c.Layout == seed.LiveFirst && nn > 0 {
		ks = append(ks, kindNoExpiry)
		nn--
	}
	for range ne {
		ks = append(ks, kindExpired)
	}
	for range nn {
		ks = append(ks, kindNoExpiry)
	}
	for len(ks) < n {
		ks = append(ks, kindFuture)
	}
	return ks
}

// Rows per INSERT statement and per transaction. Big transactions of big
// statements are what makes seeding a million rows take seconds.
const (
	insertRows = 1000
	txRows     = 50_000
)

// seedDatabase writes c's queues and tasks into the empty task tables of
// dsn, in the same format as package seed (queue names bench-N): with
// COPY on PostgreSQL, multi-row INSERTs in large transactions elsewhere,
// instead of seed.Write's fenced appends.
func seedDatabase(ctx context.Context, dsn string, c Case, now time.Time) error {
	db, engine, err := openSQL(ctx, dsn, sqlstore.Options{Create: true})
	if err != nil {
		return err
	}
	defer db.Close()
	g := newRows(c, now)
	if engine == sqlstore.Postgres {
		return copyRows(ctx, db, g)
	}
	w := &seedWriter{db: db, engine: engine}
	for _, t := range []struct {
		table string
		rows  iter.Seq[[]any]
	}{{"task_queues", g.queues()}, {"tasks", g.tasks()}} {
		in := w.inserter(t.table, g.cols(t.table)...)
		for row := range t.rows {
			if err := w.add(ctx, in, row...); err != nil {
				return err
			}
		}
		if err := w.flush(ctx, in); err != nil {
			return err
		}
	}
	return w.commit()
}

// copyRows writes the rows with COPY, table by table.
func copyRows(ctx context.Context, db *sql.DB, g *rows) error {
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	return conn.Raw(func(dc any) error {
		sc, ok := dc.(*stdlib.Conn)
		if !ok {
			return fmt.Errorf("seed: PostgreSQL connection is a %T, not pgx's", dc)
		}
		for _, t := range []struct {
			table string
			rows  iter.Seq[[]any]
		}{{"task_queues", g.queues()}, {"tasks", g.tasks()}} {
			next, stop := iter.Pull(t.rows)
			_, err := sc.Conn().CopyFrom(ctx, pgx.Identifier{t.table}, g.cols(t.table), pgx.CopyFromFunc(func() ([]any, error) {
				row, ok := next()
				if !ok {
					return nil, nil
				}
				return row, nil
			}))
			stop()
			if err != nil {
				return fmt.Errorf("seed: copy into %s: %w", t.table, err)
			}
		}
		return nil
	})
}

// rows generates the rows of a case queue by queue, in the order the
// queues were created (see queueOrder), each queue's tasks by task id.
// Only the queues' (range_hash, index) pairs are held in memory.
type rows struct {
	c       Case
	order   []queueRef
	kinds   []uint8
	rangeID int64
	created time.Time
	expiry  [3]time.Time
	qinfo   wire.TaskQueueInfo
}

func newRows(c Case, now time.Time) *rows {
	return &rows{
		c:       c,
		order:   queueOrder(c.Queues),
		kinds:   kinds(c),
		rangeID: int64(1 + c.TasksPerQueue/100000),
		created: now.Add(-idleAge - time.Hour),
		expiry:  [3]time.Time{kindExpired: now.Add(-idleAge - time.Minute), kindFuture: now.Add(time.Hour)},
		qinfo: wire.TaskQueueInfo{
			NamespaceID:    seed.DefaultNamespace.String(),
			TaskType:       wire.TaskTypeActivity,
			Kind:           wire.KindNormal,
			LastUpdateTime: now.Add(-idleAge),
			Subqueues:      []wire.SubqueueInfo{{Priority: 3}},
		},
	}
}

// cols are the columns of the rows of table, in the order they come.
func (g *rows) cols(table string) []string {
	if table == "tasks" {
		return []string{"range_hash", "task_queue_id", "task_id", "data", "data_encoding"}
	}
	return []string{"range_hash", "task_queue_id", "range_id", "data", "data_encoding"}
}

func queueName(i uint32) string { return namePrefix + "-" + strconv.Itoa(int(i)) }

func (g *rows) queues() iter.Seq[[]any] {
	return func(yield func([]any) bool) {
		info := g.qinfo
		for _, q := range g.order {
			info.Name = queueName(q.index)
			id := wire.QueueID(seed.DefaultNamespace, info.Name, wire.TaskTypeActivity, 0)
			if !yield([]any{int64(q.rangeHash), id, g.rangeID, wire.EncodeTaskQueueInfo(info), wire.EncodingProto3}) {
				return
			}
		}
	}
}

func (g *rows) tasks() iter.Seq[[]any] {
	return func(yield func([]any) bool) {
		ns := seed.DefaultNamespace.String()
		for _, q := range g.order {
			name := queueName(q.index)
			id := wire.QueueID(seed.DefaultNamespace, name, wire.TaskTypeActivity, 0)
			for i, k := range g.kinds {
				t := wire.AllocatedTaskInfo{
					TaskID: int64(i + 1),
					Data: wire.TaskInfo{
						NamespaceID:      ns,
						WorkflowID:       "wf-" + name + "-" + strconv.Itoa(i),
						RunID:            "run-0",
						ScheduledEventID: 5,
						CreateTime:       g.created,
						ExpiryTime:       g.expiry[k],
					},
				}
				if !yield([]any{int64(q.rangeHash), id, t.TaskID, wire.EncodeAllocatedTaskInfo(t), wire.EncodingProto3}) {
					return
				}
			}
		}
	}
}

// queueRef is a queue by its index in the case, with its range_hash.
type queueRef struct {
	rangeHash, index uint32
}

// queueOrder returns the queues 0..n-1 in the order they are written:
// the order of their creation, as a Temporal cluster writes its queues
// over time. Their primary keys, led by a hash, are in random order, so
// rows next to each other in a key range lie apart on disk (SQLite's and
// PostgreSQL's tables keep insertion order), as in a real database.
func queueOrder(n int) []queueRef {
	ns := seed.DefaultNamespace
	refs := make([]queueRef, n)
	for i := range refs {
		refs[i] = queueRef{rangeHash: wire.RangeHash(wire.QueueID(ns, queueName(uint32(i)), wire.TaskTypeActivity, 0)), index: uint32(i)}
	}
	return refs
}

// seedWriter batches rows into multi-row INSERTs inside transactions of
// about txRows rows.
type seedWriter struct {
	db     *sql.DB
	engine sqlstore.Engine
	tx     *sql.Tx
	inTx   int
}

// inserter buffers the rows of one table.
type inserter struct {
	table string
	cols  []string
	args  []any
	full  string // the statement for a full batch, built once
}

func (w *seedWriter) inserter(table string, cols ...string) *inserter {
	in := &inserter{table: table, cols: cols, args: make([]any, 0, insertRows*len(cols))}
	in.full = w.insertSQL(in, insertRows)
	return in
}

// insertSQL is INSERT INTO table (cols) VALUES (…), … for rows rows.
func (w *seedWriter) insertSQL(in *inserter, rows int) string {
	var b strings.Builder
	b.WriteString("INSERT INTO " + in.table + " (" + strings.Join(in.cols, ", ") + ") VALUES ")
	n := 0
	for r := range rows {
		if r > 0 {
			b.WriteString(", ")
		}
		b.WriteByte('(')
		for c := range in.cols {
			if c > 0 {
				b.WriteString(", ")
			}
			n++
			if w.engine == sqlstore.Postgres {
				b.WriteString("$" + strconv.Itoa(n))
			} else {
				b.WriteByte('?')
			}
		}
		b.WriteByte(')')
	}
	return b.String()
}

func (w *seedWriter) add(ctx context.Context, in *inserter, vals ...any) error {
	in.args = append(in.args, vals...)
	if len(in.args) < insertRows*len(in.cols) {
		return nil
	}
	return w.flush(ctx, in)
}

// flush writes the buffered rows of in, and commits once the transaction
// holds enough rows.
func (w *seedWriter) flush(ctx context.Context, in *inserter) error {
	rows := len(in.args) / len(in.cols)
	if rows == 0 {
		return nil
	}
	if w.tx == nil {
		tx, err := w.db.BeginTx(ctx, nil)
		if err != nil {
			return fmt.Errorf("seed: begin: %w", err)
		}
		w.tx, w.inTx = tx, 0
	}
	q := in.full
	if rows != insertRows {
		q = w.insertSQL(in, rows)
	}
	if _, err := w.tx.ExecContext(ctx, q, in.args...); err != nil {
		w.tx.Rollback()
		w.tx = nil
		return fmt.Errorf("seed: insert into %s: %w", in.table, err)
	}
	in.args = in.args[:0]
	w.inTx += rows
	if w.inTx >= txRows {
		return w.commit()
	}
	return nil
}

func (w *seedWriter) commit() error {
	if w.tx == nil {
		return nil
	}
	err := w.tx.Commit()
	w.tx = nil
	if err != nil {
		return fmt.Errorf("seed: commit: %w", err)
	}
	return nil
}
