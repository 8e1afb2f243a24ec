// This file owns what differs between engines (the dialect) and the
// builder that writes a statement in an engine's dialect.

package sqlstore

import (
	"context"
	"database/sql"
	"strconv"
	"strings"

	"github.com/tqscavenger/tqscavenger/store"
)

// dialect holds what differs between engines. Each engine's file
// (sqlite.go, postgres.go, mysql.go) defines one; the statements that are
// the same everywhere are written once, in the file of their method.
type dialect struct {
	engine Engine

	// dollar: placeholders are $1, $2, … (PostgreSQL) instead of ?.
	dollar bool
	// rowValues: the engine compares (a, b) > (?, ?) with an index range
	// scan. Without it, keyset conditions are spelled out with OR.
	rowValues bool
	// prepare: cache prepared statements. Off where the driver
	// interpolates parameters client side (MySQL with interpolateParams).
	prepare bool
	// keyRange: ordered, limited reads of one queue's tasks bound the whole
	// primary key, (range_hash, task_queue_id, …) > (…) AND … <= (…),
	// instead of range_hash = ? AND task_queue_id = ? AND …. PostgreSQL
	// multiplies the selectivities of the two equalities as if range_hash
	// did not follow from task_queue_id, expects a handful of rows, and
	// then prefers a bitmap scan of the whole queue plus a sort to an index
	// scan that stops at the limit: every read of a big backlog would visit
	// all of it.
	keyRange bool

	// deleteLimited returns the statements that delete at most limit tasks
	// of one queue inside a key range, lowest first. See each engine.
	deleteLimited func(b *builder, t store.Table, q store.QueueKey, r store.TaskRange, limit int) deleteForm

	// listTaskQueueIDs, if set, replaces the shared SELECT DISTINCT of
	// ListTaskQueueIDs (same result columns and order).
	listTaskQueueIDs func(b *builder, t store.Table, after *store.QueueKey, limit int) *builder

	// forUpdate is appended to the fence read in AppendTasks.
	forUpdate string

	// maxSets bounds the sets (OR terms, and so the parameters) of one
	// batched delete: a page of 1000 queues goes in one statement, but
	// SQLite parses an OR chain into an expression tree at most 1000
	// deep, and a huge statement holds its locks for long.
	maxSets int
	// deleteRanges, if set, deletes the leading run of V1 key-range sets
	// of a batch (at most max) in one statement of the engine's own, and
	// returns how many it took; nil: the shared OR of the ranges.
	deleteRanges func(b *builder, sets []store.TaskSet, max int) int
	// deleteQueues, if set, replaces the shared OR of the fenced queue
	// delete of more than one row (same rows deleted).
	deleteQueues func(b *builder, t store.Table, fences []store.QueueFence) *builder
	// deleteQueueBatch, if set, deletes a batch of more than one fenced
	// queue row in its own way (falling back to deleteQueuesSQL).
	deleteQueueBatch func(s *DB, ctx context.Context, t store.Table, fences []store.QueueFence) (int64, error)
	// listTables lists the tables of the store's schema or database.
	listTables string
	// ddlTypes are the column types of Temporal's DDL: range_hash,
	// task_queue_id, and the blobs.
	ddlTypes [3]string
	// changedRows: an UPDATE reports the rows it changed, not those it
	// matched (MySQL without clientFoundRows).
	changedRows bool
	// orphanIsolation, if not sql.LevelDefault, is the isolation of a
	// transaction of its own for each orphan delete, whose NOT EXISTS
	// re-check of the queue row must wait for a queue row's uncommitted
	// insert and block a later one until the delete commits. On MySQL,
	// REPEATABLE READ: the re-check is then a locking read, whose lock on
	// the absent row's gap holds an INSERT of it off. Under the session's
	// READ COMMITTED (sessionIsolation) MariaDB 10.11 still locks it
	// (TestOrphanDeleteRecheck passes either way there), but MySQL reads
	// other tables of a write without locks under READ COMMITTED in some
	// statements, and no MySQL 8 server was at hand to prove this one.
	orphanIsolation sql.IsolationLevel
	// immediate: a transaction that writes begins with BEGIN IMMEDIATE
	// (SQLite's immediateTx) instead of the driver's BeginTx.
	immediate bool

	// classify maps a driver error to the store's error kinds.
	classify func(err error) error
	// lost reports whether err, a write's, says that its connection was
	// lost after the statement may have reached the server (see
	// DB.lostAfterSend, which has already set aside what is not sent).
	lost func(err error) bool
	// denied reports whether err refuses a statement for want of a
	// privilege; a write so refused is a read-only database to the
	// scavenger (a user granted SELECT only). Nil: never.
	denied func(err error) bool
}

