package interop

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"
)

// kinds counts Temporal's error and warning kinds: a log line's level,
// message and error text with ids and numbers blanked out, and the
// persistence error and condition failure metrics by type and operation.
type kinds map[string]int

var (
	reUUID   = regexp.MustCompile(`[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}`)
	reHex    = regexp.MustCompile(`\b[0-9a-fA-F]{16,}\b`)
	reNumber = regexp.MustCompile(`\d+(\.\d+)?`)
	reQuoted = regexp.MustCompile(`"[^"]*"`)
	reMasked = regexp.MustCompile(`something went wrong, please retry \(([0-9a-f]+)\)`)
	// rePersistence picks the kinds that are about persistence or
	// ownership: the ones a scavenger could cause.
	rePersistence = regexp.MustCompile(`(?i)persist|condition|range ?id|does not exist|not ?found|ownership|lease|sql|database|deadlock|lock wait|busy|locked|task queue|taskqueue|partition|unload`)
)

func normalize(s string) string {
	s = reUUID.ReplaceAllString(s, "U")
	s = reHex.ReplaceAllString(s, "H")
	s = reQuoted.ReplaceAllString(s, `"…"`)
	s = reNumber.ReplaceAllString(s, "N")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// logKinds reads Temporal's JSON logs (one per server run, stops[i] when
// run i was sent SIGTERM): the kinds of the lines outside the window, inside
// it, and during a shutdown.
//
// queueStops counts the physical queues matching stopped, for any cause
// (its info line "Stopped physicalTaskQueueManager"); a stop for a
// conflict is also a kind (kindConflictStop). Zero means the stop lines,
// which tell a queue manager's condition failure's cause, were not read.
func logKinds(window [2]time.Time, stops []time.Time, paths ...string) (outside, inside, shutdown kinds, queueStops int, err error) {
	outside, inside, shutdown = kinds{}, kinds{}, kinds{}
	masked := map[string]string{}
	for i, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			return nil, nil, nil, 0, err
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 4<<20), 4<<20)
		for sc.Scan() {
			var l struct {
				Level, Msg, Hash string
				Error            string    // Temporal's "error", the SDK's "Error"
				TS               time.Time `json:"ts"`
				Operation        string    `json:"operation"`       // a persistence call's (Temporal's metrics wrapper)
				StoreOperation   string    `json:"store-operation"` // matching's name of the persistence call
				Cause            string    `json:"cause"`           // why matching stopped a physical queue
			}
			if json.Unmarshal(sc.Bytes(), &l) != nil {
				continue
			}
			// The frontend masks internal errors for clients as "something
			// went wrong, please retry (HASH)", logging the error with the
			// hash first: Temporal's own workers log the masked form.
			if l.Msg == "masked service failures" && l.Hash != "" {
				masked[l.Hash] = l.Error
			}
			if m := reMasked.FindStringSubmatch(l.Error); m != nil && masked[m[1]] != "" {
				l.Error = "masked: " + masked[m[1]]
			}
			k := outside
			switch {
			case i < len(stops) && !l.TS.Before(stops[i]):
				k = shutdown
			case !l.TS.Before(window[0]) && !l.TS.After(window[1]):
				k = inside
			}
			if l.Msg == "Stopped physicalTaskQueueManager" {
				queueStops++
				if l.Cause == "Conflict" {
					k[kindConflictStop]++
				}
				continue
			}
			if l.Level != "error" && l.Level != "warn" && l.Level != "dpanic" && l.Level != "panic" && l.Level != "fatal" {
				continue
			}
			k[logKind(l.Level, l.Msg, l.Error, l.Operation+" "+l.StoreOperation)]++
		}
		f.Close()
		if err := sc.Err(); err != nil {
			return nil, nil, nil, 0, err
		}
	}
	return outside, inside, shutdown, queueStops, nil
}

