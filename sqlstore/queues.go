// This file owns the reads of queue rows and of the tables there are.

package sqlstore

import (
	"context"
	"fmt"

	"github.com/tqscavenger/tqscavenger/store"
)

// Tables implements store.Store. It is a start-up statement: bounded
// even without a statement timeout (see withStartup).
func (s *DB) Tables(ctx context.Context) ([]store.Table, error) {
	ctx, cancel := s.withStartup(ctx)
	defer cancel()
	s.statements.Add(1)
	names, err := s.tableNames(ctx)
	if err != nil {
		return nil, err
	}
	var out []store.Table
	if names["task_queues"] && names["tasks"] {
		out = append(out, store.V1)
	}
	if names["task_queues_v2"] && names["tasks_v2"] {
		out = append(out, store.V2)
	}
	return out, nil
}

// ListQueues implements store.Store. It reads in primary-key order with a
// keyset condition, so each page is an index range scan.
func (s *DB) ListQueues(ctx context.Context, t store.Table, after *store.QueueKey, limit int) ([]store.QueueRow, error) {
	ctx, cancel := s.withStatement(ctx)
	defer cancel()
	b := s.listQueuesSQL(t, after, limit)
	rows, err := s.query(ctx, b.String(), b.args)
	if err != nil {
		return nil, s.wrap(ctx, "list "+queueTable(t), err)
	}
	defer rows.Close()
	out := make([]store.QueueRow, 0, min(limit, maxPrealloc))
	for rows.Next() {
		var (
			r  store.QueueRow
			rh int64
		)
		if err := rows.Scan(&rh, &r.ID, &r.RangeID, &r.Data, &r.Encoding); err != nil {
			return nil, s.wrap(ctx, "list "+queueTable(t), err)
		}
		if r.RangeHash, err = hashOf(rh); err != nil {
			return nil, s.wrap(ctx, "list "+queueTable(t), err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, s.wrap(ctx, "list "+queueTable(t), err)
	}
	return out, nil
}

func (s *DB) listQueuesSQL(t store.Table, after *store.QueueKey, limit int) *builder {
	b := s.newBuilder()
	b.w("SELECT range_hash, task_queue_id, range_id, data, data_encoding FROM ", queueTable(t))
	b.whereAfter(after)
	return b.w(" ORDER BY range_hash, task_queue_id LIMIT ").p(limit)
}

// GetQueue implements store.Store.
func (s *DB) GetQueue(ctx context.Context, t store.Table, q store.QueueKey) (store.QueueRow, error) {
	ctx, cancel := s.withStatement(ctx)
	defer cancel()
	b := s.newBuilder()
	b.w("SELECT range_id, data, data_encoding FROM ", queueTable(t), " WHERE ").whereQueue(q)
	rows, err := s.query(ctx, b.String(), b.args)
	if err != nil {
		return store.QueueRow{}, s.wrap(ctx, "get queue", err)
	}
	defer rows.Close()
	r := store.QueueRow{QueueKey: q}
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return r, s.wrap(ctx, "get queue", err)
		}
		return r, fmt.Errorf("get queue %s %s: %w", t, q, store.ErrNotFound)
	}
	if err := rows.Scan(&r.RangeID, &r.Data, &r.Encoding); err != nil {
		return r, s.wrap(ctx, "get queue", err)
	}
	return r, s.wrap(ctx, "get queue", rows.Err())
}
