// This file owns the database's identity, which checkpoints carry so that
// a checkpoint of one database is never resumed against another.

package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
)

// Identity implements store.Identifier. It names the database and the
// schema the store's tables are in, never by its DSN (no host name as
// given, no user, no password), so that every connection to the same
// tables agrees and a copy or another server does not:
//
//   - PostgreSQL: the cluster's system_identifier (pg_control_system(),
//     unique per initdb; where it may not be read, the server's address
//     and port), the database's oid and name, and the schema;
//   - MySQL: @@server_uuid and the schema; MariaDB has no server uuid, so
//     @@hostname, @@port and @@server_id (unique only as far as operators
//     keep them so) and the schema;
//   - SQLite: the database file's device and inode (a restored or copied
//     file is another database) and its base name.
func (s *DB) Identity(ctx context.Context) (string, error) {
	ctx, cancel := s.withStartup(ctx)
	defer cancel()
	one := func(q string) (string, error) {
		var v string
		err := s.db.QueryRowContext(ctx, q).Scan(&v)
		return v, err
	}
	switch s.d.engine {
	case SQLite:
		if s.dsn.Path == "" {
			return "", errors.New("identity: an in-memory SQLite database has none")
		}
		id, err := fileIdentity(s.dsn.Path)
		if err != nil {
			return "", fmt.Errorf("identity of %s: %w", s.dsn.Path, err)
		}
		return "sqlite:" + id + ":" + filepath.Base(s.dsn.Path), nil
	case Postgres:
		sys, err := one("SELECT system_identifier::text FROM pg_control_system()")
		if err != nil {
			if sys, err = one("SELECT 'addr=' || COALESCE(host(inet_server_addr()), 'local') || ':' || COALESCE(inet_server_port(), 0)"); err != nil {
				return "", s.wrap(ctx, "identity", err)
			}
		}
		db, err := one("SELECT oid::text || ':' || datname || ':' || current_schema() FROM pg_database WHERE datname = current_database()")
		if err != nil {
			return "", s.wrap(ctx, "identity", err)
		}
		return "postgres:" + sys + ":" + db, nil
	default:
		schema, err := one("SELECT DATABASE()")
		if err != nil {
			return "", s.wrap(ctx, "identity", err)
		}
		srv, err := one("SELECT @@server_uuid")
		if err != nil {
			if srv, err = one("SELECT CONCAT(@@hostname, ':', @@port, ':', @@server_id)"); err != nil {
				return "", s.wrap(ctx, "identity", err)
			}
		}
		return "mysql:" + srv + ":" + schema, nil
	}
}