// The transient families: one kind each, whatever the call and level, as
// which call they meet is chance under load.
const (
	kindCancelled    = "log: (a call cancelled, e.g. by a queue's unload) | context canceled"
	kindTimedOut     = "log: (a call timed out) | context deadline exceeded"
	kindTaskTableTO  = "log: (a persistence call on the task tables timed out) | context deadline exceeded"
	kindShuttingDown = "log: (a request met a queue being unloaded) | task queue shutting down"
	// kindTxDone: a persistence call whose context ended (cancelled, or
	// past its deadline) inside its transaction. database/sql rolls such a
	// transaction back itself, so Temporal's next step on it (a statement,
	// its commit, or its deferred rollback) fails with sql.ErrTxDone, and
	// which step it meets is chance. Compared strictly (it can be a wait on
	// a lock), except in phase 3, where tqscavenger does not run and the
	// fairness change makes matching unload, cancelling its calls.
	kindTxDone = "log: (a call's context ended inside its transaction) | sql: transaction has already been committed or rolled back"
	// kindConflictStop: a loaded queue that matching stopped because one
	// of its writes was refused on its row's condition (range_id moved, or
	// the row gone): the cause "Conflict" of its info line "Stopped
	// physicalTaskQueueManager". Its stop is logged once, with the first
	// cause (a queue that failed to take its row over stops with
	// "InitError"), so each is one loaded queue that lost its row.
	kindConflictStop = "log: (a loaded queue stopped: a write of its row was refused) | Stopped physicalTaskQueueManager, cause Conflict"
	// kindPoolReplaced: a call that met the connection pool Temporal was
	// replacing. Temporal's SQL handle (sqlplugin.DatabaseHandle.ConvertError)
	// closes its whole pool and opens a new one when any call returns a
	// connection error (driver.ErrBadConn among them), and every call then
	// in flight on the old pool fails with database/sql's "database is
	// closed", on whatever table it was. lib/pq marks a connection bad when
	// a call's context ends on it, so a poll's end or a queue's unload
	// (kindCancelled, hundreds per run in the control too) can set it off.
	// No tqscavenger statement ends or breaks a Temporal connection; a lock
	// of ours that made a call time out shows first as the strict
	// kindTaskTableTO or kindTxDone. Reported with both runs' counts, as are
	// the refreshes themselves (kindPoolRefresh). Once, on PostgreSQL with
	// fairness off beside CI's race tests: 15 such lines in the scavenged
	// run, none in its control, and no strict kind beside them.
	kindPoolReplaced = "log: (a call met the connection pool Temporal was replacing after a connection error) | sql: database is closed"
	// kindPoolRefresh is Temporal's count of those pool replacements.
	kindPoolRefresh = "metric persistence_session_refresh_attempts"
)

// kindQueueMgrPrefix begins matching's count of condition failures its
// queue managers met (condition_failed_errors, operation TaskQueueMgr). It
// counts a refused write of a loaded queue's row, and as much every task
// spooled into a queue already stopping for any cause, which Temporal fails
// with a ConditionFailedError of its own ("task queue shutting down") and
// no database write: so after a takeover that met a deleted row (cause
// InitError) or a queue's idle unload, with tasks arriving, it counts
// without any row refused. Which of the two it was, kindConflictStop tells.
const kindQueueMgrPrefix = "metric condition_failed_errors{operation=TaskQueueMgr,"

// reTaskTables names the persistence calls on the four tables tqscavenger
// deletes from (task_queues, task_queues_v2, tasks, tasks_v2), by
// Temporal's operation names, matching's store-operation names and the
// SQL store's error texts.
var reTaskTables = regexp.MustCompile(`\b(CreateTasks|GetTasks|CompleteTasksLessThan|CompleteTask|CreateTaskQueue|UpdateTaskQueue|GetTaskQueue|ListTaskQueue|DeleteTaskQueue|get-tasks|complete-tasks?|complete-tasks-less-than|create-task|update-task-queue|stop-task-queue)\b|Failed to lock task queue`)

// pqCancelled is PostgreSQL's error for a statement cancelled at the
// client's request (SQLSTATE 57014), as lib/pq, which Temporal's
// postgresql plugin uses, reports a context that ended mid-statement.
const pqCancelled = "pq: canceling statement due to user request"

// reLockFreeRead names matching's persistence calls that are plain SELECTs
// on the task tables: they take no lock and wait on none.
var reLockFreeRead = regexp.MustCompile(`\b(GetTaskQueue|GetTasks|ListTaskQueue|get-tasks)\b`)

