package sqlstore_test

// TestSQLGolden keeps the SQL a DBA reads in one place per engine:
// testdata/sqlite.sql, postgres.sql and mysql.sql hold every statement the
// store sends, recorded at the driver while the test calls each method of
// store.Store, store.Writer and the optional interfaces, and the test fails
// when the store's statements and the files part. After a deliberate change
// of the SQL, rewrite them and review the diff:
//
//	go test ./sqlstore -run TestSQLGolden -update
//
// The statements are recorded on real databases (SQLite always;
// PostgreSQL and MariaDB from TQS_TEST_POSTGRES and TQS_TEST_MYSQL, which
// CI=true requires: see package testdb), because many are built inside
// the methods that run them, and some by the connectors, not by the
// statement builder. On SQLite and MySQL a connector wrapped around the
// driver's records them; on PostgreSQL, where New accepts pgx's own
// connections only, a pgx query tracer does.

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tqscavenger/tqscavenger/internal/testdb"
	"github.com/tqscavenger/tqscavenger/sqlstore"
	"github.com/tqscavenger/tqscavenger/store"
)

var update = flag.Bool("update", false, "rewrite the SQL golden files (testdata/*.sql) from the statements the store sends")

func TestSQLGolden(t *testing.T) {
	for _, e := range testdb.Engines {
		t.Run(string(e), func(t *testing.T) {
			got := recordStatements(t, e)
			path := filepath.Join("testdata", string(e)+".sql")
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				t.Logf("wrote %s", path)
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (write it with: go test ./sqlstore -run TestSQLGolden -update)", err)
			}
			if d := goldenDiff(string(want), got); d != "" {
				t.Errorf("the statements the store sends on %s differ from %s:\n%s\nIf the change is meant, rewrite the file with\n\tgo test ./sqlstore -run TestSQLGolden -update\nand review its diff.", e, path, d)
			}
		})
	}
}

func TestSQLNormalize(t *testing.T) {
	for _, c := range []struct {
		name, in string
		dollar   bool
		want     string
	}{
		{"IN list", "DELETE FROM tasks WHERE range_hash = ? AND task_queue_id = ? AND (task_id) IN (?, ?, ?)", false,
			"DELETE FROM tasks WHERE range_hash = ? AND task_queue_id = ? AND (task_id) IN (? /* , ... */)"},
		{"IN list of one", "DELETE FROM tasks WHERE range_hash = $1 AND task_queue_id = $2 AND (task_id) IN ($3) AND x = $4", true,
			"DELETE FROM tasks WHERE range_hash = $1 AND task_queue_id = $2 AND (task_id) IN ($3 /* , ... */) AND x = $4"},
		{"IN list of rows", "DELETE FROM t WHERE (a, b) IN (($1, $2), ($3, $4), ($5, $6)) LIMIT $7", true,
			"DELETE FROM t WHERE (a, b) IN (($1, $2) /* , ... */) LIMIT $3"},
		{"OR'ed sets, lists inside", "DELETE FROM t WHERE (a = ? AND (b) IN (?)) OR (a = ? AND (b) IN (?, ?)) OR (a = ? AND b <= ?)", false,
			"DELETE FROM t WHERE (a = ? AND (b) IN (? /* , ... */)) /* OR ... */ OR (a = ? AND b <= ?)"},
		{"VALUES rows", "INSERT INTO t (a, b) VALUES ($1, $2), ($3, $4)", true, "INSERT INTO t (a, b) VALUES ($1, $2) /* , ... */"},
		{"one row is no list", "INSERT INTO t (a, b) VALUES (?, ?)", false, "INSERT INTO t (a, b) VALUES (?, ?)"},
		{"row values are no list", "SELECT a FROM t WHERE (a, b) > ($1, $2) AND (a, b) <= ($3, $4)", true,
			"SELECT a FROM t WHERE (a, b) > ($1, $2) AND (a, b) <= ($3, $4)"},
		{"sum", "SELECT (COALESCE(F(?), 0) + COALESCE(F(?), 0)) = ?", false, "SELECT (COALESCE(F(?), 0) /* + ... */) = ?"},
		{"different terms stay", "SELECT (SELECT COUNT(*) FROM t WHERE a < 0), (SELECT COUNT(*) FROM t WHERE a > 9)", false,
			"SELECT (SELECT COUNT(*) FROM t WHERE a < 0), (SELECT COUNT(*) FROM t WHERE a > 9)"},
		{"a repeated placeholder keeps its number", "SELECT ($1::bigint >> 32) = a AND ($1::bigint & 1) = b", true,
			"SELECT ($1::bigint >> 32) = a AND ($1::bigint & 1) = b"},
		{"parentheses in quotes", "SELECT n FROM JSON_TABLE(?, '$[*] (' COLUMNS (n VARCHAR(64) PATH '$')) j", false,
			"SELECT n FROM JSON_TABLE(?, '$[*] (' COLUMNS (n VARCHAR(64) PATH '$')) j"},
		{"a literal that varies", "SELECT a FROM t ORDER BY a LIMIT 3 FOR UPDATE NOWAIT", false,
			"SELECT a FROM t ORDER BY a LIMIT <number of fences> FOR UPDATE NOWAIT"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := normalizeSQL(c.in, c.dollar); got != c.want {
				t.Errorf("normalizeSQL(%q)\n got %s\nwant %s", c.in, got, c.want)
			}
		})
	}
}

