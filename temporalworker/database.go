package temporalworker

import (
	"context"
	"fmt"
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
	LockRange(ctx context.Context, r store.HashRange) (store.Lock, error)
}

// SQLDatabase is a Database over a sqlstore.DB.
type SQLDatabase struct {
	db *sqlstore.DB
	// local excludes overlapping ranges within this process where the
	// store has no range locks of its own.
	local rangeLocks
}

// NewSQLDatabase returns a Database over db.
func NewSQLDatabase(db *sqlstore.DB) *SQLDatabase { return &SQLDatabase{db: db} }

// Store returns the task store.
func (d *SQLDatabase) Store() store.Store { return d.db }

// Identity returns the database's identity (sqlstore.DB.Identity): the
// one checkpoints carry.
func (d *SQLDatabase) Identity(ctx context.Context) (string, error) { return d.db.Identity(ctx) }

// CheckSchema checks Temporal's task tables.
func (d *SQLDatabase) CheckSchema(ctx context.Context) error {
	_, err := d.db.Check(ctx)
	return err
}

// LockRange takes r's lock: the store's range lock (store.RangeLocker),
// which excludes passes over overlapping ranges of every process and an
// old version's whole-database pass; a store without one gets a lock among
// this process's passes only.
func (d *SQLDatabase) LockRange(ctx context.Context, r store.HashRange) (store.Lock, error) {
	if rl, ok := any(d.db).(store.RangeLocker); ok {
		return rl.LockRange(ctx, r, false)
	}
	return d.local.lock(r)
}

// rangeLocks are locks on ranges of the range_hash space: one range may be
// held at a time among those that overlap.
type rangeLocks struct {
	mu   sync.Mutex
	held map[*rangeLock]bool
}

type rangeLock struct {
	l *rangeLocks
	r store.HashRange
}

func (l *rangeLocks) lock(r store.HashRange) (store.Lock, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for h := range l.held {
		if h.r.Overlaps(r) {
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