// logKind is a log line's kind (op: the line's persistence operation
// fields, if any). A call that timed out is told apart by whether it was a
// persistence call on the task tables (tqscavenger's locks could make it
// wait: compared strictly) or anything else (an RPC between Temporal's
// services, a poll, another table: noise under load, reported).
func logKind(level, msg, err, op string) string {
	call := op + " " + msg + " " + err
	switch {
	case strings.HasSuffix(err, "context canceled"):
		return kindCancelled
	case strings.Contains(err, pqCancelled) && reTaskTables.MatchString(call) && !reLockFreeRead.MatchString(call):
		// lib/pq reports a call whose context ended while PostgreSQL ran
		// it with the server's cancel error, whether the context was
		// cancelled or past its deadline: on a call that can wait on a
		// lock, it may be a timeout, compared strictly.
		return kindTaskTableTO
	case strings.Contains(err, pqCancelled):
		// A lock-free read (matching's GetTaskQueue and GetTasks are
		// plain SELECTs, run under a poll's context that its end
		// cancels) or a call on another table: no tqscavenger lock makes
		// either wait, so it is a call cancelled, as context canceled is
		// when the cancel comes before the statement is sent.
		return kindCancelled
	case strings.Contains(err, "context deadline exceeded") && reTaskTables.MatchString(call) && !reLockFreeRead.MatchString(call):
		return kindTaskTableTO
	case strings.Contains(err, "context deadline exceeded") && reTaskTables.MatchString(call):
		// A plain SELECT on the task tables waits on no row lock on any
		// engine (PostgreSQL's and InnoDB's reads are MVCC snapshots, a
		// WAL reader never waits for SQLite's writer): no tqscavenger
		// lock can make it time out, as for lib/pq's cancel above. Once,
		// on MariaDB beside CI's race tests and four other builds (load
		// 18 on 2 cores): 1 GetTaskQueue of a vm: queue past its deadline.
		return kindTimedOut
	case strings.Contains(err, "context deadline exceeded"):
		return kindTimedOut
	case err == "task queue shutting down":
		return kindShuttingDown
	case strings.Contains(err, "sql: transaction has already been committed or rolled back"),
		strings.Contains(err, "driver: bad connection"):
		// The second form: lib/pq marks its connection bad when a call's
		// context ends while a statement runs on it, so the transaction's
		// next step there, if it reaches the driver before database/sql's
		// own rollback, fails with driver.ErrBadConn (which Temporal logs
		// as "database connection lost: driver: bad connection", and which
		// makes it replace its pool: kindPoolReplaced). A connection the
		// network or the server broke fails the same way; tqscavenger
		// breaks none, and the kind stays strict either way.
		return kindTxDone
	case strings.Contains(err, "sql: database is closed"):
		return kindPoolReplaced
	}
	return "log " + level + ": " + normalize(msg) + " | " + normalize(err)
}

// reTransport is an RPC that failed for want of a connection: a service
// restarting or a connection dropped under load. No tqscavenger statement
// can do that to Temporal's RPCs.
var reTransport = regexp.MustCompile(`connection refused|transport is closing|error reading from server|connection reset by peer|broken pipe|code = Unavailable desc = (connection error|error reading)|i/o timeout`)

// noiseKind says whether a kind is timing or transport noise: reported
// with its counts in the run and the control, never a failed check. These
// are calls cancelled (matching cancels a queue's calls when it unloads
// it, a worker's stop cancels its polls), RPCs that timed out, requests
// that met a queue being unloaded, and RPCs without a connection. What a
// scavenger could cause through them has a cause that is compared
// strictly: a queue made to unload by a deleted row shows condition
// failures and "does not exist" kinds first; a task lost shows in the
// workflows' outcomes; a lock that made Temporal wait shows as a timed-out
// persistence call on the task tables (kindTaskTableTO, strict).
func noiseKind(n string) bool {
	switch n {
	case kindCancelled, kindTimedOut, kindShuttingDown, kindPoolReplaced:
		return true
	}
	if strings.HasPrefix(n, kindPoolRefresh+"{") {
		return true
	}
	if driverErrorElsewhere(n) {
		return true
	}
	if !strings.HasPrefix(n, "log ") || reTaskTables.MatchString(n) || rePersistenceStrict.MatchString(n) {
		return false
	}
	return reTransport.MatchString(n)
}

// reDriverErrorMetric is a persistence error metric whose type is only a
// database driver's generic error (lib/pq's *pq.Error, the MySQL driver's
// *mysql.MySQLError), and its operation.
var reDriverErrorMetric = regexp.MustCompile(`^metric persistence_error_with_type\{error_type=(pq_Error|mysql_MySQLError),operation=([A-Za-z]+),`)