// goldenDiff describes the first difference between want and got, with a
// few lines of context, or returns "" if they are equal.
func goldenDiff(want, got string) string {
	if want == got {
		return ""
	}
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	i := 0
	for i < len(w) && i < len(g) && w[i] == g[i] {
		i++
	}
	show := func(lines []string) string {
		var b strings.Builder
		for j := max(i-3, 0); j < min(i+4, len(lines)); j++ {
			mark := "  "
			if j == i {
				mark = "> "
			}
			fmt.Fprintf(&b, "%s%4d  %s\n", mark, j+1, lines[j])
		}
		return b.String()
	}
	return fmt.Sprintf("first difference at line %d (%d lines in the file, %d recorded)\nthe file:\n%sthe store now:\n%s", i+1, len(w), len(g), show(w), show(g))
}

// recordStatements calls every method of a fresh store of engine e that
// sends SQL, and returns the statements it sent as the golden file's text.
func recordStatements(t *testing.T, e sqlstore.Engine) string {
	ctx := t.Context()
	dsn := testdb.Empty(t, e)
	rec := &sqlRecorder{seen: map[string]bool{}}
	wrap := func(c driver.Connector) driver.Connector { return &recConnector{Connector: c, rec: rec} }
	s := &goldenScript{t: t, rec: rec}

	var db *sqlstore.DB
	s.step("Open: the store's first connection (PostgreSQL and MySQL: a ping, no SQL; SQLite: its journal mode)", func() (err error) {
		db, err = sqlstore.OpenTraced(ctx, dsn, sqlstore.Options{Create: true}, false, wrap, pgTracer{rec})
		return err
	})
	closed := false
	t.Cleanup(func() {
		if !closed {
			db.Close()
		}
	})
	s.step("New: a store on a connector its caller built learns its DSN from its first connection", func() error {
		other, err := sqlstore.OpenTraced(ctx, dsn, sqlstore.Options{}, true, wrap, pgTracer{rec})
		if err != nil {
			return err
		}
		return other.Close()
	})

	// The schema.
	s.step("Setup: Temporal's four task tables, where they do not exist", func() error { return db.Setup(ctx) })
	s.step("Check: the tables and their columns (no schema_version table)", func() error {
		_, err := db.Check(ctx)
		return err
	})
	s.quietly(func() {
		testdb.Exec(t, db, "CREATE TABLE schema_version (version_partition INT NOT NULL, db_name VARCHAR(255) NOT NULL, curr_version VARCHAR(64), PRIMARY KEY (version_partition, db_name))")
		testdb.Exec(t, db, "INSERT INTO schema_version (version_partition, db_name, curr_version) VALUES (0, 'another', '1.18')")
	})
	s.step("Check, with Temporal's schema_version table: its row for the store's database, else (a setup that recorded another db_name) any row", func() error {
		_, err := db.Check(ctx)
		return err
	})
	s.step("Tables: which task tables exist", func() error {
		_, err := db.Tables(ctx)
		return err
	})
	s.step("Namespaces, without a namespaces table: the table list tells why the read failed", func() error {
		if _, err := db.Namespaces(ctx); !errors.Is(err, store.ErrNoNamespaceTable) {
			return fmt.Errorf("got %v, want an error wrapping store.ErrNoNamespaceTable", err)
		}
		return nil
	})
	s.quietly(func() { testdb.CreateHistoryTables(t, db) })

	for _, tb := range []store.Table{store.V1, store.V2} {
		recordTable(ctx, s, db, tb)
	}
	switch e {
	case sqlstore.MySQL:
		recordKill(ctx, s, db)
	case sqlstore.SQLite:
		recordGroupCommit(ctx, s, wrap)
	}

	// The history tables the closed-workflow rule reads.
	k1 := store.ExecutionKey{ShardID: 1, NamespaceID: [16]byte{1}, WorkflowID: "w1", RunID: [16]byte{2}}
	k2 := store.ExecutionKey{ShardID: 2, NamespaceID: [16]byte{1}, WorkflowID: "w2", RunID: [16]byte{3}}
	s.step("ClusterMetadata: the cluster's metadata rows", func() error {
		_, err := db.ClusterMetadata(ctx)
		return err
	})
	s.step("ShardIDs: the history shards", func() error {
		_, err := db.ShardIDs(ctx)
		return err
	})
	s.step("MaxExecutionShard: the highest shard of an executions row", func() error {
		_, _, err := db.MaxExecutionShard(ctx)
		return err
	})
	s.step("NextWorkflow(from the first): the first workflow of the executions table", func() error {
		_, _, err := db.NextWorkflow(ctx, nil)
		return err
	})
	s.step("NextWorkflow(after a workflow): the next one, by primary key", func() error {
		_, _, err := db.NextWorkflow(ctx, &k1)
		return err
	})
	s.step("GetExecutions: executions rows by primary key (their state, never their data)", func() error {
		_, err := db.GetExecutions(ctx, []store.ExecutionKey{k1, k2})
		return err
	})
	s.step("GetCurrentExecutions: current_executions rows by primary key", func() error {
		_, err := db.GetCurrentExecutions(ctx, []store.ExecutionKey{k1, k2})
		return err
	})
	s.step("Namespaces: every namespace, its id, name and data", func() error {
		_, err := db.Namespaces(ctx)
		return err
	})

	// The one-scavenger-at-a-time lock (on SQLite: lock files, no SQL).
	recordLock(ctx, s, "Lock: the lock of a whole pass (SQLite: lock files, no SQL)", func() (store.Lock, error) { return db.Lock(ctx, false) })
	recordLock(ctx, s, "LockRange(partition 1 of 4): the lock of a part of the range_hash space (SQLite: byte ranges of lock files, no SQL)", func() (store.Lock, error) {
		return db.LockRange(ctx, store.HashRange{Lo: 1 << 30, Hi: 1<<31 - 1}, false)
	})
	recordLock(ctx, s, "LockRange(1…2³²−2): the lock of a range of many cells", func() (store.Lock, error) {
		return db.LockRange(ctx, store.HashRange{Lo: 1, Hi: math.MaxUint32 - 1}, false)
	})
	var held store.Lock
	s.quietly(func() {
		var err error
		if held, err = db.Lock(ctx, false); err != nil {
			t.Fatal(err)
		}
	})
	s.step("Lock, refused: another scavenger holds the lock (SQLite: lock files, no SQL)", func() error {
		if _, err := db.Lock(ctx, false); !errors.Is(err, store.ErrLocked) {
			return fmt.Errorf("got %v, want an error wrapping store.ErrLocked", err)
		}
		return nil
	})
	s.quietly(func() {
		if err := held.Unlock(); err != nil {
			t.Fatal(err)
		}
	})

	// The probe a gentle pass times (not on SQLite).
	var p store.Probe
	s.step("OpenProbe: a connection of its own, and the v1 queue with the greatest key (not on SQLite, where a read can hold commits off)", func() (err error) {
		p, err = db.OpenProbe(ctx)
		if e == sqlstore.SQLite && errors.Is(err, errors.ErrUnsupported) {
			return nil
		}
		return err
	})
	if p != nil {
		s.step("Probe: matching's most frequent reads (a queue row, a queue's first tasks)", func() error { return p.Probe(ctx) })
		s.step("Probe.Close", p.Close)
	}
	s.step("Identity: what tells this database from every other (SQLite: the file's device and inode, no SQL)", func() error {
		_, err := db.Identity(ctx)
		return err
	})
	s.step("Close (no SQL)", func() error {
		closed = true
		return db.Close()
	})
	return rec.render(e)
}

