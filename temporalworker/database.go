package temporalworker

import (
	"context"

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

// LockRange takes r's range lock without waiting (sqlstore.DB.LockRange):
// it excludes passes over overlapping ranges in every process, whatever
// their N, and an old version's whole-database pass.
func (d *SQLDatabase) LockRange(ctx context.Context, r store.HashRange) (store.Lock, error) {
	return d.db.LockRange(ctx, r, false)
}
