package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
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
// configuration. Query parameters are passed to the driver.
func mysqlConfig(d DSN) (*mysql.Config, error) {
	c := mysql.NewConfig()
	c.Net = "tcp"
	c.Addr = d.URL.Host
	if !strings.Contains(c.Addr, ":") {
		c.Addr += ":3306"
	}
	c.DBName = d.Database()
	if d.URL.User != nil {
		c.User = d.URL.User.Username()
		c.Passwd, _ = d.URL.User.Password()
	}
	c.InterpolateParams = true
	// UPDATE … WHERE range_id = ? must report a matched row even when the
	// data did not change, or a compare-and-set would look failed.
	c.ClientFoundRows = true
	c.Params = map[string]string{}
	for k, v := range d.URL.Query() {
		switch k {
		case "socket":
			c.Net, c.Addr = "unix", v[0]
		default:
			c.Params[k] = v[0]
		}
	}
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
	db := sql.OpenDB(conn)
	db.SetMaxOpenConns(opts.MaxConns)
	db.SetMaxIdleConns(opts.MaxConns)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("%w: %s: %s%s", ErrUnavailable, d, redactErr(err, d), mysqlHint(err))
	}
	return newDB(db, mysqlDialect, d, opts), nil
}

func mysqlHint(err error) string {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		switch me.Number {
		case 1045:
			return " (check the user and password in the DSN)"
		case 1049:
			return " (create the database, or fix its name in the DSN)"
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