// driverErrorElsewhere says whether n is a driver's generic error metric
// on a call outside the four task tables (matching's GetTaskQueueUserData
// on task_queue_user_data, say). The metric names the driver's error type,
// never which error it was: a statement cancelled by a poll's end or a
// queue's unload (SQLSTATE 57014) counts there as much as anything else.
// The same failure's log line says which it was and is compared under its
// own rule (a cancel is kindCancelled; any other error a strict kind), and
// no tqscavenger statement reads, writes or locks those tables, so the
// metric alone is reported, with both runs' counts. Once, on PostgreSQL
// beside CI's race tests: 1 pq_Error on GetTaskQueueUserData, no strict
// log kind beside it.
func driverErrorElsewhere(n string) bool {
	m := reDriverErrorMetric.FindStringSubmatch(n)
	return m != nil && !reTaskTables.MatchString(m[2])
}

// rePersistenceStrict: kinds no transport failure explains.
var rePersistenceStrict = regexp.MustCompile(`(?i)condition|range ?id|does not exist|ownership|lease|deadlock|lock wait|SQLSTATE`)

// metricKinds reads the persistence error metrics from a /metrics scrape.
func metricKinds(body string) kinds {
	k := kinds{}
	for _, m := range parseProm(body) {
		switch m.name {
		case "persistence_errors", "persistence_error_with_type", "condition_failed_errors",
			"persistence_errors_resource_exhausted", "visibility_persistence_errors", "visibility_persistence_error_with_type",
			"persistence_session_refresh_attempts":
		default:
			continue
		}
		if m.value == 0 {
			continue
		}
		// Unavailable (transient: timeouts, cancelled calls, lost
		// connections) and the plain error count are one kind each over
		// every operation, as a cancelled call is counted under whichever
		// call an unload met; the logs say which error it was. Condition
		// failures and not-found errors keep their operation.
		labels := []string{"error_type", "operation", "service_name", "task_type"}
		if et := m.labels["error_type"]; et == "serviceerror_Unavailable" || strings.HasPrefix(et, "context_") || m.name == "persistence_errors" || m.name == "visibility_persistence_errors" {
			labels = []string{"error_type", "service_name"}
		}
		var parts []string
		for _, l := range labels {
			if v := m.labels[l]; v != "" {
				parts = append(parts, l+"="+v)
			}
		}
		k["metric "+m.name+"{"+strings.Join(parts, ",")+"}"] += int(m.value)
	}
	return k
}

// minus is k less the counts of o (metrics scraped earlier in a run).
func (k kinds) minus(o kinds) kinds {
	out := kinds{}
	for n, c := range k {
		if d := c - o[n]; d > 0 {
			out[n] = d
		}
	}
	return out
}

func (k kinds) add(o kinds) {
	for n, c := range o {
		k[n] += c
	}
}

// beyond returns the kinds of k that control does not show.
func (k kinds) beyond(control kinds) kinds {
	out := kinds{}
	for n, c := range k {
		if _, ok := control[n]; !ok {
			out[n] = c
		}
	}
	return out
}

// persistence keeps the kinds about persistence or ownership, the ones
// compared with the control. The metric kinds of transient errors
// (Unavailable, cancelled, timed out) and the plain error count are left
// out: Temporal logs every such error with its text ("Operation failed with
// internal error." and the like), and those log kinds are compared.
func (k kinds) persistence() kinds {
	out := kinds{}
	for n, c := range k {
		if strings.HasPrefix(n, "metric ") {
			if transientMetric(n) {
				continue
			}
			out[n] = c
		} else if strings.HasPrefix(n, "log: (") || rePersistence.MatchString(n) {
			out[n] = c
		}
	}
	return out
}

// transientMetric: the metric kinds of transient errors, and the plain
// error count.
func transientMetric(n string) bool {
	for _, t := range []string{"error_type=serviceerror_Unavailable", "error_type=context_", "error_type=serviceerror_DeadlineExceeded", "error_type=serviceerror_Canceled"} {
		if strings.Contains(n, t) {
			return true
		}
	}
	return strings.HasPrefix(n, "metric persistence_errors{") || strings.HasPrefix(n, "metric visibility_persistence_errors{")
}

