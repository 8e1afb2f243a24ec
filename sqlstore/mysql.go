// This file owns what is MySQL's and MariaDB's: the dialect, the driver
// configuration, error classification, and the locked range delete of
// queue rows.

package sqlstore

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/go-sql-driver/mysql"

	"github.com/tqscavenger/tqscavenger/store"
)

// MySQL/MariaDB: DELETE … ORDER BY … LIMIT exists (and MariaDB rejects
// IN (SELECT … LIMIT)). Parameters are interpolated client side
// (interpolateParams=true: 2.1× faster deletes), so nothing is prepared.
// Keyset conditions are spelled out with OR, which MariaDB turns into an
// index range.
var mysqlDialect = &dialect{
	engine:           MySQL,
	maxSets:          1000,
	deleteQueues:     deleteQueuesMySQL,
	deleteQueueBatch: (*DB).deleteQueueRange,
	listTables:       "SELECT table_name FROM information_schema.tables WHERE table_schema = DATABASE()",
	ddlTypes:         [3]string{"INT UNSIGNED", "VARBINARY(272)", "MEDIUMBLOB"},
	changedRows:      true,
	deleteLimited: func(b *builder, t store.Table, q store.QueueKey, r store.TaskRange, limit int) deleteForm {
		b.w("DELETE FROM ", taskTable(t), " WHERE ").whereQueue(q).w(" AND ").taskRange(t, r).
			w(" ORDER BY ", orderBy(t), " LIMIT ").p(limit)
		return deleteForm{stmt: b.String(), args: b.args}
	},
	forUpdate:       " FOR UPDATE",
	orphanIsolation: sql.LevelRepeatableRead,
	classify:        classifyMySQL,
	lost:            mysqlLost,
	denied: func(err error) bool {
		var me *mysql.MySQLError
		return errors.As(err, &me) && (me.Number == 1142 || me.Number == 1143) // table, column access denied
	},
}

// mysqlConfig turns mysql://user:pass@host:port/db?k=v into the driver's
// configuration. Query parameters are the driver's (tls, timeout,
// charset, …; see github.com/go-sql-driver/mysql), except socket=PATH for
// a Unix socket; parameters the driver does not know are session
// variables.
func mysqlConfig(d DSN) (*mysql.Config, error) {
	c := mysql.NewConfig()
	c.Net = "tcp"
	c.Addr = d.URL.Host
	if d.URL.Port() == "" {
		c.Addr = net.JoinHostPort(d.URL.Hostname(), "3306")
	}
	c.DBName = d.Database()
	q := d.URL.Query()
	if s := q.Get("socket"); s != "" {
		c.Net, c.Addr = "unix", s
	}
	// The driver would send password=… on as a session variable: SET
	// password = … changes the user's password. Take it as the password,
	// as pgx does.
	password, hasPassword := q.Get("password"), q.Has("password")
	q.Del("socket")
	q.Del("password")
	// Let the driver parse its own parameters, from its own DSN format: it
	// derives settings such as the TLS server name from the address. The
	// credentials stay out of that string (the driver's format does not
	// escape them) and are set afterwards.
	dsn := c.FormatDSN()
	if len(q) > 0 {
		sep := "?"
		if strings.Contains(dsn, "?") {
			sep = "&"
		}
		dsn += sep + q.Encode()
	}
	c, err := mysql.ParseDSN(dsn)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %s", ErrBadDSN, d, redactErr(err, d))
	}
	if d.URL.User != nil {
		c.User = d.URL.User.Username()
		c.Passwd, _ = d.URL.User.Password()
	}
	if hasPassword {
		c.Passwd = password
	}
	c.InterpolateParams = true
	// UPDATE … WHERE range_id = ? reports a matched row even when the data
	// did not change, so that UpdateQueue need not read the row to tell a
	// compare-and-set that changed nothing from a failed one.
	c.ClientFoundRows = true
	return c, nil
}

// newMySQLConnector is Connector for a MySQL DSN.
func newMySQLConnector(d DSN, opts Options) (driver.Connector, error) {
	c, err := mysqlConfig(d)
	if err != nil {
		return nil, err
	}
	wrap := func(c driver.Connector) driver.Connector { return c }
	if opts.TLS != nil {
		if wrap, err = useMySQLTLS(c, d, opts.TLS); err != nil {
			return nil, err
		}
	}
	conn, err := mysql.NewConnector(c)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %s", ErrUnavailable, d, redactErr(err, d))
	}
	return wrap(conn), nil
}

