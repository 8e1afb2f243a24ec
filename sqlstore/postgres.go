// This file owns what is PostgreSQL's: the dialect, the connection
// settings and error classification.

package sqlstore

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"math"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/tqscavenger/tqscavenger/internal/redact"
	"github.com/tqscavenger/tqscavenger/store"
)

// PostgreSQL: no DELETE … LIMIT, and Temporal's task_id IN (SELECT … LIMIT n)
// can turn into a nested-loop semi-join on a large analyzed table (~4k
// rows/s). Deleting by ctid keeps it a TID scan (~0.7M rows/s).
var postgresDialect = &dialect{
	engine:       Postgres,
	maxSets:      1000,
	deleteRanges: deleteRangesPostgres,
	deleteQueues: deleteQueuesPostgres,
	listTables:   "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()",
	ddlTypes:     [3]string{"BIGINT", "BYTEA", "BYTEA"},
	dollar:       true,
	rowValues:    true,
	// Not database/sql's prepared statements: pgx already prepares and
	// caches each statement per connection (QueryExecModeCacheStatement),
	// and database/sql closes its statements one by one on Close, each a
	// Deallocate round trip that waits up to 5 s on a network that stopped
	// answering (a pass through a paused network then took 10-30 s more to
	// exit). pgx's cache goes with its connection, without a round trip.
	prepare:  false,
	keyRange: true,
	deleteLimited: func(b *builder, t store.Table, q store.QueueKey, r store.TaskRange, limit int) deleteForm {
		b.w("DELETE FROM ", taskTable(t), " WHERE ctid = ANY(ARRAY(SELECT ctid FROM ", taskTable(t), " WHERE ").
			queueTasks(t, q, minKey(r), ">=", &r.Max).w(" ORDER BY ", b.taskOrder(t), " LIMIT ").p(limit).w("))")
		return deleteForm{stmt: b.String(), args: b.args}
	},
	// PostgreSQL has no skip scan: SELECT DISTINCT reads every task of
	// every queue it lists (or hashes and sorts the whole table when it
	// expects few rows). A recursive query that jumps from one
	// (range_hash, task_queue_id) to the next with an index probe each
	// reads one entry per queue instead: 55× faster on 1M tasks in 200
	// queues. The queue row lookup is a LATERAL … LIMIT 1, which the
	// planner cannot turn into a hash of the whole queue table per page.
	listTaskQueueIDs: func(b *builder, t store.Table, after *store.QueueKey, limit int) *builder {
		b.w("WITH RECURSIVE d (range_hash, task_queue_id, n) AS ((SELECT range_hash, task_queue_id, 1 FROM ", taskTable(t))
		b.whereAfter(after)
		b.w(" ORDER BY range_hash, task_queue_id LIMIT 1) UNION ALL SELECT x.range_hash, x.task_queue_id, d.n + 1 FROM d, LATERAL (SELECT t.range_hash, t.task_queue_id FROM ",
			taskTable(t), " t WHERE (t.range_hash, t.task_queue_id) > (d.range_hash, d.task_queue_id) AND t.range_hash <= "+maxHashLit+" ORDER BY t.range_hash, t.task_queue_id LIMIT 1) x WHERE d.n < ").p(limit)
		return b.w(") SELECT d.range_hash, d.task_queue_id, CASE WHEN q.one IS NULL THEN 0 ELSE 1 END FROM d LEFT JOIN LATERAL (SELECT 1 AS one FROM ",
			queueTable(t), " q WHERE q.range_hash = d.range_hash AND q.task_queue_id = d.task_queue_id LIMIT 1) q ON true ORDER BY d.n")
	},
	forUpdate: " FOR UPDATE",
	classify:  classifyPostgres,
	lost:      postgresLost,
	denied: func(err error) bool {
		var pe *pgconn.PgError
		return errors.As(err, &pe) && pe.Code == "42501" // insufficient_privilege
	},
}

// newPostgresConnector is Connector for a PostgreSQL DSN.
func newPostgresConnector(d DSN, opts Options) (driver.Connector, error) {
	if err := checkPostgresTLSFiles(d); err != nil {
		return nil, err
	}
	cfg, err := pgx.ParseConfig(d.URL.String())
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %s", ErrBadDSN, d, redactErr(err, d))
	}
	wrap := func(c driver.Connector) driver.Connector { return c }
	if opts.TLS != nil {
		if wrap, err = usePostgresTLS(cfg, d, opts.TLS); err != nil {
			return nil, err
		}
	}
	ConfigurePostgres(cfg)
	return wrap(stdlib.GetConnector(*cfg)), nil
}