func (k kinds) total() int {
	n := 0
	for _, c := range k {
		n += c
	}
	return n
}

func (k kinds) lines() []string {
	var out []string
	for n, c := range k {
		out = append(out, fmt.Sprintf("%6d  %s", c, n))
	}
	sort.Slice(out, func(i, j int) bool { return out[i][8:] < out[j][8:] })
	return out
}

// TestKindClassification checks how log lines become kinds and which kinds
// are takeover races, on lines as Temporal 1.32.1 logs them. It needs no
// server.
func TestKindClassification(t *testing.T) {
	dir := t.TempDir()
	p := dir + "/temporal.log"
	lines := []string{
		`{"level":"error","ts":"2026-12-01T10:00:01.000Z","msg":"masked service failures","hash":"431e2549","error":"rpc error: code = Unknown desc = Task queue does not exists"}`,
		`{"level":"warn","ts":"2026-12-01T10:00:01.100Z","msg":"Failed to poll for task.","Error":"something went wrong, please retry (431e2549)"}`,
		`{"level":"error","ts":"2026-12-01T10:00:02.000Z","msg":"Operation failed with internal error.","error":"GetTaskQueue operation failed. Failed to check if task queue /_sys/act-03/2 of type Activity existed. Error: context canceled"}`,
		`{"level":"error","ts":"2026-12-01T10:00:03.000Z","msg":"Operation failed with internal error.","error":"context deadline exceeded","operation":"CompleteTasksLessThan"}`,
		`{"level":"error","ts":"2026-12-01T10:00:04.000Z","msg":"Persistent store operation failure","store-operation":"get-tasks","error":"GetTasks operation failed. Failed to get rows. Error: context deadline exceeded"}`,
		`{"level":"warn","ts":"2026-12-01T10:00:05.000Z","msg":"Unable to call matching.PollActivityTaskQueue.","error":"context deadline exceeded"}`,
		`{"level":"warn","ts":"2026-12-01T10:00:30.000Z","msg":"Failed to sync state after drain completion","error":"Task queue does not exists"}`,
		`{"level":"error","ts":"2026-12-01T10:00:40.000Z","msg":"service failures","error":"Task queue does not exists"}`,
		`{"level":"info","ts":"2026-12-01T10:00:41.000Z","msg":"Started physicalTaskQueueManager"}`,
		`{"level":"info","ts":"2026-12-01T10:00:20.000Z","msg":"Stopped physicalTaskQueueManager","component":"matching-engine","lifecycle":"Stopped","cause":"Conflict"}`,
		`{"level":"info","ts":"2026-12-01T10:00:21.000Z","msg":"Stopped physicalTaskQueueManager","component":"matching-engine","lifecycle":"Stopped","cause":"InitError"}`,
		`{"level":"info","ts":"2026-12-01T10:00:42.000Z","msg":"Stopped physicalTaskQueueManager","component":"matching-engine","lifecycle":"Stopped","cause":"ShuttingDown"}`,
	}
	if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	out, in, shut, stops, err := logKinds([2]time.Time{t0, t0.Add(10 * time.Second)}, []time.Time{t0.Add(35 * time.Second)}, p)
	if err != nil {
		t.Fatal(err)
	}
	want := kinds{
		"log error: masked service failures | rpc error: code = Unknown desc = Task queue does not exists":         1,
		"log warn: Failed to poll for task. | masked: rpc error: code = Unknown desc = Task queue does not exists": 1,
		kindCancelled:   1,
		kindTaskTableTO: 1, // CompleteTasksLessThan: a delete, it can wait on a lock
		kindTimedOut:    2, // get-tasks, a plain SELECT, and a poll
	}
	if fmt.Sprint(in) != fmt.Sprint(want) {
		t.Errorf("window kinds:\n got %v\nwant %v", in, want)
	}
	if len(out) != 2 || out["log warn: Failed to sync state after drain completion | Task queue does not exists"] != 1 || out[kindConflictStop] != 1 {
		t.Errorf("outside kinds: %v", out)
	}
	if stops != 3 {
		t.Errorf("queue stops read: %d, want 3 (Conflict, InitError, ShuttingDown)", stops)
	}
	if len(shut) != 1 || shut["log error: service failures | Task queue does not exists"] != 1 {
		t.Errorf("shutdown kinds: %v", shut)
	}
	for k, race := range map[string]bool{
		"log error: masked service failures | rpc error: code = Unknown desc = Task queue does not exists":         true,
		"log warn: Failed to poll for task. | masked: rpc error: code = Unknown desc = Task queue does not exists": true,
		"log error: failed to load child partition after root partition was loaded | Task queue does not exists":   true,
		"log warn: Failed to sync state after drain completion | Task queue does not exists":                       false,
		"log error: Persistent store operation failure | Task queue does not exists":                               false,
		kindTakeoverMetric: true,
		"metric persistence_error_with_type{error_type=persistence_ConditionFailedError,operation=CreateTasks,service_name=matching}": false,
		"metric condition_failed_errors{operation=TaskQueueMgr,service_name=matching,task_type=Workflow}":                             false,
	} {
		if takeoverRace(k) != race {
			t.Errorf("takeoverRace(%q) = %t, want %t", k, !race, race)
		}
	}
	for k, noise := range map[string]bool{
		kindCancelled: true, kindTimedOut: true, kindShuttingDown: true, kindTaskTableTO: false, kindPoolReplaced: true,
		"metric persistence_session_refresh_attempts{service_name=matching}":                                         true,
		"log warn: Failed to poll for task. | rpc error: code = Unavailable desc = connection error: desc = \"…\"":   true,
		"log error: Unable to call matching.AddActivityTask | transport is closing":                                  true,
		"log error: Persistent store operation failure | GetTasks operation failed. Error: connection refused":       false,
		"log error: Operation failed with internal error. | Error N (N): Deadlock found; try restarting transaction": false,
		"log warn: Failed to sync state after drain completion | Task queue does not exists":                         false,
		kindTakeoverMetric: false,
		// A driver's generic error: reported on a call outside the task
		// tables (its log line says which error), strict on theirs.
		"metric persistence_error_with_type{error_type=pq_Error,operation=GetTaskQueueUserData,service_name=matching}":                         true,
		"metric persistence_error_with_type{error_type=mysql_MySQLError,operation=GetWorkflowExecution,service_name=history}":                  true,
		"metric persistence_error_with_type{error_type=pq_Error,operation=UpdateTaskQueue,service_name=matching}":                              false,
		"metric persistence_error_with_type{error_type=pq_Error,operation=GetTasks,service_name=matching}":                                     false,
		"metric persistence_error_with_type{error_type=persistence_ConditionFailedError,operation=GetTaskQueueUserData,service_name=matching}": false,
	} {
		if noiseKind(k) != noise {
			t.Errorf("noiseKind(%q) = %t, want %t", k, !noise, noise)
		}
	}
	// Both forms of a transaction that database/sql had rolled back are
	// one kind, and a lock's timeout is not that kind.
	for _, l := range [][3]string{
		{"error", "transaction rollback error", "sql: transaction has already been committed or rolled back"},
		{"error", "Operation failed with internal error.", "UpdateTaskQueue operation failed. Failed to commit transaction. Error: sql: transaction has already been committed or rolled back"},
	} {
		if got := logKind(l[0], l[1], l[2], ""); got != kindTxDone {
			t.Errorf("logKind(%q) = %q, want %q", l[2], got, kindTxDone)
		}
	}
	// CI's five lines at 9e53bc5 (PostgreSQL, fairness off): every call in
	// flight on the pool Temporal replaced, whatever its table, is one kind.
	for _, l := range [][2]string{
		{"Operation failed with internal error.", "GetTasks operation failed. Failed to get rows. Error: sql: database is closed"},
		{"masked service failures", "rpc error: code = Unknown desc = sql: database is closed"},
		{"Unable to call matching.PollWorkflowTaskQueue.", "sql: database is closed"},
		{"Operation failed with internal error.", "GetTaskQueue operation failed. Failed to check if task queue temporal-sys-per-ns-tq of type Workflow existed. Error: sql: database is closed"},
	} {
		if got := logKind("error", l[0], l[1], ""); got != kindPoolReplaced {
			t.Errorf("logKind(%q) = %q, want %q", l[1], got, kindPoolReplaced)
		}
	}
	// CI at 5061551, under a load of 18 on 2 cores: the transaction's
	// step that met lib/pq's bad connection, and a lock-free read past
	// its deadline.
	if got := logKind("error", "Operation failed with internal error.", "database connection lost: driver: bad connection", "UpdateTaskQueue"); got != kindTxDone {
		t.Errorf("a transaction's step on a connection lib/pq marked bad is %q, want %q", got, kindTxDone)
	}
	if got := logKind("error", "Operation failed with internal error.", "GetTaskQueue operation failed. Failed to check if task queue vm:dae26da8 of type Workflow existed. Error: context deadline exceeded", "GetTaskQueue"); got != kindTimedOut {
		t.Errorf("a lock-free read past its deadline is %q, want %q", got, kindTimedOut)
	}
	if got := logKind("error", "Operation failed with internal error.", "UpdateTaskQueue operation failed. Error: context deadline exceeded", "UpdateTaskQueue"); got != kindTaskTableTO {
		t.Errorf("a timed-out UpdateTaskQueue is %q, want %q", got, kindTaskTableTO)
	}
	// lib/pq's cancel error: a call cancelled on a lock-free read or
	// another table, a possible timeout on a call that can wait on a lock.
	for _, c := range []struct{ msg, err, op, want string }{
		{"Operation failed with internal error.", "GetTaskQueue operation failed. Failed to check if task queue /_sys/act-03/2 of type Activity existed. Error: pq: canceling statement due to user request", "", kindCancelled},
		{"Persistent store operation failure", "GetTasks operation failed. Failed to get rows. Error: pq: canceling statement due to user request", "get-tasks", kindCancelled},
		{"Operation failed with internal error.", "UpdateTaskQueue operation failed. Failed to lock task queue. Error: pq: canceling statement due to user request", "UpdateTaskQueue", kindTaskTableTO},
		{"Persistent store operation failure", "CreateTasks operation failed. Error: pq: canceling statement due to user request", "create-task", kindTaskTableTO},
		{"Operation failed with internal error.", "GetWorkflowExecution: failed. Error: pq: canceling statement due to user request", "GetWorkflowExecution", kindCancelled},
	} {
		if got := logKind("error", c.msg, c.err, c.op); got != c.want {
			t.Errorf("logKind(%q, op %q) = %q, want %q", c.err, c.op, got, c.want)
		}
	}
	for k, cond := range map[string]bool{
		kindTakeoverMetric: true,
		"metric condition_failed_errors{operation=TaskQueueMgr,service_name=matching,task_type=Activity}":                             true,
		"metric persistence_error_with_type{error_type=persistence_ConditionFailedError,operation=CreateTasks,service_name=matching}": true,
		"log error: Persistent store operation failure | Task queue range ID was N when it was should have been N":                    true,
		"log warn: Failed to sync state after drain completion | Task queue does not exists":                                          false,
		"metric persistence_error_with_type{error_type=serviceerror_NotFound,operation=GetTaskQueue,service_name=matching}":           false,
	} {
		if queueRowCondition(k) != cond {
			t.Errorf("queueRowCondition(%q) = %t, want %t", k, !cond, cond)
		}
	}
	m := metricKinds(`persistence_error_with_type{error_type="serviceerror_Unavailable",operation="GetTaskQueue",service_name="matching"} 2
persistence_error_with_type{error_type="persistence_ConditionFailedError",operation="UpdateTaskQueue",service_name="matching"} 3
persistence_errors{operation="GetTaskQueue",service_name="matching"} 2
`)
	if p := m.persistence(); len(p) != 1 || p[kindTakeoverMetric] != 3 {
		t.Errorf("compared metric kinds: %v (all: %v)", p, m)
	}
}