// recordTable calls the methods on the task tables of version tb.
func recordTable(ctx context.Context, s *goldenScript, db *sqlstore.DB, tb store.Table) {
	t := s.t
	queue := func(h uint32, id string) store.QueueKey { return store.QueueKey{RangeHash: h, ID: []byte(id)} }
	q1, q2, q3 := queue(10, "q1"), queue(20, "q2"), queue(30, "q3")
	key := func(id int64) store.TaskKey {
		if tb == store.V2 {
			return store.TaskKey{Pass: 1, ID: id}
		}
		return store.TaskKey{ID: id}
	}
	keys := func(ids ...int64) []store.TaskKey {
		var out []store.TaskKey
		for _, id := range ids {
			out = append(out, key(id))
		}
		return out
	}
	tasks := func(ids ...int64) []store.TaskRow {
		var out []store.TaskRow
		for _, k := range keys(ids...) {
			out = append(out, store.TaskRow{Key: k, Data: []byte("task"), Encoding: "Proto3"})
		}
		return out
	}
	row := func(q store.QueueKey, rangeID int64) store.QueueRow {
		return store.QueueRow{QueueKey: q, RangeID: rangeID, Data: []byte("queue"), Encoding: "Proto3"}
	}
	rng := func(lo, hi int64) store.TaskRange {
		if lo == 0 {
			return store.TaskRange{Max: key(hi)} // from the first task
		}
		return store.TaskRange{Min: key(lo), Max: key(hi)}
	}
	name := func(method, what string) string { return fmt.Sprintf("%s(%s): %s", method, tb, what) }

	// What a matching host writes (store.Writer).
	s.step(name("CreateQueue", "a queue row"), func() error {
		for _, q := range []store.QueueKey{q1, q2, q3} {
			if err := db.CreateQueue(ctx, tb, row(q, 1)); err != nil {
				return err
			}
		}
		return nil
	})
	s.step(name("UpdateQueue", "a queue row, if its range_id is still the one its writer read"), func() error {
		return db.UpdateQueue(ctx, tb, row(q1, 2), 1)
	})
	s.step(name("AppendTasks", "tasks, in one transaction under the fence of their queue row"), func() error {
		return db.AppendTasks(ctx, tb, q1, 2, q1, tasks(1, 2, 3, 4, 5, 6, 7, 8))
	})
	s.step(name("AppendTasks", "refused by a fence another host has moved on: the transaction rolls back"), func() error {
		if err := db.AppendTasks(ctx, tb, q1, 1, q1, tasks(9)); !errors.Is(err, store.ErrConditionFailed) {
			return fmt.Errorf("got %v, want an error wrapping store.ErrConditionFailed", err)
		}
		return nil
	})
	s.quietly(func() {
		for _, q := range []store.QueueKey{q2, q3} {
			if err := db.AppendTasks(ctx, tb, q, 1, q, tasks(1, 2, 3, 4, 5, 6, 7, 8)); err != nil {
				t.Fatal(err)
			}
		}
	})

	// What a pass reads (store.Store).
	s.step(name("ListQueues", "the first page of queue rows"), func() error {
		_, err := db.ListQueues(ctx, tb, nil, 100)
		return err
	})
	s.step(name("ListQueues", "a page from the first row of a range_hash (a partition's start)"), func() error {
		_, err := db.ListQueues(ctx, tb, &store.QueueKey{RangeHash: 20}, 100)
		return err
	})
	s.step(name("ListQueues", "the page after a queue"), func() error {
		_, err := db.ListQueues(ctx, tb, &q1, 100)
		return err
	})
	s.step(name("GetQueue", "one queue row"), func() error {
		_, err := db.GetQueue(ctx, tb, q1)
		return err
	})
	s.step(name("ReadTasks", "a queue's first tasks"), func() error {
		_, err := db.ReadTasks(ctx, tb, q1, nil, 100)
		return err
	})
	s.step(name("ReadTasks", "a queue's tasks after a key"), func() error {
		k := key(2)
		_, err := db.ReadTasks(ctx, tb, q1, &k, 100)
		return err
	})
	s.step(name("ScanTasks", "the tasks of many small queues, in primary-key order"), func() error {
		_, err := db.ScanTasks(ctx, tb, store.TaskPos{Queue: q1, Task: key(2)}, q3, 100)
		return err
	})
	s.step(name("ListTaskQueueIDs", "the first queues the task table holds tasks of, each with whether its queue row exists"), func() error {
		_, err := db.ListTaskQueueIDs(ctx, tb, nil, 100)
		return err
	})
	s.step(name("ListTaskQueueIDs", "from the first queue of a range_hash"), func() error {
		_, err := db.ListTaskQueueIDs(ctx, tb, &store.QueueKey{RangeHash: 20}, 100)
		return err
	})
	s.step(name("ListTaskQueueIDs", "after a queue"), func() error {
		_, err := db.ListTaskQueueIDs(ctx, tb, &q1, 100)
		return err
	})

	// What a pass deletes.
	s.step(name("DeleteTasks", "without a limit: every task of a queue in a key range from the first"), func() error {
		_, err := db.DeleteTasks(ctx, tb, q1, rng(0, 1), 0)
		return err
	})
	s.step(name("DeleteTasks", "without a limit: every task of a queue between two keys"), func() error {
		_, err := db.DeleteTasks(ctx, tb, q1, rng(2, 2), 0)
		return err
	})
	s.step(name("DeleteTasks", "the lowest n tasks of a queue up to a key (compat mode: Temporal's task_id <= x LIMIT n)"), func() error {
		_, err := db.DeleteTasks(ctx, tb, q2, rng(0, 3), 2)
		return err
	})
	s.step(name("DeleteTasks", "the lowest n tasks of a queue between two keys"), func() error {
		_, err := db.DeleteTasks(ctx, tb, q2, rng(4, 6), 2)
		return err
	})
	s.step(name("DeleteTaskSets", "one key range of one queue"), func() error {
		_, err := db.DeleteTaskSets(ctx, tb, []store.TaskSet{{Queue: q3, Range: rng(1, 1)}})
		return err
	})
	s.step(name("DeleteTaskSets", "listed keys of one queue"), func() error {
		_, err := db.DeleteTaskSets(ctx, tb, []store.TaskSet{{Queue: q3, Keys: keys(2, 3)}})
		return err
	})
	s.step(name("DeleteTaskSets", "key ranges of several queues, in one statement"), func() error {
		_, err := db.DeleteTaskSets(ctx, tb, []store.TaskSet{{Queue: q1, Range: rng(3, 3)}, {Queue: q2, Range: rng(6, 6)}, {Queue: q3, Range: rng(4, 4)}})
		return err
	})
	s.step(name("DeleteTaskSets", "from-the-first key ranges of several queues"), func() error {
		_, err := db.DeleteTaskSets(ctx, tb, []store.TaskSet{{Queue: q1, Range: rng(0, 3)}, {Queue: q2, Range: rng(0, 6)}})
		return err
	})
	s.step(name("DeleteTaskSets", "listed keys of several queues, in one statement"), func() error {
		_, err := db.DeleteTaskSets(ctx, tb, []store.TaskSet{{Queue: q1, Keys: keys(4)}, {Queue: q2, Keys: keys(7, 8)}})
		return err
	})
	s.step(name("DeleteTaskSets", "listed keys of a queue, then a key range of another, in one statement"), func() error {
		_, err := db.DeleteTaskSets(ctx, tb, []store.TaskSet{{Queue: q1, Keys: keys(5)}, {Queue: q3, Range: rng(5, 5)}})
		return err
	})
	s.step(name("CompleteTasks", "a matching host's delete of a queue's tasks up to its ack level"), func() error {
		_, err := db.CompleteTasks(ctx, tb, q3, key(6))
		return err
	})
	s.step(name("DeleteOrphanTasks", "listed tasks of a queue, unless its queue row exists again (one candidate row)"), func() error {
		_, err := db.DeleteOrphanTasks(ctx, tb, q3, []store.QueueKey{q3}, keys(7, 8))
		return err
	})
	s.step(name("DeleteOrphanTasks", "the same with two candidate queue rows"), func() error {
		_, err := db.DeleteOrphanTasks(ctx, tb, q3, []store.QueueKey{q3, queue(30, "q3-other")}, keys(7, 8))
		return err
	})
	s.step(name("DeleteQueues", "one queue row, if its range_id is still its fence's"), func() error {
		_, err := db.DeleteQueues(ctx, tb, []store.QueueFence{{QueueKey: q3, RangeID: 1}})
		return err
	})
	s.step(name("DeleteQueues", "fenced queue rows that are a whole key range (MySQL: the range locked and deleted)"), func() error {
		_, err := db.DeleteQueues(ctx, tb, []store.QueueFence{{QueueKey: q1, RangeID: 2}, {QueueKey: q2, RangeID: 1}})
		return err
	})
	q4, q5, q6 := queue(40, "q4"), queue(50, "q5"), queue(60, "q6")
	s.quietly(func() {
		for _, q := range []store.QueueKey{q4, q5, q6} {
			if err := db.CreateQueue(ctx, tb, row(q, 1)); err != nil {
				t.Fatal(err)
			}
		}
	})
	s.step(name("DeleteQueues", "fenced queue rows with another row between them (MySQL: the locking read finds it, and the fences are deleted as a list)"), func() error {
		_, err := db.DeleteQueues(ctx, tb, []store.QueueFence{{QueueKey: q4, RangeID: 1}, {QueueKey: q6, RangeID: 1}})
		return err
	})

	// Rows the listings cannot return.
	s.step(name("OddHashes", "count the rows whose range_hash lies outside 0…2³²−1"), func() error {
		_, err := db.OddHashes(ctx, tb, 10)
		return err
	})
	if db.Engine() == sqlstore.MySQL {
		return // range_hash is INT UNSIGNED: there are none to list
	}
	blob := "X'00'"
	if db.Engine() == sqlstore.Postgres {
		blob = "'\\x00'::bytea"
	}
	pass, passValue := "", ""
	if tb == store.V2 {
		pass, passValue = "pass, ", "1, "
	}
	s.quietly(func() {
		testdb.Exec(t, db, "INSERT INTO "+tb.QueueTable()+" (range_hash, task_queue_id, range_id, data, data_encoding) VALUES (-1, "+blob+", 1, "+blob+", 'Proto3')")
		testdb.Exec(t, db, "INSERT INTO "+tb.TaskTable()+" (range_hash, task_queue_id, "+pass+"task_id, data, data_encoding) VALUES (-1, "+blob+", "+passValue+"1, "+blob+", 'Proto3')")
	})
	s.step(name("OddHashes", "where there are such rows: list the first of them"), func() error {
		_, err := db.OddHashes(ctx, tb, 10)
		return err
	})
	s.quietly(func() {
		testdb.Exec(t, db, "DELETE FROM "+tb.QueueTable()+" WHERE range_hash < 0")
		testdb.Exec(t, db, "DELETE FROM "+tb.TaskTable()+" WHERE range_hash < 0")
	})
}