// maxPrealloc caps the rows a read allocates room for before it has any:
// a caller's limit says how many rows it may take, not how many there are.
const maxPrealloc = 1024

// deleteForm is a limited delete: either one statement, or (SQLite) a probe
// for the limit-th key followed by a plain range delete.
type deleteForm struct {
	stmt     string
	args     []any
	probe    string // if set: SELECT of the key that bounds the range
	probeArg []any
}

// builder assembles one statement with its arguments.
type builder struct {
	d    *dialect
	sb   strings.Builder
	args []any
}

// newBuilder returns an empty builder in the store's dialect.
func (s *DB) newBuilder() *builder { return &builder{d: s.d} }

func (b *builder) reset() { b.sb.Reset(); b.args = b.args[:0] }

// w writes SQL text.
func (b *builder) w(s ...string) *builder {
	for _, x := range s {
		b.sb.WriteString(x)
	}
	return b
}

// p writes a placeholder for v. A nil []byte is bound as an empty one: the
// drivers would bind NULL, and a key compared with NULL matches nothing.
func (b *builder) p(v any) *builder {
	if bs, ok := v.([]byte); ok && bs == nil {
		v = []byte{}
	}
	b.args = append(b.args, v)
	if b.d.dollar {
		b.sb.WriteString("$" + strconv.Itoa(len(b.args)))
	} else {
		b.sb.WriteByte('?')
	}
	return b
}

func (b *builder) String() string { return b.sb.String() }

// gt writes (cols) > (vals) in a form the engine turns into an index range.
func (b *builder) gt(cols []string, vals []any) *builder { return b.cmp(cols, vals, ">") }

// whereAfter writes the keyset condition of a listing that starts after
// the queue key after: every row from hash 0 for nil (from the first row),
// every row of after's range_hash and above for a nil ID
// (store.HashRange.Start), else the rows after the key; never a row whose
// range_hash lies outside 0…2³²−1 (see hashBounds).
func (b *builder) whereAfter(after *store.QueueKey) *builder {
	switch {
	case after == nil:
		return b.w(" WHERE range_hash >= 0 AND ").hashMax("range_hash")
	case after.ID == nil:
		return b.w(" WHERE range_hash >= ").p(int64(after.RangeHash)).w(" AND ").hashMax("range_hash")
	}
	return b.w(" WHERE ").gt([]string{"range_hash", "task_queue_id"}, []any{int64(after.RangeHash), after.ID}).w(" AND ").hashMax("range_hash")
}

// hashMax writes col <= 2³²−1: the listings read the uint32 space only.
// A row outside it (a negative range_hash, which the PostgreSQL and SQLite
// columns allow, or one above) cannot be a store.QueueKey: read as a
// uint32 it would sort elsewhere than the database sorts it, and a keyset
// listing continuing after it would skip every row between. Such rows are
// found apart (DB.OddHashes) and reported as bad rows.
func (b *builder) hashMax(col string) *builder {
	return b.w(col, " <= "+maxHashLit)
}

// maxHashLit is 2³²−1, the largest range_hash, as a literal.
const maxHashLit = "4294967295"

