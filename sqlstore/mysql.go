package sqlstore

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/tqscavenger/tqscavenger/store"
)

// MySQL/MariaDB: DELETE … ORDER BY … LIMIT exists (and MariaDB rejects
// IN (SELECT … LIMIT)). Parameters are interpolated client side
// (interpolateParams=true: 2.1× faster deletes), so nothing is prepared.
// Keyset conditions are spelled out with OR, which MariaDB turns into an
// index range.
var mysqlDialect = &dialect{
	engine: MySQL,
	driver: "mysql",
	deleteLimited: func(b *builder, t store.Table, q store.QueueKey, r store.TaskRange, limit int) deleteForm {
		b.w("DELETE FROM ", taskTable(t), " WHERE ").whereQueue(q).w(" AND ").taskRange(t, r).
			w(" ORDER BY ", orderBy(t), " LIMIT ").p(limit)
		return deleteForm{stmt: b.String(), args: b.args}
	},
	forUpdate: " FOR UPDATE",
	classify:  classifyMySQL,
	serverTimeout: func(err error) bool {
		var me *mysql.MySQLError
		// Lock wait timeout; MariaDB's max_statement_time; MySQL's
		// max_execution_time.
		return errors.As(err, &me) && (me.Number == 1205 || me.Number == 1969 || me.Number == 3024)
	},
	// The server aborts a statement after StatementTimeout (MariaDB) or a
	// lock wait after whole seconds (MySQL); the client waits a second
	// longer, so that a statement it calls timed out has been stopped.
	clientDeadline: func(t time.Duration) time.Duration { return max(t, lockWaitSeconds(t)*time.Second) + time.Second },
}

// lockWaitSeconds is innodb_lock_wait_timeout for a statement timeout t:
// whole seconds, at least one.
func lockWaitSeconds(t time.Duration) time.Duration {
	return max(1, (t+time.Second-1)/time.Second)
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
	q.Del("socket")
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
	c.InterpolateParams = true
	// UPDATE … WHERE range_id = ? must report a matched row even when the
	// data did not change, or a compare-and-set would look failed.
	c.ClientFoundRows = true
	return c, nil
}

func openMySQL(ctx context.Context, d DSN, opts Options) (*DB, error) {
	c, err := mysqlConfig(d)
	if err != nil {
		return nil, err
	}
	conn, err := mysql.NewConnector(c)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %s", ErrUnavailable, d, redactErr(err, d))
	}
	if t := opts.StatementTimeout; t > 0 {
		// The driver answers a canceled context by closing the connection;
		// the server would go on with the statement. Bound it on the server:
		// lock waits everywhere, and whole statements on MariaDB (the
		// executable comment is MariaDB-only syntax; MySQL skips it).
		conn = &sessionConnector{Connector: conn, setup: fmt.Sprintf(
			"SET SESSION innodb_lock_wait_timeout = %d /*M!100101 , SESSION max_statement_time = %.6f */",
			lockWaitSeconds(t), t.Seconds())}
	}
	db := sql.OpenDB(conn)
	db.SetMaxOpenConns(opts.MaxConns)
	db.SetMaxIdleConns(opts.MaxConns)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("%w: %s: %s%s", ErrUnavailable, d, redactErr(err, d), mysqlHint(err))
	}
	return newDB(db, mysqlDialect, d, opts), nil
}

// sessionConnector runs a statement on each new connection.
type sessionConnector struct {
	driver.Connector
	setup string
}

func (c *sessionConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	ex, ok := conn.(driver.ExecerContext)
	if !ok {
		conn.Close()
		return nil, fmt.Errorf("mysql driver connection %T cannot execute statements", conn)
	}
	if _, err := ex.ExecContext(ctx, c.setup, nil); err != nil {
		conn.Close()
		return nil, fmt.Errorf("session setup: %w", err)
	}
	return conn, nil
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
			return mark(store.ErrConditionFailed, err)
		case 1205, 1213, 1040, 1053, 1927, 2006, 2013, 3024, 1969:
			// lock wait timeout, deadlock, too many connections, shutdown,
			// connection killed, server gone, statement time exceeded.
			return mark(store.ErrTransient, err)
		}
		return err
	}
	if errors.Is(err, mysql.ErrInvalidConn) {
		return mark(store.ErrTransient, err)
	}
	return classifyCommon(err)
}