// recordKill records what a write whose context ends sends on MySQL: it
// waits for a row lock another transaction holds, and the store kills it
// on the server (see killConnector).
func recordKill(ctx context.Context, s *goldenScript, db *sqlstore.DB) {
	t := s.t
	q5 := store.QueueKey{RangeHash: 50, ID: []byte("q5")} // left by recordTable
	var tx *sql.Tx
	s.quietly(func() {
		var err error
		if tx, err = testdb.SQL(t, db).BeginTx(ctx, nil); err != nil {
			t.Fatal(err)
		}
		var rangeID int64
		if err := tx.QueryRowContext(ctx, "SELECT range_id FROM task_queues WHERE range_hash = ? AND task_queue_id = ? FOR UPDATE", int64(q5.RangeHash), q5.ID).Scan(&rangeID); err != nil {
			t.Fatal(err)
		}
	})
	defer tx.Rollback()
	s.step("DeleteQueues(v1), its context ended while it waits for a row lock: the write is stopped on the server, from another connection", func() error {
		wctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		defer cancel()
		if _, err := db.DeleteQueues(wctx, store.V1, []store.QueueFence{{QueueKey: q5, RangeID: 1}}); err == nil {
			return errors.New("the delete of a locked row succeeded: want it stopped")
		}
		return nil
	})
}

