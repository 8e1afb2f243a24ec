package sqlstore_test

// The query plan tests EXPLAIN the statements the store runs, on a table of
// a few thousand ANALYZEd rows, and require a range scan of the primary key
// in key order: no sort of the table, no scan from its first row.

import (
	"database/sql"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"

	"github.com/tqscavenger/tqscavenger/internal/testdb"
	"github.com/tqscavenger/tqscavenger/sqlstore"
	"github.com/tqscavenger/tqscavenger/store"
)

// planQueues and planTasks size the tables. Small tables make every
// planner pick a full scan; these are enough to make a scan cost more.
const (
	planQueues        = 4000
	planTaskQueues    = 20
	planTasksPerQueue = 250
)

// bulkQueues inserts n queue rows with random keys straight into both
// queue tables, and returns their keys.
func bulkQueues(t *testing.T, db *sqlstore.DB, n int) []store.QueueKey {
	t.Helper()
	rng := rand.New(rand.NewPCG(7, 7))
	keys := make([]store.QueueKey, n)
	for i := range keys {
		id := make([]byte, 17+rng.IntN(24))
		for j := range id {
			id[j] = byte(rng.Uint32())
		}
		keys[i] = store.QueueKey{RangeHash: rng.Uint32(), ID: id}
	}
	for _, table := range []string{"task_queues", "task_queues_v2"} {
		insertQueues(t, db, table, keys)
	}
	return keys
}

func analyze(t *testing.T, db *sqlstore.DB) {
	t.Helper()
	switch db.Engine() {
	case sqlstore.SQLite:
		testdb.Exec(t, db, "ANALYZE")
	case sqlstore.Postgres:
		testdb.Exec(t, db, "ANALYZE task_queues, tasks, task_queues_v2, tasks_v2")
	case sqlstore.MySQL:
		for _, tb := range []string{"task_queues", "tasks", "task_queues_v2", "tasks_v2"} {
			rows, err := db.SQL().QueryContext(ctx, "ANALYZE TABLE "+tb)
			if err != nil {
				t.Fatal(err)
			}
			rows.Close()
		}
	}
}

// explain returns the engine's plan of st, one string per plan row.
func explain(t *testing.T, db *sqlstore.DB, st sqlstore.Stmt) []string {
	t.Helper()
	var q string
	switch db.Engine() {
	case sqlstore.SQLite:
		q = "EXPLAIN QUERY PLAN " + st.SQL
	default:
		q = "EXPLAIN " + st.SQL
	}
	rows, err := db.SQL().QueryContext(ctx, q, st.Args...)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	return planRows(t, rows)
}