// cmp writes a lexicographic comparison of cols against vals; op is one of
// > >= < <=.
func (b *builder) cmp(cols []string, vals []any, op string) *builder {
	if len(cols) == 1 {
		return b.w(cols[0], " ", op, " ").p(vals[0])
	}
	if b.d.rowValues {
		b.w("(", strings.Join(cols, ", "), ") ", op, " (")
		for i, v := range vals {
			if i > 0 {
				b.w(", ")
			}
			b.p(v)
		}
		return b.w(")")
	}
	// (a op' x OR (a = x AND (b op y))), op' is the strict form of op.
	strict := op[:1]
	b.w("(", cols[0], " ", strict, " ").p(vals[0]).w(" OR (", cols[0], " = ").p(vals[0]).w(" AND ")
	b.cmp(cols[1:], vals[1:], op)
	return b.w("))")
}

// Table names and the columns that order tasks, per table version.
func queueTable(t store.Table) string { return t.QueueTable() }

func taskTable(t store.Table) string { return t.TaskTable() }

func taskCols(t store.Table) []string {
	if t == store.V2 {
		return []string{"pass", "task_id"}
	}
	return []string{"task_id"}
}

func taskVals(t store.Table, k store.TaskKey) []any {
	if t == store.V2 {
		return []any{k.Pass, k.ID}
	}
	return []any{k.ID}
}

func orderBy(t store.Table) string { return strings.Join(taskCols(t), ", ") }

// minKey is r.Min as a lower bound: nil for the zero Min ("from the first
// task").
func minKey(r store.TaskRange) *store.TaskKey {
	if r.Min == (store.TaskKey{}) {
		return nil
	}
	return &r.Min
}

// whereQueue writes range_hash = ? AND task_queue_id = ?.
func (b *builder) whereQueue(q store.QueueKey) *builder {
	return b.w("range_hash = ").p(int64(q.RangeHash)).w(" AND task_queue_id = ").p(q.ID)
}

// queueTasks writes the condition "a task of q with lo < key (or lo <=
// key, as loOp says) and key <= hi"; nil bounds are open. On a keyRange
// dialect the queue and the bounds form one range of the primary key.
func (b *builder) queueTasks(t store.Table, q store.QueueKey, lo *store.TaskKey, loOp string, hi *store.TaskKey) *builder {
	if !b.d.keyRange {
		b.whereQueue(q)
		if lo != nil {
			b.w(" AND ").cmp(taskCols(t), taskVals(t, *lo), loOp)
		}
		if hi != nil {
			b.w(" AND ").cmp(taskCols(t), taskVals(t, *hi), "<=")
		}
		return b
	}
	queueCols, queueVals := []string{"range_hash", "task_queue_id"}, []any{int64(q.RangeHash), q.ID}
	if lo != nil {
		b.cmp(append(queueCols, taskCols(t)...), append(queueVals, taskVals(t, *lo)...), loOp)
	} else {
		b.cmp(queueCols, queueVals, ">=")
	}
	b.w(" AND ")
	if hi != nil {
		return b.cmp(append(queueCols, taskCols(t)...), append(queueVals, taskVals(t, *hi)...), "<=")
	}
	return b.cmp(queueCols, queueVals, "<=")
}

// taskOrder is the ORDER BY of a read of one queue's tasks: on a keyRange
// dialect the whole primary key, as the planner does not know range_hash
// and task_queue_id are fixed.
func (b *builder) taskOrder(t store.Table) string {
	if b.d.keyRange {
		return "range_hash, task_queue_id, " + orderBy(t)
	}
	return orderBy(t)
}

// taskRange writes the bounds of r for table t. The zero Min means "from
// the first task", so it writes no lower bound at all.
func (b *builder) taskRange(t store.Table, r store.TaskRange) *builder {
	if r.Min != (store.TaskKey{}) {
		b.cmp(taskCols(t), taskVals(t, r.Min), ">=").w(" AND ")
	}
	return b.cmp(taskCols(t), taskVals(t, r.Max), "<=")
}

// keyIn writes "(task key columns) IN (keys)".
func (b *builder) keyIn(t store.Table, keys []store.TaskKey) *builder {
	b.w("(", orderBy(t), ") IN (")
	for i, k := range keys {
		if i > 0 {
			b.w(", ")
		}
		if t == store.V2 {
			b.w("(").p(k.Pass).w(", ").p(k.ID).w(")")
		} else {
			b.p(k.ID)
		}
	}
	return b.w(")")
}