// recordGroupCommit records a write of a SQLite store that shares
// commits: a file in a rollback journal, with Options.WriteTxBudget.
func recordGroupCommit(ctx context.Context, s *goldenScript, wrap func(driver.Connector) driver.Connector) {
	t := s.t
	// An empty file is a database in SQLite's default rollback journal;
	// the store puts only a file it creates in WAL mode.
	path := filepath.Join(t.TempDir(), "journal.db")
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	var db *sqlstore.DB
	s.quietly(func() {
		var err error
		if db, err = sqlstore.OpenTraced(ctx, "sqlite:"+path, sqlstore.Options{WriteTxBudget: time.Second}, false, wrap, nil); err != nil {
			t.Fatal(err)
		}
		if err := db.Setup(ctx); err != nil {
			t.Fatal(err)
		}
	})
	defer db.Close()
	s.step("DeleteTaskSets(v1) with group commit (Options.WriteTxBudget, a file in a rollback journal): the write joins a write transaction the store's concurrent writes share", func() error {
		if !db.SharesCommits() {
			return errors.New("the store does not share commits")
		}
		_, err := db.DeleteTaskSets(ctx, store.V1, []store.TaskSet{{Queue: store.QueueKey{RangeHash: 10, ID: []byte("q1")}, Range: store.TaskRange{Max: store.TaskKey{ID: 1}}}})
		return err
	})
}

// recordLock takes a lock with take, checks it and releases it.
func recordLock(ctx context.Context, s *goldenScript, title string, take func() (store.Lock, error)) {
	var l store.Lock
	s.step(title, func() (err error) {
		l, err = take()
		return err
	})
	s.step(strings.SplitN(title, ":", 2)[0]+", Check: the lock's session still holds it", func() error { return l.Check(ctx) })
	s.step(strings.SplitN(title, ":", 2)[0]+", Unlock", l.Unlock)
}

// goldenScript runs the calls whose statements are recorded, one step each.
type goldenScript struct {
	t   *testing.T
	rec *sqlRecorder
}

// step records the statements fn sends under title.
func (s *goldenScript) step(title string, fn func() error) {
	s.t.Helper()
	s.rec.begin(title)
	if err := fn(); err != nil {
		s.t.Fatalf("%s: %v", title, err)
	}
}

