// This file owns the reads and deletes of one queue's tasks, and the
// listing and delete of orphaned tasks.

package sqlstore

import (
	"context"

	"github.com/tqscavenger/tqscavenger/store"
)

// ReadTasks implements store.Store.
func (s *DB) ReadTasks(ctx context.Context, t store.Table, q store.QueueKey, after *store.TaskKey, limit int) ([]store.TaskRow, error) {
	ctx, cancel := s.withStatement(ctx)
	defer cancel()
	b := s.readTasksSQL(t, q, after, limit)
	rows, err := s.query(ctx, b.String(), b.args)
	if err != nil {
		return nil, s.wrap(ctx, "read "+taskTable(t), err)
	}
	defer rows.Close()
	out := make([]store.TaskRow, 0, min(limit, maxPrealloc))
	for rows.Next() {
		var r store.TaskRow
		if t == store.V2 {
			err = rows.Scan(&r.Key.Pass, &r.Key.ID, &r.Data, &r.Encoding)
		} else {
			err = rows.Scan(&r.Key.ID, &r.Data, &r.Encoding)
		}
		if err != nil {
			return nil, s.wrap(ctx, "read "+taskTable(t), err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, s.wrap(ctx, "read "+taskTable(t), err)
	}
	return out, nil
}

func (s *DB) readTasksSQL(t store.Table, q store.QueueKey, after *store.TaskKey, limit int) *builder {
	b := s.newBuilder()
	b.w("SELECT ", orderBy(t), ", data, data_encoding FROM ", taskTable(t), " WHERE ").queueTasks(t, q, after, ">", nil)
	return b.w(" ORDER BY ", b.taskOrder(t), " LIMIT ").p(limit)
}

// DeleteTasks implements store.Store.
func (s *DB) DeleteTasks(ctx context.Context, t store.Table, q store.QueueKey, r store.TaskRange, limit int) (int64, error) {
	ctx, cancel := s.withStatement(ctx)
	defer cancel()
	op := "delete " + taskTable(t)
	if limit <= 0 {
		return s.deleteTaskSets(ctx, t, []store.TaskSet{{Queue: q, Range: r}})
	}
	f := s.d.deleteLimited(s.newBuilder(), t, q, r, limit)
	if f.probe == "" {
		n, err := s.exec(ctx, f.stmt, f.args)
		return n, s.wrapWrite(ctx, op, err)
	}
	// Probe for the limit-th key, then delete a plain key range up to it:
	// the fastest correct form where DELETE … LIMIT does not exist.
	rows, err := s.query(ctx, f.probe, f.probeArg)
	if err != nil {
		return 0, s.wrap(ctx, op, err)
	}
	max := r.Max // fewer than limit tasks in r: delete all of r
	if rows.Next() {
		if t == store.V2 {
			err = rows.Scan(&max.Pass, &max.ID)
		} else {
			err = rows.Scan(&max.ID)
		}
	}
	if err == nil {
		err = rows.Err()
	}
	rows.Close()
	if err != nil {
		return 0, s.wrap(ctx, op, err)
	}
	b := s.deleteRangeSQL(t, q, store.TaskRange{Min: r.Min, Max: max})
	n, err := s.exec(ctx, b.String(), b.args)
	return n, s.wrapWrite(ctx, op, err)
}

// deleteRangeSQL deletes every task of q inside r.
func (s *DB) deleteRangeSQL(t store.Table, q store.QueueKey, r store.TaskRange) *builder {
	b := s.newBuilder()
	return b.w("DELETE FROM ", taskTable(t), " WHERE ").whereQueue(q).w(" AND ").taskRange(t, r)
}

// deleteKeysSQL deletes the tasks of q with the given keys.
func (s *DB) deleteKeysSQL(t store.Table, q store.QueueKey, keys []store.TaskKey) *builder {
	b := s.newBuilder()
	return b.w("DELETE FROM ", taskTable(t), " WHERE ").whereQueue(q).w(" AND ").keyIn(t, keys)
}

// ListTaskQueueIDs implements store.Store. The distinct ids come from the
// primary key in order (an index scan that stops at limit ids), and the
// existence of an exact queue row is a point lookup per id, in the same
// statement.
func (s *DB) ListTaskQueueIDs(ctx context.Context, t store.Table, after *store.QueueKey, limit int) ([]store.TaskQueueRef, error) {
	if limit <= 0 {
		return nil, nil // the recursive form always yields its first row
	}
	ctx, cancel := s.withStatement(ctx)
	defer cancel()
	b := s.listTaskQueueIDsSQL(t, after, limit)
	op := "list task queue ids of " + taskTable(t)
	rows, err := s.query(ctx, b.String(), b.args)
	if err != nil {
		return nil, s.wrap(ctx, op, err)
	}
	defer rows.Close()
	var out []store.TaskQueueRef
	for rows.Next() {
		var (
			r   store.TaskQueueRef
			rh  int64
			has int
		)
		if err := rows.Scan(&rh, &r.ID, &has); err != nil {
			return nil, s.wrap(ctx, op, err)
		}
		h, err := hashOf(rh)
		if err != nil {
			return nil, s.wrap(ctx, op, err)
		}
		r.RangeHash, r.HasQueueRow = h, has == 1
		out = append(out, r)
	}
	return out, s.wrap(ctx, op, rows.Err())
}

func (s *DB) listTaskQueueIDsSQL(t store.Table, after *store.QueueKey, limit int) *builder {
	b := s.newBuilder()
	if s.d.listTaskQueueIDs != nil {
		return s.d.listTaskQueueIDs(b, t, after, limit)
	}
	b.w("SELECT d.range_hash, d.task_queue_id, CASE WHEN EXISTS (SELECT 1 FROM ", queueTable(t),
		" q WHERE q.range_hash = d.range_hash AND q.task_queue_id = d.task_queue_id) THEN 1 ELSE 0 END FROM (SELECT DISTINCT range_hash, task_queue_id FROM ", taskTable(t))
	b.whereAfter(after)
	return b.w(" ORDER BY range_hash, task_queue_id LIMIT ").p(limit).w(") d ORDER BY d.range_hash, d.task_queue_id")
}

// DeleteOrphanTasks implements store.Store.
func (s *DB) DeleteOrphanTasks(ctx context.Context, t store.Table, q store.QueueKey, parents []store.QueueKey, keys []store.TaskKey) (int64, error) {
	ctx, cancel := s.withStatement(ctx)
	defer cancel()
	var total int64
	for len(keys) > 0 {
		n := min(len(keys), 500)
		b := s.newBuilder()
		b.w("DELETE FROM ", taskTable(t), " WHERE ").whereQueue(q).w(" AND ").keyIn(t, keys[:n])
		for _, p := range parents {
			// MySQL cannot reference the target table in a subquery of a
			// DELETE, but the queue table is another table.
			b.w(" AND NOT EXISTS (SELECT 1 FROM ", queueTable(t), " WHERE range_hash = ").p(int64(p.RangeHash)).
				w(" AND task_queue_id = ").p(p.ID).w(")")
		}
		d, err := s.execIsolated(ctx, s.d.orphanIsolation, b.String(), b.args)
		total += d
		if err != nil {
			return total, s.wrapWrite(ctx, "delete orphans of "+taskTable(t), err)
		}
		keys = keys[n:]
	}
	return total, nil
}