// planRows formats each row as col=value pairs (one plain line on
// PostgreSQL, whose plan is text).
func planRows(t *testing.T, rows *sql.Rows) []string {
	t.Helper()
	cols, err := rows.Columns()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		if len(cols) == 1 {
			out = append(out, vals[0].String)
			continue
		}
		var parts []string
		for i, c := range cols {
			parts = append(parts, strings.ToLower(c)+"="+vals[i].String)
		}
		out = append(out, strings.Join(parts, " "))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// planCheck describes what a plan must (and must not) show.
type planCheck struct {
	name  string
	stmt  sqlstore.Stmt
	table string // the table the statement reads
	// search: the plan must be a range search of the key, not a scan of
	// the index from its first entry (a listing's first page may scan).
	search bool
}

func TestQueryPlans(t *testing.T) {
	for _, e := range testdb.Engines {
		t.Run(string(e), func(t *testing.T) {
			t.Parallel()
			db := testdb.Open(t, e)
			keys := bulkQueues(t, db, planQueues)
			var qs []store.QueueKey
			for i := range planTaskQueues {
				q := keys[i*7]
				qs = append(qs, q)
				for _, tb := range []store.Table{store.V1, store.V2} {
					rows := make([]store.TaskRow, planTasksPerQueue)
					for j := range rows {
						// v2 passes out of task_id order, as with fairness keys.
						rows[j] = task(int64(1+(j*37)%11), int64(100001+j))
					}
					if err := db.AppendTasks(ctx, tb, q, 1, q, rows); err != nil {
						t.Fatal(err)
					}
				}
			}
			analyze(t, db)

			mid := keys[len(keys)/2]
			q := qs[len(qs)/2]
			var checks []planCheck
			for _, tb := range []store.Table{store.V1, store.V2} {
				qt, tt := queueTableName(tb), taskTableName(tb)
				after := &store.TaskKey{Pass: 3, ID: 100050}
				r := store.TaskRange{Min: store.TaskKey{Pass: 2, ID: 100010}, Max: store.TaskKey{Pass: 6, ID: 100200}}
				upTo := store.TaskRange{Max: store.TaskKey{Pass: 5, ID: 100120}}
				checks = append(checks,
					planCheck{tb.String() + " list, first page", db.ListQueuesStmt(tb, nil, 32), qt, false},
					planCheck{tb.String() + " list after a key", db.ListQueuesStmt(tb, &mid, 32), qt, true},
					planCheck{tb.String() + " list task queue ids, first page", db.ListTaskQueueIDsStmt(tb, nil, 1000), tt, false},
					planCheck{tb.String() + " list task queue ids after a key", db.ListTaskQueueIDsStmt(tb, &qs[3], 1000), tt, true},
					planCheck{tb.String() + " read tasks", db.ReadTasksStmt(tb, q, nil, 16), tt, true},
					planCheck{tb.String() + " read tasks after a key", db.ReadTasksStmt(tb, q, after, 16), tt, true},
					planCheck{tb.String() + " delete tasks in a range", db.DeleteTasksStmts(tb, q, r, 0)[0], tt, true},
					planCheck{tb.String() + " delete tasks, from the first", db.DeleteTasksStmts(tb, q, upTo, 0)[0], tt, true},
					planCheck{tb.String() + " delete exact keys", db.DeleteTaskKeysStmt(tb, q, []store.TaskKey{{Pass: 3, ID: 100011}, {Pass: 1, ID: 100012}}), tt, true},
				)
				sets := []store.TaskSet{
					{Queue: qs[0], Keys: []store.TaskKey{{Pass: 3, ID: 100011}, {Pass: 1, ID: 100012}}},
					{Queue: qs[1], Range: upTo},
					{Queue: qs[2], Range: r},
				}
				fences := []store.QueueFence{{QueueKey: qs[0], RangeID: 1}, {QueueKey: qs[1], RangeID: 1}, {QueueKey: keys[1], RangeID: 1}}
				checks = append(checks,
					planCheck{tb.String() + " scan tasks across queues", db.ScanTasksStmt(tb, store.TaskPos{Queue: qs[2], Task: *after}, keys[len(keys)/3], 1000), tt, true},
					planCheck{tb.String() + " delete task sets", db.DeleteTaskSetsStmt(tb, sets), tt, true},
					planCheck{tb.String() + " delete task ranges", db.DeleteTaskSetsStmt(tb, sets[1:]), tt, true},
					planCheck{tb.String() + " delete queues", db.DeleteQueuesStmt(tb, fences), qt, true},
					planCheck{tb.String() + " delete one queue", db.DeleteQueuesStmt(tb, fences[:1]), qt, true},
				)
				if e == sqlstore.MySQL {
					lo, hi := keys[10], keys[40]
					if hi.Less(lo) {
						lo, hi = hi, lo
					}
					lock, del := db.QueueRangeStmts(tb, lo, hi, 31)
					checks = append(checks,
						planCheck{tb.String() + " lock a range of queues", lock, qt, true},
						planCheck{tb.String() + " delete a range of queues", del, qt, true},
					)
				}
				for i, st := range db.DeleteTasksStmts(tb, q, r, 100) {
					checks = append(checks, planCheck{fmt.Sprintf("%s limited delete in a range (%d)", tb, i+1), st, tt, true})
				}
				for i, st := range db.DeleteTasksStmts(tb, q, upTo, 100) {
					checks = append(checks, planCheck{fmt.Sprintf("%s limited delete from the first (%d)", tb, i+1), st, tt, true})
				}
			}
			for _, c := range checks {
				t.Run(c.name, func(t *testing.T) {
					plan := explain(t, db, c.stmt)
					if problem := judgePlan(e, c, plan); problem != "" {
						t.Errorf("%s\n%s\nplan:\n  %s", problem, c.stmt.SQL, strings.Join(plan, "\n  "))
					} else {
						t.Logf("%s\n  %s", c.stmt.SQL, strings.Join(plan, "\n  "))
					}
				})
			}
			if e == sqlstore.Postgres {
				// Prepared statements switch to a generic plan, planned without
				// the parameter values: it must be the same kind of plan.
				for _, c := range checks {
					t.Run("generic/"+c.name, func(t *testing.T) {
						plan := explainGeneric(t, db, c.stmt)
						if problem := judgePlan(e, c, plan); problem != "" {
							t.Errorf("%s\n%s\nplan:\n  %s", problem, c.stmt.SQL, strings.Join(plan, "\n  "))
						}
					})
				}
			}
		})
	}
}

func queueTableName(t store.Table) string {
	if t == store.V2 {
		return "task_queues_v2"
	}
	return "task_queues"
}

func taskTableName(t store.Table) string {
	if t == store.V2 {
		return "tasks_v2"
	}
	return "tasks"
}

var pgSort = regexp.MustCompile(`(^|->\s*)(Incremental )?Sort\s+\(`)

// judgePlan returns what is wrong with plan, or "".
func judgePlan(e sqlstore.Engine, c planCheck, plan []string) string {
	all := strings.Join(plan, "\n")
	switch e {
	case sqlstore.Postgres:
		for i, line := range plan {
			// A sort of the page the recursive listing built (d) is a sort
			// of at most limit rows.
			if pgSort.MatchString(strings.TrimSpace(line)) && (i+1 == len(plan) || !strings.Contains(plan[i+1], "Sort Key: d.")) {
				return "a Sort node: the rows are not read in key order"
			}
		}
		if strings.Contains(all, "Seq Scan") {
			return "a sequential scan"
		}
		// A bitmap scan reads the key range too, but in no order: fine where
		// no order is asked for.
		if !strings.Contains(all, "using "+c.table+"_pkey") &&
			(strings.Contains(c.stmt.SQL, "ORDER BY") || !strings.Contains(all, "Bitmap Index Scan on "+c.table+"_pkey")) {
			return "the primary key " + c.table + "_pkey is not used"
		}
		if c.search && !strings.Contains(all, "Index Cond") {
			return "no Index Cond: the index is scanned, not searched"
		}
		if strings.HasPrefix(strings.TrimSpace(plan[0]), "Delete") && strings.Contains(all, "LIMIT") && !strings.Contains(all, "Tid Scan") {
			return "a limited delete that is not a TID scan"
		}
	case sqlstore.MySQL:
		for _, row := range plan {
			if !strings.Contains(row, "table="+c.table+" ") {
				continue
			}
			if strings.Contains(row, "filesort") || strings.Contains(row, "temporary") {
				return "a filesort: the rows are not read in key order"
			}
			if !strings.Contains(row, "key=PRIMARY ") {
				return "the primary key is not used"
			}
			ok := strings.Contains(row, "type=range ") || strings.Contains(row, "type=ref ") || strings.Contains(row, "type=const ")
			if !c.search {
				ok = ok || strings.Contains(row, "type=index ")
			}
			if !ok {
				return "not a range scan of the primary key"
			}
			return ""
		}
		return "no plan row for table " + c.table
	case sqlstore.SQLite:
		if strings.Contains(all, "USE TEMP B-TREE") {
			return "a temporary b-tree: the rows are not read in key order"
		}
		index := "USING INDEX sqlite_autoindex_" + c.table + "_1"
		if !strings.Contains(all, index) && !strings.Contains(all, "USING COVERING INDEX sqlite_autoindex_"+c.table+"_1") {
			return "the primary key index is not used"
		}
		if c.search && !strings.Contains(all, "SEARCH "+c.table) {
			return "the index is scanned, not searched"
		}
	}
	return ""
}

// explainGeneric EXPLAINs st on PostgreSQL as a prepared statement forced
// onto its generic plan.
func explainGeneric(t *testing.T, db *sqlstore.DB, st sqlstore.Stmt) []string {
	t.Helper()
	conn, err := db.SQL().Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	exec := func(q string) {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	exec("SET plan_cache_mode = force_generic_plan")
	defer exec("RESET plan_cache_mode")
	exec("PREPARE tqs_plan AS " + st.SQL)
	defer exec("DEALLOCATE tqs_plan")
	var lits []string
	for _, a := range st.Args {
		switch v := a.(type) {
		case []byte:
			lits = append(lits, fmt.Sprintf(`'\x%x'::bytea`, v))
		case []int64:
			var xs []string
			for _, x := range v {
				xs = append(xs, fmt.Sprint(x))
			}
			lits = append(lits, "'{"+strings.Join(xs, ",")+"}'::bigint[]")
		case [][]byte:
			var xs []string
			for _, x := range v {
				xs = append(xs, fmt.Sprintf(`'\x%x'::bytea`, x))
			}
			lits = append(lits, "ARRAY["+strings.Join(xs, ", ")+"]")
		case string:
			lits = append(lits, "'"+strings.ReplaceAll(v, "'", "''")+"'")
		default:
			lits = append(lits, fmt.Sprint(v))
		}
	}
	rows, err := conn.QueryContext(ctx, "EXPLAIN EXECUTE tqs_plan("+strings.Join(lits, ", ")+")")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	return planRows(t, rows)
}