// quietly runs fn, which prepares the database, without recording the
// statements it makes the store send (connections' setup aside).
func (s *goldenScript) quietly(fn func()) {
	s.rec.mu.Lock()
	s.rec.quiet = true
	s.rec.mu.Unlock()
	defer func() {
		s.rec.mu.Lock()
		s.rec.quiet = false
		s.rec.mu.Unlock()
	}()
	fn()
}

// goldenEntry is a statement sent, or a note of what the driver did instead of
// a statement of the store's own text (a transaction's begin, commit or
// rollback through database/sql).
type goldenEntry struct {
	sql, note string
	dropped   bool
}

// goldenStep is one call and what it sent.
type goldenStep struct {
	title   string
	entries []*goldenEntry
}

// sqlRecorder collects the statements of each step; those a connector sends
// on a new connection go apart, once each, as the session setup.
type sqlRecorder struct {
	mu    sync.Mutex
	quiet bool
	steps []*goldenStep
	setup []string
	seen  map[string]bool
}

func (r *sqlRecorder) begin(title string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.steps = append(r.steps, &goldenStep{title: title})
}

// add records e in the current step (a connection's setup apart) and
// returns it, for drop.
func (r *sqlRecorder) add(e goldenEntry) *goldenEntry {
	setup := e.sql != "" && inConnect()
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case setup:
		if !r.seen[e.sql] {
			r.seen[e.sql] = true
			r.setup = append(r.setup, e.sql)
		}
		return nil
	case r.quiet:
		return nil
	case len(r.steps) == 0:
		r.steps = append(r.steps, &goldenStep{title: "(before any step)"})
	}
	st := r.steps[len(r.steps)-1]
	st.entries = append(st.entries, &e)
	return &e
}

// drop takes back e, a statement the driver did not send after all
// (driver.ErrSkip: database/sql prepares it instead, and recStmt records
// it then).
func (r *sqlRecorder) drop(e *goldenEntry) {
	if e == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	e.dropped = true
}

// inConnect reports whether the caller runs inside the Connect method of
// one of the store's connectors: a statement it sends sets up a session.
func inConnect() bool {
	pc := make([]uintptr, 64)
	frames := runtime.CallersFrames(pc[:runtime.Callers(3, pc)])
	for {
		f, more := frames.Next()
		if strings.HasPrefix(f.Function, "github.com/tqscavenger/tqscavenger/sqlstore.") && strings.HasSuffix(f.Function, ").Connect") {
			return true
		}
		if !more {
			return false
		}
	}
}

// pgTracer records what pgx sends: every statement, its transactions'
// begin and commit included.
type pgTracer struct{ rec *sqlRecorder }

func (p pgTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	p.rec.add(goldenEntry{sql: data.SQL})
	return ctx
}

func (pgTracer) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// recConnector records the statements of the connections of the driver
// connector it wraps.
type recConnector struct {
	driver.Connector
	rec *sqlRecorder
}

func (c *recConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &recConn{conn: conn, rec: c.rec}, nil
}

// recConn is a driver connection whose statements are recorded. It has
// every optional interface the store's connectors use, and passes each on
// to the connection it wraps (or does what database/sql does without it).
type recConn struct {
	conn driver.Conn
	rec  *sqlRecorder
}

var (
	_ driver.ConnBeginTx        = (*recConn)(nil)
	_ driver.ConnPrepareContext = (*recConn)(nil)
	_ driver.ExecerContext      = (*recConn)(nil)
	_ driver.QueryerContext     = (*recConn)(nil)
	_ driver.Pinger             = (*recConn)(nil)
	_ driver.SessionResetter    = (*recConn)(nil)
	_ driver.Validator          = (*recConn)(nil)
	_ driver.NamedValueChecker  = (*recConn)(nil)
)

func (c *recConn) Prepare(query string) (driver.Stmt, error) {
	return c.PrepareContext(context.Background(), query)
}

func (c *recConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	var (
		st  driver.Stmt
		err error
	)
	if p, ok := c.conn.(driver.ConnPrepareContext); ok {
		st, err = p.PrepareContext(ctx, query)
	} else {
		st, err = c.conn.Prepare(query)
	}
	if err != nil {
		// Sent and refused (a table that does not exist): it never
		// runs, so no execution of it will record it.
		c.rec.add(goldenEntry{sql: query})
		return nil, err
	}
	return &recStmt{Stmt: st, query: query, rec: c.rec}, nil
}

func (c *recConn) Close() error { return c.conn.Close() }

func (c *recConn) Begin() (driver.Tx, error) {
	return c.BeginTx(context.Background(), driver.TxOptions{})
}

func (c *recConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	var (
		tx  driver.Tx
		err error
	)
	switch b, ok := c.conn.(driver.ConnBeginTx); {
	case ok:
		tx, err = b.BeginTx(ctx, opts)
	case opts == driver.TxOptions{}:
		tx, err = c.conn.Begin() // what database/sql does without ConnBeginTx
	default:
		err = errors.New("the driver connection cannot begin a transaction with options")
	}
	if err != nil {
		return nil, err
	}
	iso := "the session's isolation"
	if opts.Isolation != driver.IsolationLevel(sql.LevelDefault) {
		iso = "isolation " + strings.ToUpper(sql.IsolationLevel(opts.Isolation).String())
	}
	c.rec.add(goldenEntry{note: "a transaction begins: database/sql's BeginTx, " + iso})
	return &recTx{tx: tx, rec: c.rec}, nil
}

