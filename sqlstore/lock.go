// This file owns the one-scavenger-at-a-time lock.

package sqlstore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/tqscavenger/tqscavenger/store"
)

// lockName is the advisory lock's name (MySQL) and, hashed, key (PostgreSQL).
const lockName = "tqscavenger"

// Lock takes the "one scavenger at a time" lock of the task tables: an
// advisory lock on PostgreSQL (pg_try_advisory_lock, keyed by the schema
// of the tables, as PostgreSQL's locks are per database and one database
// may hold several Temporal schemas) and MySQL (GET_LOCK, named after the
// database because MySQL's locks are server-wide), a lock file beside the
// database on SQLite. With wait it blocks until the lock is free or ctx
// ends; without, it returns an error wrapping store.ErrLocked at once. The
// returned function releases the lock; the lock also ends with the
// process or its connection.
func (s *DB) Lock(ctx context.Context, wait bool) (unlock func() error, err error) {
	for {
		unlock, err = s.tryLock(ctx)
		if err == nil || !errors.Is(err, store.ErrLocked) || !wait {
			return unlock, err
		}
		t := time.NewTimer(500 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("waiting for the lock: %w", ctx.Err())
		case <-t.C:
		}
	}
}

func (s *DB) tryLock(ctx context.Context) (func() error, error) {
	switch s.d.engine {
	case SQLite:
		if s.dsn.Path == "" {
			return nil, errors.New("lock: the SQLite database has no file to put a lock file beside")
		}
		return lockFile(s.dsn.Path + ".tqscavenger.lock")
	case Postgres:
		// The key is computed by the server from the schema the lock's own
		// connection resolves the tables in, so it is the same for every
		// scavenger of those tables, whatever its DSN says.
		const key = "('x' || substr(md5('" + lockName + ".' || current_schema()), 1, 16))::bit(64)::bigint"
		return s.lockConn(ctx, "SELECT pg_try_advisory_lock("+key+")", nil, "SELECT pg_advisory_unlock("+key+")")
	default:
		return s.lockConn(ctx, "SELECT COALESCE(GET_LOCK(?, 0), 0) = 1", []any{mysqlLockName(s.dsn.Database())}, "SELECT RELEASE_LOCK(?)")
	}
}

// mysqlLockName names the lock of database db. MySQL allows 64 characters:
// a longer name is shortened to a hash, not cut, so that two databases
// that share a long prefix do not share the lock.
func mysqlLockName(db string) string {
	name := lockName + "." + db
	if len(name) > 64 {
		sum := sha256.Sum256([]byte(db))
		name = lockName + ".sha256:" + hex.EncodeToString(sum[:])[:40]
	}
	return name
}

// lockConn holds a dedicated connection for a session-level advisory lock.
func (s *DB) lockConn(ctx context.Context, try string, args []any, release string) (func() error, error) {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return nil, s.wrap(ctx, "lock", err)
	}
	var got bool
	if err := conn.QueryRowContext(ctx, try, args...).Scan(&got); err != nil {
		conn.Close()
		return nil, s.wrap(ctx, "lock", err)
	}
	if !got {
		conn.Close()
		return nil, fmt.Errorf("%w on %s", store.ErrLocked, s.dsn)
	}
	return func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, err := conn.ExecContext(ctx, release, args...); err != nil {
			// Closing a *sql.Conn only returns it to the pool, where it would
			// keep the lock. Discard it instead: the server drops a session's
			// locks with the session.
			discard(conn)
			return fmt.Errorf("release the lock (the connection that held it is closed): %w", err)
		}
		return conn.Close()
	}, nil
}

// lockFile takes an exclusive lock on the file at path, creating it if
// need be, without waiting. The operating system drops the lock when the
// process dies, so a crashed scavenger never leaves a stale lock.
func lockFile(path string) (func() error, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock file %s: %w", path, err)
	}
	if busy, err := tryLockFile(f); err != nil {
		f.Close()
		if busy {
			return nil, fmt.Errorf("%w (lock file %s)", store.ErrLocked, path)
		}
		return nil, fmt.Errorf("lock file %s: %w", path, err)
	}
	fmt.Fprintf(f, "%d\n", os.Getpid())
	return func() error {
		// Unlock before removing would let another process lock the file we
		// then delete; keep the file, release the lock.
		return unlockFile(f)
	}, nil
}
