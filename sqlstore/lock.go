// This file owns the one-scavenger-at-a-time lock: taking it, checking
// that it is still held, releasing it.

package sqlstore

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/tqscavenger/tqscavenger/store"
)

var _ store.RangeLocker = (*DB)(nil)

// lockName is the advisory lock's name (MySQL) and, hashed, key (PostgreSQL).
const lockName = "tqscavenger"

// Lock takes the "one scavenger at a time" lock of the task tables: an
// advisory lock on PostgreSQL (pg_try_advisory_lock, keyed by the schema
// of the tables, as PostgreSQL's locks are per database and one database
// may hold several Temporal schemas) and MySQL (GET_LOCK, named after the
// database because MySQL's locks are server-wide), lock files on SQLite
// (see lockSQLite). With wait it blocks until the lock is free or ctx
// ends; without, it returns an error wrapping store.ErrLocked at once.
//
// A server lock lives on a connection of its own, outside the store's
// pool, so that it takes none of Options.MaxConns. Its session can end
// while the lock is held (an administrator, a restart, a network cut):
// the returned Lock's Check tells, and whoever holds the lock checks it
// while it works (scavenger.Config.Lock). The lock also ends with the
// process.
func (s *DB) Lock(ctx context.Context, wait bool) (store.Lock, error) {
	return s.LockRange(ctx, store.FullRange, wait)
}