func (c *recConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	e, ok := c.conn.(driver.ExecerContext)
	if !ok {
		return nil, driver.ErrSkip
	}
	// Recorded before it runs, so that what it sets off (a KILL QUERY
	// when its context ends) comes after it.
	en := c.rec.add(goldenEntry{sql: query})
	res, err := e.ExecContext(ctx, query, args)
	if errors.Is(err, driver.ErrSkip) {
		c.rec.drop(en)
	}
	return res, err
}

func (c *recConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	q, ok := c.conn.(driver.QueryerContext)
	if !ok {
		return nil, driver.ErrSkip
	}
	en := c.rec.add(goldenEntry{sql: query})
	rows, err := q.QueryContext(ctx, query, args)
	if errors.Is(err, driver.ErrSkip) {
		c.rec.drop(en)
	}
	return rows, err
}

func (c *recConn) Ping(ctx context.Context) error {
	if p, ok := c.conn.(driver.Pinger); ok {
		return p.Ping(ctx)
	}
	return nil
}

func (c *recConn) ResetSession(ctx context.Context) error {
	if r, ok := c.conn.(driver.SessionResetter); ok {
		return r.ResetSession(ctx)
	}
	return nil
}

func (c *recConn) IsValid() bool {
	if v, ok := c.conn.(driver.Validator); ok {
		return v.IsValid()
	}
	return true
}

func (c *recConn) CheckNamedValue(nv *driver.NamedValue) error {
	if n, ok := c.conn.(driver.NamedValueChecker); ok {
		return n.CheckNamedValue(nv)
	}
	return driver.ErrSkip
}

// recStmt is a prepared statement whose every execution is recorded.
type recStmt struct {
	driver.Stmt
	query string
	rec   *sqlRecorder
}

func (s *recStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	e, ok := s.Stmt.(driver.StmtExecContext)
	if !ok {
		return nil, fmt.Errorf("driver statement %T cannot execute with a context", s.Stmt)
	}
	s.rec.add(goldenEntry{sql: s.query})
	return e.ExecContext(ctx, args)
}

func (s *recStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	q, ok := s.Stmt.(driver.StmtQueryContext)
	if !ok {
		return nil, fmt.Errorf("driver statement %T cannot query with a context", s.Stmt)
	}
	s.rec.add(goldenEntry{sql: s.query})
	return q.QueryContext(ctx, args)
}

func (s *recStmt) CheckNamedValue(nv *driver.NamedValue) error {
	if n, ok := s.Stmt.(driver.NamedValueChecker); ok {
		return n.CheckNamedValue(nv)
	}
	return driver.ErrSkip
}

// recTx notes a transaction's end.
type recTx struct {
	tx  driver.Tx
	rec *sqlRecorder
}

func (t *recTx) Commit() error {
	t.rec.add(goldenEntry{note: "the transaction commits: Tx.Commit"})
	return t.tx.Commit()
}

func (t *recTx) Rollback() error {
	t.rec.add(goldenEntry{note: "the transaction rolls back: Tx.Rollback"})
	return t.tx.Rollback()
}

// render writes the golden file of engine e.
func (r *sqlRecorder) render(e sqlstore.Engine) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	dollar := e == sqlstore.Postgres
	var b strings.Builder
	b.WriteString(`-- Code generated by TestSQLGolden (sqlstore/sqlgolden_test.go). DO NOT EDIT.
-- After a deliberate change of the store's SQL, rewrite this file with
--     go test ./sqlstore -run TestSQLGolden -update
-- and review its diff.
--
-- Every statement a sqlstore.DB sends to ` + goldenEngineName(e) + `, recorded at the driver
-- while the test calls each method of store.Store, store.Writer and the
-- optional interfaces the store implements. Each block is one call: a
-- comment naming the method (and its table version) and what the call is
-- for, then its statements in the order they are sent.
--
-- Normalised so that only a change of the SQL changes this file:
--   - a list of any length (an IN list, the rows of a VALUES, OR'ed sets,
--     a sum of lock terms) is its first element and a comment: IN (?, ?, ?)
--     and IN (?) are both written IN (? /* , ... */);
--   - placeholders are the engine's own (? or $n); $n are numbered as if
--     each list had one element;
--   - a statement sent again for each batch of a long input is given once;
--   - a literal that varies from call to call is named in <angle brackets>.
-- A line "-- (...)" is what database/sql asks of the driver rather than a
-- statement of the store's: a transaction's begin and end.

-- Session setup: what the store's connector sends on each new connection,
-- before any statement of the store's.
`)
	if e == sqlstore.SQLite {
		b.WriteString("-- (PRAGMA journal_mode = WAL on a file the store creates only; synchronous = NORMAL in WAL mode only.)\n")
	}
	if len(r.setup) == 0 {
		b.WriteString("-- (none)\n")
	}
	for _, q := range r.setup {
		b.WriteString(normalizeSQL(q, dollar) + ";\n")
	}
	for _, st := range r.steps {
		b.WriteString("\n-- " + st.title + "\n")
		var out []string
		for _, en := range st.entries {
			if en.dropped {
				continue
			}
			line := "-- (" + en.note + ")"
			if en.note == "" {
				line = normalizeSQL(en.sql, dollar) + ";"
			}
			if len(out) > 0 && out[len(out)-1] == line {
				continue // the same statement for the next batch
			}
			out = append(out, line)
		}
		if len(out) == 0 {
			out = append(out, "-- (no statement)")
		}
		b.WriteString(strings.Join(out, "\n") + "\n")
	}
	return b.String()
}