// cancelDeadlineDelay is how long a cancelled statement's connection waits
// for the server's answer to the cancel request before it is closed
// anyway (the server or the network is gone).
const cancelDeadlineDelay = 5 * time.Second

// ConfigurePostgres sets up cfg as a store needs its connections: a
// statement whose context ends is stopped on the server by a cancel
// request. pgx's default answer to an ended context is to close the
// connection, which leaves the statement running on the server: a DELETE
// waiting for a row lock would still run once the lock is released, after
// the store reported it as failed. With a cancel request, the call
// reports what the server did: stopped, or done if it finished first.
//
// Build a connector for New from cfg with stdlib.GetConnector, or, for a
// pgxpool.Pool, configure its Config's ConnConfig and use
// stdlib.GetPoolConnector.
func ConfigurePostgres(cfg *pgx.ConnConfig) {
	cfg.BuildContextWatcherHandler = func(c *pgconn.PgConn) ctxwatch.Handler {
		return &pgconn.CancelRequestContextWatcherHandler{Conn: c, DeadlineDelay: cancelDeadlineDelay}
	}
}

// checkPostgres returns the configuration of dc, a driver connection of a
// store, if the store can use it: a pgx connection whose ended contexts
// send a cancel request (see ConfigurePostgres).
func checkPostgres(dc any) (*pgx.ConnConfig, error) {
	sc, ok := dc.(*stdlib.Conn)
	if !ok {
		return nil, fmt.Errorf("%w: PostgreSQL connection is a %T, not pgx's *stdlib.Conn: cannot check that it stops cancelled statements on the server", ErrBadConnector, dc)
	}
	cfg := sc.Conn().Config()
	var h ctxwatch.Handler
	if cfg.BuildContextWatcherHandler != nil {
		h = cfg.BuildContextWatcherHandler(sc.Conn().PgConn())
	}
	cr, ok := h.(*pgconn.CancelRequestContextWatcherHandler)
	switch {
	case !ok:
		return nil, fmt.Errorf("%w: PostgreSQL connection answers an ended context with %T, not a cancel request, so a statement the store reports as failed may run on: configure the connection with ConfigurePostgres", ErrBadConnector, h)
	case cr.DeadlineDelay <= cr.CancelRequestDelay:
		// The connection is closed before the cancel request goes out.
		return nil, fmt.Errorf("%w: PostgreSQL connection gives up on a statement %s after its context ends, before it sends the cancel request (%s after): configure the connection with ConfigurePostgres", ErrBadConnector, cr.DeadlineDelay, cr.CancelRequestDelay)
	}
	return cfg, nil
}

// postgresDSN is the DSN of the database cfg connects to, without its
// password.
func postgresDSN(cfg *pgx.ConnConfig) DSN {
	db := cfg.Database
	if db == "" {
		db = cfg.User // the server's default
	}
	u := &url.URL{Scheme: "postgres", Host: net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port))), Path: "/" + db}
	if strings.HasPrefix(cfg.Host, "/") { // a Unix socket's directory
		u.Host, u.RawQuery = "", url.Values{"host": {cfg.Host}, "port": {strconv.Itoa(int(cfg.Port))}}.Encode()
	}
	if cfg.User != "" {
		u.User = url.User(cfg.User)
	}
	return DSN{Engine: Postgres, URL: u}
}

// pgRefused reports whether the server answered and refused the login or
// the database.
func pgRefused(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		// 42704 and 22023: a DSN parameter the server does not know, or
		// a bad value of one (pgx sends unknown ones as settings).
		return strings.HasPrefix(pe.Code, "28") || pe.Code == "3D000" || pe.Code == "42501" || pe.Code == "42704" || pe.Code == "22023"
	}
	return false
}

func pgHint(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		case "28P01", "28000":
			return " (check the user and password in the DSN)"
		case "3D000":
			return " (create the database, or fix its name in the DSN)"
		}
	}
	if strings.Contains(err.Error(), "connect") {
		return " (is the server running and the host:port right?)"
	}
	return ""
}

func classifyPostgres(err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch {
		case pe.Code == "23505": // unique_violation
			return mark(err, store.ErrConditionFailed)
		case pe.Code == "25006": // read_only_sql_transaction: a standby, or default_transaction_read_only
			return mark(err, store.ErrReadOnly)
		case pe.Code == "53100": // disk_full
			return mark(err, store.ErrDiskFull)
		case pe.Code == "40001", pe.Code == "40P01", pe.Code == "55P03", pe.Code == "57014",
			strings.HasPrefix(pe.Code, "08"), strings.HasPrefix(pe.Code, "53"),
			pe.Code == "57P01", pe.Code == "57P02", pe.Code == "57P03":
			// serialization failure, deadlock, lock not available, query
			// canceled, connection exceptions, insufficient resources (out of
			// memory, too many connections; not a full disk), the session
			// ended by an administrator or a shutdown.
			return mark(err, store.ErrTransient)
		}
		return err
	}
	if pgconn.SafeToRetry(err) || pgconn.Timeout(err) {
		return mark(err, store.ErrTransient)
	}
	return classifyCommon(err)
}