// TestCompareQueueRowConditions checks the rule for queue-row condition
// failures the control lacks: reported when all fell in phase 1 and
// tqscavenger deleted no queue row there; a failed check when it did, and
// in phase 2 beyond the queue rows it deleted. It needs no server.
func TestCompareQueueRowConditions(t *testing.T) {
	mgr := "metric condition_failed_errors{operation=TaskQueueMgr,service_name=matching,task_type=Activity}"
	for _, c := range []struct {
		name              string
		kind              string
		p1Deleted         int64
		inPhase2          int
		p2Deleted         int64
		inPhase3          int
		wantFail, wantRep bool
		queueStops        int // 0: the stops' log lines were not read
	}{
		{"phase 1, no queue deleted", mgr, 0, 0, 0, 0, false, true, 0},
		{"phase 1, queues deleted", mgr, 3, 0, 0, 0, true, false, 0},
		{"phase 2, loaded queue, the stops unread", mgr, 0, 1, 10, 0, true, false, 0},
		{"phase 2, queue managers' count, the stops read", mgr, 0, 1, 10, 0, false, true, 40},
		{"phase 1, queues deleted, the stops read", mgr, 3, 0, 0, 0, false, true, 40},
		{"phase 2 takeover within the deletes", kindTakeoverMetric, 0, 1, 10, 0, false, false, 0},
		{"phase 2 takeovers beyond the deletes", kindTakeoverMetric, 0, 1, 0, 0, true, false, 0},
		{"phase 3, the fairness flip", mgr, 0, 1, 10, 1, false, true, 0},
		{"phase 2 and phase 3", mgr, 0, 2, 10, 1, true, false, 0},
		{"transaction ended, phase 2", kindTxDone, 0, 1, 10, 0, true, false, 0},
		{"transaction ended, phase 3", kindTxDone, 0, 1, 10, 1, false, true, 0},
		{"loaded queue stopped for a conflict, phase 2", kindConflictStop, 0, 1, 10, 0, true, false, 40},
		{"loaded queue stopped for a conflict, phase 3", kindConflictStop, 0, 1, 10, 1, false, true, 40},
		{"loaded queue stopped for a conflict, phase 1, queues deleted", kindConflictStop, 3, 0, 0, 0, true, false, 40},
	} {
		t.Run(c.name, func(t *testing.T) {
			rep := &report{cfg: runConfig{engine: "postgres", kind: realServe},
				kinds: kinds{c.kind: max(1, c.inPhase2)}, windowKinds: kinds{}, phase2Kinds: kinds{},
				p1: counts{QueuesDeleted: c.p1Deleted}, p2: counts{QueuesDeleted: c.p2Deleted}, queueStops: c.queueStops}
			if c.inPhase2 > 0 {
				rep.phase2Kinds[c.kind] = c.inPhase2
			}
			if c.inPhase3 > 0 {
				rep.phase3Kinds = kinds{c.kind: c.inPhase3}
			}
			rep.compare(&report{kinds: kinds{}, windowKinds: kinds{}})
			if (len(rep.problems) > 0) != c.wantFail {
				t.Errorf("problems %q, want failed %t", rep.problems, c.wantFail)
			}
			if (rep.unattributed[c.kind]+rep.stoppingSpools[c.kind] > 0) != c.wantRep {
				t.Errorf("unattributed %v, stopping spools %v, want reported %t", rep.unattributed, rep.stoppingSpools, c.wantRep)
			}
		})
	}
}