func goldenEngineName(e sqlstore.Engine) string {
	switch e {
	case sqlstore.SQLite:
		return "SQLite"
	case sqlstore.Postgres:
		return "PostgreSQL"
	}
	return "MySQL/MariaDB (recorded on MariaDB)"
}

var (
	// dollarParam is a PostgreSQL placeholder.
	dollarParam = regexp.MustCompile(`\$[0-9]+`)
	// scalarItem is a placeholder; valueItem is an element of a value
	// list: a placeholder, or a row of them.
	scalarItem = regexp.MustCompile(`^(\?|\$[0-9]+)$`)
	valueItem  = regexp.MustCompile(`^(\?|\$[0-9]+|\((\?|\$[0-9]+)(, (\?|\$[0-9]+))*\))$`)
	// varyingLiterals name the varyingLiterals that vary between calls.
	varyingLiterals = []struct {
		re   *regexp.Regexp
		with string
	}{
		{regexp.MustCompile(`LIMIT [0-9]+ FOR UPDATE NOWAIT`), "LIMIT <number of fences> FOR UPDATE NOWAIT"},
		{regexp.MustCompile(`^KILL QUERY [0-9]+$`), "KILL QUERY <connection id>"},
	}
)

// listMark follows the first element of a list of any length.
func listMark(sep string) string { return " /* " + strings.TrimSpace(sep) + " ... */" }

// normalizeSQL writes q in its canonical form (see the golden file's header).
func normalizeSQL(q string, dollar bool) string {
	n := collapseLists(q)
	if dollar && n != q {
		n = renumberParams(n)
	}
	for _, l := range varyingLiterals {
		n = l.re.ReplaceAllString(n, l.with)
	}
	return n
}

// renumberParams numbers the placeholders of q from $1, keeping their order and
// their repeats: the k-th smallest number left becomes $k.
func renumberParams(q string) string {
	var nums []int
	for _, m := range dollarParam.FindAllString(q, -1) {
		n, _ := strconv.Atoi(m[1:])
		nums = append(nums, n)
	}
	slices.Sort(nums)
	nums = slices.Compact(nums)
	return dollarParam.ReplaceAllStringFunc(q, func(m string) string {
		n, _ := strconv.Atoi(m[1:])
		i, _ := slices.BinarySearch(nums, n)
		return "$" + strconv.Itoa(i+1)
	})
}

// sqlSeg is a piece of a statement at one depth of parentheses: plain text,
// or a term, a parenthesised group and the name it follows directly, if
// any (COALESCE(…)).
type sqlSeg struct {
	text string
	term bool
}

// collapseLists writes each list in q, at every depth, as its first element:
// a run of equal terms (placeholders aside) joined by ", ", " OR " or
// " + ", and the values of an IN list.
func collapseLists(q string) string {
	var segs []sqlSeg
	start := 0
	for i := 0; i < len(q); i++ {
		switch q[i] {
		case '\'':
			if j := strings.IndexByte(q[i+1:], '\''); j >= 0 {
				i += j + 1
			}
		case '(':
			j := closingParen(q, i)
			if j < 0 {
				return q // unbalanced: leave it as it is
			}
			inner := collapseLists(q[i+1 : j])
			text := q[start:i]
			k := len(text)
			for k > 0 && (isIdentByte(text[k-1])) {
				k--
			}
			if strings.HasSuffix(text[:k], "IN ") {
				inner = valueList(inner)
			}
			if k > 0 {
				segs = append(segs, sqlSeg{text: text[:k]})
			}
			segs = append(segs, sqlSeg{text: text[k:] + "(" + inner + ")", term: true})
			i, start = j, j+1
		}
	}
	if start < len(q) {
		segs = append(segs, sqlSeg{text: q[start:]})
	}
	var b strings.Builder
	for i := 0; i < len(segs); i++ {
		b.WriteString(segs[i].text)
		if !segs[i].term {
			continue
		}
		j, sep := i, ""
		for j+2 < len(segs) && segs[j+2].term && isListSep(segs[j+1].text) && (sep == "" || segs[j+1].text == sep) && sameTerm(segs[j+2].text, segs[i].text) {
			sep, j = segs[j+1].text, j+2
		}
		if j > i {
			b.WriteString(listMark(sep))
			i = j
		}
	}
	return b.String()
}

// valueList writes the contents of an IN (…) as a list of any length
// if it is a list of values: placeholders, or rows of them.
func valueList(inner string) string {
	mark := listMark(",")
	if first, ok := strings.CutSuffix(inner, mark); ok && valueItem.MatchString(first) {
		return inner // a run of rows, collapsed already
	}
	if valueItem.MatchString(inner) {
		return inner + mark // one value, or one row
	}
	items := strings.Split(inner, ", ")
	for _, it := range items {
		if !scalarItem.MatchString(it) {
			return inner // not a list of values: a subquery, say
		}
	}
	return items[0] + mark
}

// closingParen returns the index of the parenthesis that closes the one at
// q[open], or -1.
func closingParen(q string, open int) int {
	depth := 0
	for i := open; i < len(q); i++ {
		switch q[i] {
		case '\'':
			if j := strings.IndexByte(q[i+1:], '\''); j >= 0 {
				i += j + 1
			}
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				return i
			}
		}
	}
	return -1
}

func isIdentByte(c byte) bool {
	return c == '_' || c == '.' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

func isListSep(s string) bool { return s == ", " || s == " OR " || s == " + " }

// sameTerm reports whether two terms are equal but for the numbers of
// their placeholders.
func sameTerm(a, b string) bool {
	return dollarParam.ReplaceAllLiteralString(a, "$") == dollarParam.ReplaceAllLiteralString(b, "$")
}