// learnMySQL learns the store's database from its connection.
func (s *DB) learnMySQL(ctx context.Context, conn *sql.Conn) error {
	var db sql.NullString
	if err := conn.QueryRowContext(ctx, "SELECT DATABASE()").Scan(&db); err != nil {
		return s.wrap(ctx, "read the database name", err)
	}
	if !db.Valid {
		return fmt.Errorf("%w: MySQL connection uses no database", ErrBadConnector)
	}
	s.dsn.URL = &url.URL{Scheme: "mysql", Path: "/" + db.String}
	return nil
}

// mysqlRefused reports whether the server answered and refused the login
// or the database.
func mysqlRefused(err error) bool {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		switch me.Number {
		case 1044, 1045, 1049, 1698, 1251,
			1193, 1231, 1232: // a DSN parameter that is no variable, or a bad value of one
			return true
		}
	}
	return false
}

func mysqlHint(err error) string {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		switch me.Number {
		case 1045:
			return " (check the user and password in the DSN)"
		case 1049:
			return " (create the database, or fix its name in the DSN)"
		case 1044:
			return " (grant the user access to the database, or fix its name in the DSN)"
		}
	}
	if strings.Contains(err.Error(), "connect") || strings.Contains(err.Error(), "dial") {
		return " (is the server running and the host:port right?)"
	}
	return ""
}

func classifyMySQL(err error) error {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		switch me.Number {
		case 1062: // duplicate key
			return mark(err, store.ErrConditionFailed)
		case 1290, 1836, 1792:
			// --read-only (or --super-read-only), read-only mode, a
			// read-only transaction.
			return mark(err, store.ErrReadOnly)
		case 1021, 1114:
			// disk full, table full.
			return mark(err, store.ErrDiskFull)
		case 1205, 1213, 1040, 1053, 1927, 2006, 2013, 3024, 1969, 1020:
			// lock wait timeout, deadlock, too many connections, shutdown,
			// connection killed, server gone, lost connection, statement time
			// exceeded (MySQL, MariaDB), record changed since read (MariaDB's
			// snapshot isolation).
			return mark(err, store.ErrTransient)
		}
		return err
	}
	if errors.Is(err, mysql.ErrInvalidConn) {
		return mark(err, store.ErrTransient)
	}
	return classifyCommon(err)
}

// mysqlLost reports whether err says that a statement's connection ended
// after the statement may have reached the server. The driver returns
// driver.ErrBadConn only before it has written anything, and
// mysql.ErrInvalidConn when it loses the connection afterwards.
func mysqlLost(err error) bool {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		switch me.Number {
		case 1927, 1053, 2006, 2013:
			// The session was killed or the server is shutting down or gone:
			// the statement may have committed before the answer.
			return true
		}
		return false
	}
	if errors.Is(err, mysql.ErrInvalidConn) {
		return true
	}
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Op == "dial" {
		return false // never connected
	}
	return connLost(err)
}

// deleteQueueRange deletes a batch of fenced queue rows on MySQL. InnoDB
// runs a row-value IN list as one index dive per row, about 1.6× the cost
// of deleting the same rows as a key range (BenchmarkDeleteQueues); and an
// idle page of queues is usually a whole key range. So it first tries
// lockQueueRange, and deletes the fences as a list only where that does
// not apply.
func (s *DB) deleteQueueRange(ctx context.Context, t store.Table, fences []store.QueueFence) (int64, error) {
	n, done, err := s.lockQueueRange(ctx, t, fences)
	if done || err != nil {
		return n, err
	}
	b := s.deleteQueuesSQL(t, fences)
	return s.exec(ctx, b.String(), b.args)
}

// deleteQueuesMySQL deletes fenced queue rows as a row-value IN list: one
// range lookup per row for MariaDB, where OR'ed conditions are re-planned
// term by term.
func deleteQueuesMySQL(b *builder, t store.Table, fences []store.QueueFence) *builder {
	b.w("DELETE FROM ", queueTable(t), " WHERE (range_hash, task_queue_id, range_id) IN (")
	for i, f := range fences {
		if i > 0 {
			b.w(", ")
		}
		b.w("(").p(int64(f.RangeHash)).w(", ").p(f.ID).w(", ").p(f.RangeID).w(")")
	}
	return b.w(")")
}

