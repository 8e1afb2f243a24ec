// This file owns the probe: a connection of its own, outside the store's
// pool, on which a gentle scavenger pass times matching's most frequent
// reads (internal/pace/probe.go).

package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/tqscavenger/tqscavenger/store"
)

// WritesLockDatabase implements store.WholeDatabaseWriter: true on SQLite,
// where a write holds the database's one writer lock.
func (s *DB) WritesLockDatabase() bool { return s.d.engine == SQLite }

var (
	_ store.WholeDatabaseWriter = (*DB)(nil)
	_ store.Prober              = (*DB)(nil)
)

// probeTasks is how many tasks a probe's range read asks for.
const probeTasks = 5

// OpenProbe implements store.Prober on PostgreSQL and MySQL: a pool of one
// connection of its own over the store's connector (outside
// Options.MaxConns), reading the v1 queue with the greatest key — the one
// a pass, walking in key order, reaches last. On SQLite it returns an
// error wrapping errors.ErrUnsupported: a read there in a rollback journal
// takes a lock that blocks commits.
func (s *DB) OpenProbe(ctx context.Context) (store.Probe, error) {
	if s.d.engine == SQLite {
		return nil, fmt.Errorf("probe on SQLite: %w", errors.ErrUnsupported)
	}
	ctx, cancel := s.withStartup(ctx)
	defer cancel()
	pool := sql.OpenDB(s.connector)
	pool.SetMaxOpenConns(1)
	p := &probe{s: s, pool: pool}
	var id []byte
	var hash int64
	q := "SELECT range_hash, task_queue_id FROM " + queueTable(store.V1) + " ORDER BY range_hash DESC, task_queue_id DESC LIMIT 1"
	switch err := pool.QueryRowContext(ctx, q).Scan(&hash, &id); {
	case errors.Is(err, sql.ErrNoRows):
		// No queue: the reads still run, on a key no row has.
	case err != nil:
		pool.Close()
		return nil, s.wrap(ctx, "open the probe", err)
	}
	p.q = store.QueueKey{RangeHash: uint32(hash), ID: id}
	return p, nil
}

// probe is a store.Probe.
type probe struct {
	s    *DB
	pool *sql.DB
	q    store.QueueKey
}

// Probe implements store.Probe: GetTaskQueue's and GetTasks' shapes, each
// a plain read (no FOR UPDATE, no share lock) in its own autocommit.
func (p *probe) Probe(ctx context.Context) error {
	ctx, cancel := p.s.withStatement(ctx)
	defer cancel()
	b := p.s.newBuilder()
	b.w("SELECT range_id FROM ", queueTable(store.V1), " WHERE ").whereQueue(p.q)
	var rangeID int64
	if err := p.pool.QueryRowContext(ctx, b.String(), b.args...).Scan(&rangeID); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return p.s.wrap(ctx, "probe a queue row", err)
	}
	t := p.s.readTasksSQL(store.V1, p.q, nil, probeTasks)
	rows, err := p.pool.QueryContext(ctx, t.String(), t.args...)
	if err != nil {
		return p.s.wrap(ctx, "probe tasks", err)
	}
	for rows.Next() {
	}
	rows.Close()
	return p.s.wrap(ctx, "probe tasks", rows.Err())
}

// Close implements store.Probe.
func (p *probe) Close() error { return p.pool.Close() }
