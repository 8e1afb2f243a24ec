// Package sqlstore implements store.Store and store.Writer on Temporal's SQL
// task tables, for SQLite, PostgreSQL and MySQL/MariaDB.
//
// Open parses a DSN and returns a *DB for any of them. New makes one on a
// connector the caller built, for a program that owns its connections
// (a pgxpool.Pool, say); Connector builds the connector Open uses.
//
// The files divide the package by job:
//
//   - db.go: a store's options, making it (New, Open), closing it.
//   - exec.go: running a statement (the prepared statement cache,
//     transactions, the context of one call).
//   - groupcommit.go: on a SQLite file in a rollback journal, the writes
//     of concurrent calls sharing one write transaction (at most
//     Options.WriteTxBudget), each call returning once it has committed.
//   - errors.go: what a driver error means (transient, a failed condition,
//     a timeout, read-only, disk full, a write whose outcome is unknown),
//     and the store's own errors.
//   - queues.go, tasks.go, batch.go: the store.Store methods on queue rows,
//     on one queue's tasks, and on many queues at once.
//   - writer.go: store.Writer, what a matching host does.
//   - schema.go: the schema (setup, check).
//   - lock.go: the one-scavenger-at-a-time lock, and its check;
//     lock_unix.go and lock_windows.go lock SQLite's lock files and name
//     a file by its identity.
//   - dialect.go: what differs between engines, and the statement builder.
//   - sqlite.go, postgres.go, mysql.go: each engine's dialect, connection
//     settings and error classification; mysqlconn.go, the MySQL
//     connector that stops a cancelled write on the server.
//   - tls.go: TLS settings as data (Options.TLS), the tls.Config they
//     make for each driver, and what a failed handshake means (TLSError).
//   - dsn.go: DSNs.
//
// The SQL itself, per engine, is in testdata/sqlite.sql,
// testdata/postgres.sql and testdata/mysql.sql: every statement a DB
// sends, each under a comment naming the method it serves, for a reader
// who wants the statements rather than the code that builds them.
// TestSQLGolden (sqlgolden_test.go) records them from the store at work
// and fails when the store and the files part; after a deliberate change,
// go test ./sqlstore -run TestSQLGolden -update rewrites them.
package sqlstore