// postgresLost reports whether err says that a statement's connection
// ended after the statement may have reached the server.
func postgresLost(err error) bool {
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		return false // never connected
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		// The server answered. A FATAL error ends the session: one that
		// pg_terminate_backend or a shutdown sends may come after the
		// statement committed, before its answer was sent.
		sev := pe.SeverityUnlocalized
		if sev == "" {
			sev = pe.Severity
		}
		return sev == "FATAL" || sev == "PANIC"
	}
	// pgx tells an error before anything was sent by SafeToRetry (and its
	// database/sql driver turns those into driver.ErrBadConn).
	// A context cancelled while pgx waited for the answer comes back as a
	// bare context.Canceled (a deadline as a timeout): the statement may
	// have run. One cancelled before anything was sent is SafeToRetry.
	return !pgconn.SafeToRetry(err) && (connLost(err) || pgconn.Timeout(err) ||
		errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded))
}

// redactErr returns err's text on one line, with the DSN's password
// removed in case a driver quotes its connection string. Drivers list each
// connection attempt on a line of its own (pgx tries with and without TLS,
// every address of a host); repeated lines are given once.
func redactErr(err error, d DSN) string {
	s := err.Error()
	if d.URL != nil {
		var secrets []string
		if p, ok := d.URL.User.Password(); ok {
			secrets = append(secrets, p)
		}
		for name, vs := range d.URL.Query() {
			if redact.SecretName(name) {
				secrets = append(secrets, vs...)
			}
		}
		for _, p := range secrets {
			if p != "" {
				s = strings.ReplaceAll(s, p, redact.Mask)
			}
		}
	}
	var lines []string
	for _, l := range strings.Split(s, "\n") {
		l = strings.Join(strings.Fields(l), " ")
		if l != "" && !slices.ContainsFunc(lines, func(prev string) bool { return strings.Contains(prev, l) }) {
			lines = append(lines, l)
		}
	}
	return strings.Join(lines, " ")
}

// deleteRangesPostgres deletes the leading run of V1 key-range sets (at
// most max) as a join with unnest(): PostgreSQL runs it as one index range
// scan per set, planned once, where an OR of the same ranges is planned
// arm by arm into a BitmapOr. 100,000 tasks in 100 statements of 100
// queues: 0.14 s against 0.24 s.
func deleteRangesPostgres(b *builder, sets []store.TaskSet, max int) (n int) {
	for n < len(sets) && n < max && sets[n].Keys == nil {
		n++
	}
	rhs, ids, los, his := make([]int64, n), make([][]byte, n), make([]int64, n), make([]int64, n)
	for i, set := range sets[:n] {
		rhs[i], ids[i], los[i], his[i] = int64(set.Queue.RangeHash), set.Queue.ID, set.Range.Min.ID, set.Range.Max.ID
		if set.Range.Min == (store.TaskKey{}) {
			los[i] = math.MinInt64 // the zero Min: from the first task
		}
	}
	b.w("DELETE FROM tasks t USING unnest(").p(rhs).w("::bigint[], ").p(ids).w("::bytea[], ").p(los).w("::bigint[], ").p(his).
		w("::bigint[]) AS f(rh, id, lo, hi) WHERE t.range_hash = f.rh AND t.task_queue_id = f.id AND t.task_id >= f.lo AND t.task_id <= f.hi")
	return n
}

// deleteQueuesPostgres deletes fenced queue rows in one statement text for
// any batch, a join PostgreSQL runs as index probes: 3× faster than the
// same fences OR'ed.
func deleteQueuesPostgres(b *builder, t store.Table, fences []store.QueueFence) *builder {
	rhs, ids, rids := make([]int64, len(fences)), make([][]byte, len(fences)), make([]int64, len(fences))
	for i, f := range fences {
		rhs[i], ids[i], rids[i] = int64(f.RangeHash), f.ID, f.RangeID
	}
	return b.w("DELETE FROM ", queueTable(t), " q USING unnest(").p(rhs).w("::bigint[], ").p(ids).w("::bytea[], ").p(rids).
		w("::bigint[]) AS f(rh, id, rid) WHERE q.range_hash = f.rh AND q.task_queue_id = f.id AND q.range_id = f.rid")
}
