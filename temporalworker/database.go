package temporalworker

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"sync"

	"github.com/tqscavenger/tqscavenger/sqlstore"
	"github.com/tqscavenger/tqscavenger/store"
)

// Database is what a partition activity needs of the database its worker
// is connected to.
type Database interface {
	// Store is the task store the passes scavenge.
	Store() store.Store
	// Identity names the database, the same for every worker that
	// reaches it however it connects, and never its DSN or a secret. A
	// pass meant for another identity is refused.
	Identity(ctx context.Context) (string, error)
	// CheckSchema returns an error wrapping store.ErrSchema if the
	// database is not a Temporal task store the scavenger can work on.
	CheckSchema(ctx context.Context) error
	// LockRange takes the lock of the range_hash range r without waiting:
	// it returns an error wrapping store.ErrLocked if a pass over an
	// overlapping range holds it. The activity checks the lock while it
	// works (scavenger.Config.Lock) and releases it when done.
	LockRange(ctx context.Context, r HashRange) (store.Lock, error)
}

// SQLDatabase is a Database over a sqlstore.DB.
type SQLDatabase struct {
	db  *sqlstore.DB
	raw *sql.DB
	// ranges excludes overlapping ranges within this process.
	ranges rangeLocks
}

// NewSQLDatabase returns a Database over db; raw is a database/sql pool on
// the same database (sqlstore.Connector of its DSN), for the identity
// query.
func NewSQLDatabase(db *sqlstore.DB, raw *sql.DB) *SQLDatabase {
	return &SQLDatabase{db: db, raw: raw}
}

// Store returns the task store.
func (d *SQLDatabase) Store() store.Store { return d.db }

// CheckSchema checks Temporal's task tables.
func (d *SQLDatabase) CheckSchema(ctx context.Context) error {
	_, err := d.db.Check(ctx)
	return err
}

// Identity returns engine:digest, the digest of what the server says it is
// (PostgreSQL: its system identifier, the database and schema; MySQL and
// MariaDB: the server's host name and port, and the database; SQLite: the
// file's absolute path). It is the same for two workers that reach one
// database by different addresses, and it names no host in the clear.
func (d *SQLDatabase) Identity(ctx context.Context) (string, error) {
	var parts []any
	switch e := d.db.Engine(); e {
	case sqlstore.SQLite:
		p, err := filepath.Abs(d.db.DSN().Path)
		if err != nil {
			return "", err
		}
		parts = append(parts, p)
	case sqlstore.Postgres:
		var sys, db, schema sql.NullString
		// pg_control_system may be denied to an unprivileged user: the
		// server's address stands in for the system identifier.
		err := d.raw.QueryRowContext(ctx, "SELECT (SELECT system_identifier::text FROM pg_control_system()), current_database(), current_schema()").Scan(&sys, &db, &schema)
		if err != nil {
			err = d.raw.QueryRowContext(ctx, "SELECT COALESCE(host(inet_server_addr()), 'local') || ':' || COALESCE(inet_server_port()::text, ''), current_database(), current_schema()").Scan(&sys, &db, &schema)
		}
		if err != nil {
			return "", fmt.Errorf("database identity: %w", err)
		}
		parts = append(parts, sys.String, db.String, schema.String)
	case sqlstore.MySQL:
		var host, port, db sql.NullString
		if err := d.raw.QueryRowContext(ctx, "SELECT @@hostname, @@port, DATABASE()").Scan(&host, &port, &db); err != nil {
			return "", fmt.Errorf("database identity: %w", err)
		}
		parts = append(parts, host.String, port.String, db.String)
	default:
		return "", fmt.Errorf("database identity: unknown engine %q", e)
	}
	sum := sha256.Sum256(fmt.Append(nil, parts...))
	return string(d.db.Engine()) + ":" + hex.EncodeToString(sum[:8]), nil
}

// LockRange takes r's lock among this process's passes.
//
// It stands in for the per-range database locks of the large-databases
// issue, which also exclude passes of other processes (and an old
// version's whole-database pass); until they land, the exclusion is per
// worker process.
func (d *SQLDatabase) LockRange(ctx context.Context, r HashRange) (store.Lock, error) {
	return d.ranges.lock(r)
}

// rangeLocks are locks on ranges of the range_hash space: one range may be
// held at a time among those that overlap.
type rangeLocks struct {
	mu   sync.Mutex
	held map[*rangeLock]bool
}

type rangeLock struct {
	l *rangeLocks
	r HashRange
}

func (l *rangeLocks) lock(r HashRange) (store.Lock, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for h := range l.held {
		if h.r.Lo <= r.Hi && r.Lo <= h.r.Hi {
			return nil, fmt.Errorf("range %s: %w (a pass over %s runs)", r, store.ErrLocked, h.r)
		}
	}
	if l.held == nil {
		l.held = map[*rangeLock]bool{}
	}
	h := &rangeLock{l: l, r: r}
	l.held[h] = true
	return h, nil
}

func (h *rangeLock) Check(context.Context) error {
	h.l.mu.Lock()
	defer h.l.mu.Unlock()
	if !h.l.held[h] {
		return fmt.Errorf("range %s: %w", h.r, store.ErrLockLost)
	}
	return nil
}

func (h *rangeLock) Unlock() error {
	h.l.mu.Lock()
	defer h.l.mu.Unlock()
	delete(h.l.held, h)
	return nil
}
