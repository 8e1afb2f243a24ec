package sqlstore

import (
	"strconv"
	"strings"
	"time"

	"github.com/tqscavenger/tqscavenger/store"
)

// dialect holds what differs between engines. Each engine's file
// (sqlite.go, postgres.go, mysql.go) defines one; the SQL that is the same
// everywhere lives in sqlstore.go.
type dialect struct {
	engine Engine
	driver string

	// dollar: placeholders are $1, $2, … (PostgreSQL) instead of ?.
	dollar bool
	// rowValues: the engine compares (a, b) > (?, ?) with an index range
	// scan. Without it, keyset conditions are spelled out with OR.
	rowValues bool
	// prepare: cache prepared statements. Off where the driver
	// interpolates parameters client side (MySQL with interpolateParams).
	prepare bool

	// deleteLimited returns the statements that delete at most limit tasks
	// of one queue inside a key range, lowest first. See each engine.
	deleteLimited func(b *builder, t store.Table, q store.QueueKey, r store.TaskRange, limit int) deleteForm

	// forUpdate is appended to the fence read in AppendTasks.
	forUpdate string

	// classify maps a driver error to the store's error kinds.
	classify func(err error) error

	// serverTimeout reports a driver error that is the server enforcing
	// Options.StatementTimeout (MySQL's lock wait timeout, MariaDB's
	// max_statement_time); nil where the client enforces it alone.
	serverTimeout func(err error) bool

	// clientDeadline turns Options.StatementTimeout into the client's own
	// deadline; nil means the timeout itself.
	clientDeadline func(timeout time.Duration) time.Duration
}

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

func (b *builder) reset() { b.sb.Reset(); b.args = b.args[:0] }

// w writes SQL text.
func (b *builder) w(s ...string) *builder {
	for _, x := range s {
		b.sb.WriteString(x)
	}
	return b
}

// p writes a placeholder for v.
func (b *builder) p(v any) *builder {
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
func queueTable(t store.Table) string {
	if t == store.V2 {
		return "task_queues_v2"
	}
	return "task_queues"
}

func taskTable(t store.Table) string {
	if t == store.V2 {
		return "tasks_v2"
	}
	return "tasks"
}

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

// whereQueue writes range_hash = ? AND task_queue_id = ?.
func (b *builder) whereQueue(q store.QueueKey) *builder {
	return b.w("range_hash = ").p(int64(q.RangeHash)).w(" AND task_queue_id = ").p(q.ID)
}

// taskRange writes the bounds of r for table t. The zero Min means "from
// the first task", so it writes no lower bound at all.
func (b *builder) taskRange(t store.Table, r store.TaskRange) *builder {
	if r.Min != (store.TaskKey{}) {
		b.cmp(taskCols(t), taskVals(t, r.Min), ">=").w(" AND ")
	}
	return b.cmp(taskCols(t), taskVals(t, r.Max), "<=")
}
