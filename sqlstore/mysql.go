package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
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
	engine: MySQL,
	driver: "mysql",
	deleteLimited: func(b *builder, t store.Table, q store.QueueKey, r store.TaskRange, limit int) deleteForm {
		b.w("DELETE FROM ", taskTable(t), " WHERE ").whereQueue(q).w(" AND ").taskRange(t, r).
			w(" ORDER BY ", orderBy(t), " LIMIT ").p(limit)
		return deleteForm{stmt: b.String(), args: b.args}
	},
	forUpdate: " FOR UPDATE",
	classify:  classifyMySQL,
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
	killer := sql.OpenDB(conn)
	killer.SetMaxOpenConns(2)
	killer.SetMaxIdleConns(1)
	db := sql.OpenDB(&killConnector{Connector: conn, killer: killer})
	db.SetMaxOpenConns(opts.MaxConns)
	db.SetMaxIdleConns(opts.MaxConns)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		killer.Close()
		return nil, fmt.Errorf("%w: %s: %s%s", ErrUnavailable, d, redactErr(err, d), mysqlHint(err))
	}
	s := newDB(db, mysqlDialect, d, opts)
	s.closers = append(s.closers, killer.Close)
	return s, nil
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