// LockRange implements store.RangeLocker: the lock of the part r of the
// range_hash space, for a partition's pass. Overlapping ranges exclude
// each other, disjoint ones do not, and every range lock excludes (and is
// excluded by) the whole-pass lock of Lock, this version's and older
// ones'. See rangelock.go for each engine's scheme.
func (s *DB) LockRange(ctx context.Context, r store.HashRange, wait bool) (store.Lock, error) {
	if r.Lo > r.Hi {
		return nil, fmt.Errorf("lock: empty range %s", r)
	}
	for {
		l, err := s.tryLock(ctx, r)
		if err == nil || !errors.Is(err, store.ErrLocked) || !wait {
			return l, err
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

func (s *DB) tryLock(ctx context.Context, r store.HashRange) (store.Lock, error) {
	switch s.d.engine {
	case SQLite:
		if s.dsn.Path == "" {
			return nil, errors.New("lock: the SQLite database has no file to put a lock file beside")
		}
		if !r.Full() {
			return lockSQLiteRange(s.dsn.Path, r)
		}
		return lockSQLite(s.dsn.Path)
	case Postgres:
		if !r.Full() {
			return s.lockPostgresRange(ctx, r)
		}
		// The key is computed by the server from the schema the lock's own
		// connection resolves the tables in, so it is the same for every
		// scavenger of those tables, whatever its DSN says. The key, try and
		// release are those of every version of tqscavenger, so that an old
		// and a new one exclude each other.
		return s.lockConn(ctx, &serverLock{
			key:     "SELECT " + postgresLockKey,
			try:     "SELECT pg_try_advisory_lock($1)",
			release: "SELECT pg_advisory_unlock($1)",
			// A bigint key is held as (classid, objid) = its high and low 32
			// bits, objsubid 1.
			check: "SELECT count(*) = 1 FROM pg_locks WHERE locktype = 'advisory' AND granted AND pid = pg_backend_pid()" +
				" AND database = (SELECT oid FROM pg_database WHERE datname = current_database())" +
				" AND classid = (($1::bigint >> 32) & 4294967295)::oid AND objid = ($1::bigint & 4294967295)::oid AND objsubid = 1",
		})
	default:
		return s.lockMySQLRange(ctx, r)
	}
}

// postgresLockKey is the advisory lock key of every version's whole pass.
const postgresLockKey = "('x' || substr(md5('" + lockName + ".' || current_schema()), 1, 16))::bit(64)::bigint"

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

// serverLock is a session-level advisory lock: the statements that take,
// check and release it, each with one argument: name, or the key that
// the statement key returns. A range lock (rangelock.go) is several locks
// of one session, checked and released by the statements check and
// release with checkArgs and releaseArgs.
type serverLock struct {
	name, key, try, check, release string

	arg                    any
	checkArgs, releaseArgs []any
	// lostWhy says what a check that answers "no" means.
	lostWhy string
	pool    *sql.DB
	conn    *sql.Conn

	mu   sync.Mutex
	lost error // set once a check failed: the lock is not had back
}

// lockConn takes l on a connection of a pool of its own over the store's
// connector. Taking it is a start-up statement (see withStartup): a
// server that does not answer (a network cut) is an error, not a hang.
func (s *DB) lockConn(ctx context.Context, l *serverLock) (_ store.Lock, err error) {
	ctx, cancel := s.withStartup(ctx)
	defer cancel()
	l.pool = sql.OpenDB(s.connector)
	l.pool.SetMaxOpenConns(1)
	defer func() {
		if err != nil {
			l.pool.Close()
		}
	}()
	if l.conn, err = l.pool.Conn(ctx); err != nil {
		return nil, s.wrap(ctx, "lock", err)
	}
	l.arg = l.name
	if l.key != "" {
		var k int64
		if err := l.conn.QueryRowContext(ctx, l.key).Scan(&k); err != nil {
			l.conn.Close()
			return nil, s.wrap(ctx, "lock", err)
		}
		l.arg = k
	}
	var got bool
	if err := l.conn.QueryRowContext(ctx, l.try, l.arg).Scan(&got); err != nil {
		discard(l.conn) // it may hold the lock the server granted meanwhile
		return nil, s.wrap(ctx, "lock", err)
	}
	if !got {
		l.conn.Close()
		return nil, fmt.Errorf("%w on %s", store.ErrLocked, s.dsn)
	}
	l.checkArgs, l.releaseArgs = []any{l.arg}, []any{l.arg}
	return l, nil
}

// Check implements store.Lock: the lock's own connection answers, within
// ctx, that its session still holds the lock. Once a check has failed,
// every later one fails too.
func (l *serverLock) Check(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.lost != nil {
		return l.lost
	}
	// The statement runs apart, so that Check returns when ctx ends even
	// if the driver waits longer for a server that does not answer (it
	// gives a cancel request a few seconds).
	type answer struct {
		held bool
		err  error
	}
	ch := make(chan answer, 1)
	go func() {
		var a answer
		a.err = l.conn.QueryRowContext(ctx, l.check, l.checkArgs...).Scan(&a.held)
		ch <- a
	}()
	var a answer
	select {
	case a = <-ch:
	case <-ctx.Done():
		a.err = fmt.Errorf("no answer: %w", ctx.Err())
		go func() { <-ch }()
	}
	switch {
	case a.err != nil:
		l.lost = fmt.Errorf("%w: the lock's session did not say it holds it: %w", store.ErrLockLost, a.err)
	case !a.held:
		why := l.lostWhy
		if why == "" {
			why = "the lock's session no longer holds it"
		}
		l.lost = fmt.Errorf("%w: %s", store.ErrLockLost, why)
	}
	return l.lost
}

// Unlock implements store.Lock.
func (l *serverLock) Unlock() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	defer l.pool.Close()
	if l.lost != nil {
		// Nothing to release: the session is gone or holds no lock. Close
		// the connection rather than reuse it.
		discard(l.conn)
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := l.conn.ExecContext(ctx, l.release, l.releaseArgs...); err != nil {
		// The server drops a session's locks with the session.
		discard(l.conn)
		return fmt.Errorf("release the lock (the connection that held it is closed): %w", err)
	}
	return l.conn.Close()
}

// lockDir holds the SQLite lock files named from a database file's
// identity (see lockSQLite).
func lockDir() string { return filepath.Join(os.TempDir(), "tqscavenger-locks") }

// lockSQLite locks the SQLite database at path with two lock files, each
// an exclusive flock (LockFileEx on Windows) that the operating system
// drops when the process dies:
//
//   - path + ".tqscavenger.lock", beside the database, named from the
//     path as given: what every version of tqscavenger takes, so that an
//     old and a new one exclude each other, and what scavengers on
//     different machines of a network file system share;
//   - a file in lockDir named from the database file's identity (device
//     and inode; on Windows, volume and file index), so that the same
//     file reached through a symlink, a hard link or another relative
//     path is locked once. The identity comes from a stat of the path,
//     never from opening the database file: on POSIX systems closing any
//     descriptor of a file drops every fcntl lock the process holds on
//     it, SQLite's own included.
//
// The identity lock is shared only by processes with the same
// os.TempDir() on the same machine: two containers with /tmp of their
// own, or two users with different TMPDIRs, are kept apart by the path
// lock alone, as before.
func lockSQLite(path string) (store.Lock, error) {
	id, err := fileIdentity(path)
	if err != nil {
		return nil, fmt.Errorf("lock: identity of %s: %w", path, err)
	}
	beside, err := lockFile(path + ".tqscavenger.lock")
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(lockDir(), 0o777); err != nil {
		beside.unlock()
		return nil, fmt.Errorf("lock: %w", err)
	}
	// Any user's scavenger may add its lock files, none may remove
	// another's (a sticky directory, as /tmp).
	os.Chmod(lockDir(), 0o777|os.ModeSticky)
	byID, err := lockFile(filepath.Join(lockDir(), id+".lock"))
	if err != nil {
		beside.unlock()
		if errors.Is(err, store.ErrLocked) {
			return nil, fmt.Errorf("%w: the database %s is the file another tqscavenger locked by another path (%s)", store.ErrLocked, path, err)
		}
		return nil, err
	}
	fmt.Fprintf(byID.f, "%d %s\n", os.Getpid(), path)
	return &fileLock{db: path, id: id, files: []*heldFile{beside, byID}}, nil
}

// fileLock is a held SQLite lock: its lock files.
type fileLock struct {
	db, id string
	files  []*heldFile

	mu   sync.Mutex
	lost error
}

// Check implements store.Lock: the database path still names the file
// that was locked, and each lock file's path the file this process
// locked. A database replaced (moved, restored from a copy) or a lock
// file deleted lets another scavenger lock a new file.
func (l *fileLock) Check(context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.lost != nil {
		return l.lost
	}
	if id, err := fileIdentity(l.db); err != nil || id != l.id {
		l.lost = fmt.Errorf("%w: %s is no longer the file that was locked (%v)", store.ErrLockLost, l.db, err)
		return l.lost
	}
	for _, f := range l.files {
		if err := f.still(); err != nil {
			l.lost = fmt.Errorf("%w: %w", store.ErrLockLost, err)
			return l.lost
		}
	}
	return nil
}

// Unlock implements store.Lock.
func (l *fileLock) Unlock() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	var err error
	for i := len(l.files) - 1; i >= 0; i-- {
		err = errors.Join(err, l.files[i].unlock())
	}
	l.files = nil
	return err
}

// heldFile is a lock file this process holds locked.
type heldFile struct {
	path string
	f    *os.File
	// release, if set, releases a shared or range lock (else unlockFile).
	release func() error
}

// lockFile takes an exclusive lock on the file at path, creating it if
// need be, without waiting. The operating system drops the lock when the
// process dies, so a crashed scavenger never leaves a stale lock.
func lockFile(path string) (*heldFile, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o666)
	if err != nil {
		return nil, lockFileError(path, err)
	}
	if busy, err := tryLockFile(f); err != nil {
		f.Close()
		if busy {
			return nil, fmt.Errorf("%w (lock file %s)", store.ErrLocked, path)
		}
		return nil, fmt.Errorf("lock file %s: %w", path, err)
	}
	f.Truncate(0)
	fmt.Fprintf(f, "%d\n", os.Getpid())
	return &heldFile{path: path, f: f}, nil
}

// still reports an error unless path still names the locked file.
func (h *heldFile) still() error {
	held, err := h.f.Stat()
	if err != nil {
		return fmt.Errorf("lock file %s: %w", h.path, err)
	}
	now, err := os.Stat(h.path)
	if err != nil || !os.SameFile(held, now) {
		return fmt.Errorf("lock file %s was removed or replaced (%v)", h.path, err)
	}
	return nil
}

// unlock releases the lock. Unlocking before removing would let another
// process lock the file we then delete; the file is kept.
func (h *heldFile) unlock() error {
	if h.release != nil {
		return h.release()
	}
	return unlockFile(h.f)
}

// lockSQLiteRange locks the part r of the SQLite database at path's hash
// space: the two lock files of lockSQLite in shared mode (so that a whole
// pass, which takes them exclusively, this version's or an older one's,
// excludes it and is excluded), and the bytes [r.Lo, r.Hi] of two range
// files beside them (path + ".tqscavenger.ranges", and one named from
// the file's identity), which map the hash space onto byte offsets: two
// ranges conflict exactly when their bytes overlap. On Linux these are
// open file description locks (F_OFD_SETLK: per open file, as flock, so
// two passes of one process exclude each other too, and closing another
// descriptor drops nothing); where the system has none, the range file is
// locked whole, so that partitions of one SQLite database run one at a
// time (SQLite has one writer anyway).
func lockSQLiteRange(path string, r store.HashRange) (store.Lock, error) {
	id, err := fileIdentity(path)
	if err != nil {
		return nil, fmt.Errorf("lock: identity of %s: %w", path, err)
	}
	if err := os.MkdirAll(lockDir(), 0o777); err != nil {
		return nil, fmt.Errorf("lock: %w", err)
	}
	os.Chmod(lockDir(), 0o777|os.ModeSticky)
	l := &fileLock{db: path, id: id}
	for _, f := range []struct {
		path   string
		shared bool
	}{
		{path + ".tqscavenger.lock", true},
		{filepath.Join(lockDir(), id+".lock"), true},
		{path + ".tqscavenger.ranges", false},
		{filepath.Join(lockDir(), id+".ranges"), false},
	} {
		h, err := lockPart(f.path, f.shared, r)
		if err != nil {
			l.Unlock()
			return nil, err
		}
		l.files = append(l.files, h)
	}
	return l, nil
}

// lockPart takes a shared lock of the whole file at path, or an exclusive
// lock of its bytes [r.Lo, r.Hi], without waiting.
func lockPart(path string, shared bool, r store.HashRange) (*heldFile, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o666)
	if err != nil {
		return nil, lockFileError(path, err)
	}
	var busy bool
	var release func() error
	if shared {
		busy, err = tryLockFileShared(f)
		release = func() error { return unlockFile(f) }
	} else {
		busy, release, err = tryLockRange(f, r)
	}
	if err != nil {
		f.Close()
		if busy {
			what := "a whole pass"
			if !shared {
				what = "a pass over a range overlapping " + r.String()
			}
			return nil, fmt.Errorf("%w: %s holds it (lock file %s)", store.ErrLocked, what, path)
		}
		return nil, fmt.Errorf("lock file %s: %w", path, err)
	}
	return &heldFile{path: path, f: f, release: release}, nil
}

// lockFileError is the error of a lock file that cannot be created: one
// in a directory the process may not write (or a read-only file system)
// is refused (ErrRefused): retrying will not help, the directory's
// permissions must change.
func lockFileError(path string, err error) error {
	if errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EROFS) || errors.Is(err, syscall.ENOTDIR) || errors.Is(err, syscall.ENAMETOOLONG) {
		return fmt.Errorf("%w: lock file %s: %w (tqscavenger takes its lock beside the database: the directory must be writable)", ErrRefused, path, err)
	}
	return fmt.Errorf("lock file %s: %w", path, err)
}