// lockQueueRange, in one repeatable-read transaction, locks the rows of
// the key range the fences span without waiting (next-key locks: no row
// can be inserted into the range until commit) and, when those rows are
// exactly the fences at their range_ids, deletes the range. It reports
// done=false, having changed nothing, when the rows are not the fences or
// another transaction holds a lock in the range: a matching host is at
// work there, and the caller's plain fenced delete waits for it as any
// write does, without this transaction's locks on rows it will not delete.
func (s *DB) lockQueueRange(ctx context.Context, t store.Table, fences []store.QueueFence) (_ int64, done bool, err error) {
	sorted := slices.Clone(fences)
	slices.SortFunc(sorted, func(a, b store.QueueFence) int { return a.Compare(b.QueueKey) })
	lock, del := s.queueRangeSQL(t, sorted[0].QueueKey, sorted[len(sorted)-1].QueueKey, len(sorted))
	// Until the commit, a failure changes nothing: the transaction is
	// rolled back. The commit's may leave its outcome unknown.
	committing := false
	defer func() {
		if err != nil {
			err = &txError{err: err, commit: committing}
		}
	}()
	s.statements.Add(1)
	tx, err := s.db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelRepeatableRead})
	if err != nil {
		return 0, false, err
	}
	committed := false
	defer func() {
		if !committed {
			tx.Rollback()
		}
	}()
	s.statements.Add(1)
	rows, err := tx.QueryContext(ctx, lock.String(), lock.args...)
	if err != nil {
		if lockBusy(err) {
			return 0, false, nil
		}
		return 0, false, err
	}
	exact, i := true, 0
	for rows.Next() {
		var (
			rh, rangeID int64
			id          sql.RawBytes
		)
		if err := rows.Scan(&rh, &id, &rangeID); err != nil {
			rows.Close()
			return 0, false, err
		}
		if uint32(rh) != sorted[i].RangeHash || string(id) != string(sorted[i].ID) || rangeID != sorted[i].RangeID {
			exact = false
		}
		i++
	}
	if err := rows.Close(); err != nil {
		return 0, false, err
	}
	if err := rows.Err(); err != nil {
		if lockBusy(err) {
			return 0, false, nil
		}
		return 0, false, err
	}
	if !exact || i != len(sorted) {
		return 0, false, nil
	}
	if s.afterRangeLock != nil {
		s.afterRangeLock()
	}
	s.statements.Add(1)
	res, err := tx.ExecContext(ctx, del.String(), del.args...)
	if err != nil {
		return 0, false, err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, false, err
	}
	if n != int64(len(sorted)) {
		// The locks make this impossible; if a server ever lets a row into
		// the range anyway, delete nothing rather than a row not fenced.
		return 0, false, fmt.Errorf("range delete of %d locked queue rows deleted %d", len(sorted), n)
	}
	s.statements.Add(1)
	committing = true
	if err := tx.Commit(); err != nil {
		return 0, false, err
	}
	committed = true
	s.queueRanges.Add(1)
	return n, true, nil
}

// queueRangeSQL returns lockQueueRange's statements for the n fences from
// lo to hi: the locking read of the range and its delete.
func (s *DB) queueRangeSQL(t store.Table, lo, hi store.QueueKey, n int) (lock, del *builder) {
	cols := []string{"range_hash", "task_queue_id"}
	inRange := func(b *builder) *builder {
		return b.w(" WHERE ").cmp(cols, []any{int64(lo.RangeHash), lo.ID}, ">=").
			w(" AND ").cmp(cols, []any{int64(hi.RangeHash), hi.ID}, "<=")
	}
	// Any row of the range that is not a fence sorts before the last
	// fence, so the first n rows tell whether they are exactly the fences.
	lock = inRange(s.newBuilder().w("SELECT range_hash, task_queue_id, range_id FROM ", queueTable(t))).
		w(" ORDER BY range_hash, task_queue_id LIMIT ", strconv.Itoa(n), " FOR UPDATE NOWAIT")
	del = inRange(s.newBuilder().w("DELETE FROM ", queueTable(t)))
	return lock, del
}

// lockBusy reports whether err says a row was locked by another
// transaction: FOR UPDATE NOWAIT's answer (MariaDB 1205, MySQL 3572).
func lockBusy(err error) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && (me.Number == 1205 || me.Number == 3572)
}