// TestCompareSplitTakeovers: a takeover kind seen in phase 1 and in phase
// 2 is judged in parts, each by its phase's rule: Temporal's own in phase
// 1 when tqscavenger deleted no queue row there, a takeover race in phase
// 2 within the queue rows it deleted.
func TestCompareSplitTakeovers(t *testing.T) {
	for _, c := range []struct {
		name                        string
		total, inPhase2             int
		p1Deleted, p2Deleted        int64
		wantFail                    bool
		wantUnattributed, wantRaces int
	}{
		{"one in each phase", 2, 1, 0, 10, false, 1, 1},
		{"phase 1 deleted queues", 2, 1, 3, 10, true, 0, 0},
		{"phase 2 part beyond the deletes", 3, 2, 0, 1, true, 1, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			rep := &report{cfg: runConfig{engine: "postgres", kind: realServe},
				kinds: kinds{kindTakeoverMetric: c.total}, windowKinds: kinds{}, phase2Kinds: kinds{kindTakeoverMetric: c.inPhase2},
				p1: counts{QueuesDeleted: c.p1Deleted}, p2: counts{QueuesDeleted: c.p2Deleted}}
			rep.compare(&report{kinds: kinds{}, windowKinds: kinds{}})
			if (len(rep.problems) > 0) != c.wantFail {
				t.Errorf("problems %q, want failed %t", rep.problems, c.wantFail)
			}
			if rep.unattributed[kindTakeoverMetric] != c.wantUnattributed || rep.takeoverRaces[kindTakeoverMetric] != c.wantRaces {
				t.Errorf("unattributed %v, takeover races %v; want %d and %d", rep.unattributed, rep.takeoverRaces, c.wantUnattributed, c.wantRaces)
			}
		})
	}
}
