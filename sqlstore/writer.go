// This file owns store.Writer: what a matching host does to the task
// tables.

package sqlstore

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/tqscavenger/tqscavenger/store"
)

// CreateQueue implements store.Writer.
func (s *DB) CreateQueue(ctx context.Context, t store.Table, row store.QueueRow) error {
	ctx, cancel := s.withStatement(ctx)
	defer cancel()
	b := s.newBuilder()
	b.w("INSERT INTO ", queueTable(t), " (range_hash, task_queue_id, range_id, data, data_encoding) VALUES (").
		p(int64(row.RangeHash)).w(", ").p(row.ID).w(", ").p(row.RangeID).w(", ").p(row.Data).w(", ").p(row.Encoding).w(")")
	_, err := s.exec(ctx, b.String(), b.args)
	return s.wrapWrite(ctx, "create queue "+row.QueueKey.String(), err)
}

// UpdateQueue implements store.Writer.
func (s *DB) UpdateQueue(ctx context.Context, t store.Table, row store.QueueRow, prevRangeID int64) error {
	ctx, cancel := s.withStatement(ctx)
	defer cancel()
	b := s.newBuilder()
	b.w("UPDATE ", queueTable(t), " SET range_id = ").p(row.RangeID).w(", data = ").p(row.Data).
		w(", data_encoding = ").p(row.Encoding).w(" WHERE ").whereQueue(row.QueueKey).w(" AND range_id = ").p(prevRangeID)
	n, err := s.exec(ctx, b.String(), b.args)
	if err != nil {
		return s.wrapWrite(ctx, "update queue", err)
	}
	if n == 0 && s.d.changedRows && row.RangeID == prevRangeID {
		// MySQL reports the rows an UPDATE changed, not those it matched,
		// unless the client asks for found rows (clientFoundRows, which a
		// caller's connector may not set): a compare-and-set that writes
		// the values the row already has reports none. If the row has them
		// now, the compare-and-set holds.
		got, err := s.GetQueue(ctx, t, row.QueueKey)
		if err == nil && got.RangeID == row.RangeID && bytes.Equal(got.Data, row.Data) && got.Encoding == row.Encoding {
			return nil
		}
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
	}
	if n == 0 {
		return fmt.Errorf("update %s %s at range_id %d: %w", queueTable(t), row.QueueKey, prevRangeID, store.ErrConditionFailed)
	}
	return nil
}

// AppendTasks implements store.Writer.
func (s *DB) AppendTasks(ctx context.Context, t store.Table, owner store.QueueKey, rangeID int64, target store.QueueKey, tasks []store.TaskRow) (err error) {
	ctx, cancel := s.withStatement(ctx)
	defer cancel()
	tx, err := s.begin(ctx)
	if err != nil {
		return s.wrap(ctx, "append tasks: begin", err)
	}
	defer func() {
		if err != nil {
			tx.Rollback()
		}
	}()
	b := s.newBuilder()
	b.w("SELECT range_id FROM ", queueTable(t), " WHERE ").whereQueue(owner).w(s.d.forUpdate)
	s.statements.Add(1)
	var got int64
	if err := tx.QueryRowContext(ctx, b.String(), b.args...).Scan(&got); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("append tasks: queue %s %s is gone: %w", t, owner, store.ErrConditionFailed)
		}
		return s.wrap(ctx, "append tasks: fence", err)
	}
	if got != rangeID {
		return fmt.Errorf("append tasks: queue %s %s has range_id %d, want %d: %w", t, owner, got, rangeID, store.ErrConditionFailed)
	}
	for len(tasks) > 0 {
		n := min(len(tasks), 200)
		b.reset()
		b.w("INSERT INTO ", taskTable(t), " (range_hash, task_queue_id, ", orderBy(t), ", data, data_encoding) VALUES ")
		for i, task := range tasks[:n] {
			if i > 0 {
				b.w(", ")
			}
			b.w("(").p(int64(target.RangeHash)).w(", ").p(target.ID).w(", ")
			if t == store.V2 {
				b.p(task.Key.Pass).w(", ")
			}
			b.p(task.Key.ID).w(", ").p(task.Data).w(", ").p(task.Encoding).w(")")
		}
		s.statements.Add(1)
		if _, err := tx.ExecContext(ctx, b.String(), b.args...); err != nil {
			return s.wrap(ctx, "append tasks", err)
		}
		tasks = tasks[n:]
	}
	s.statements.Add(1)
	return s.wrapAs(ctx, "append tasks: commit", commitEffect, tx.Commit())
}

// CompleteTasks implements store.Writer.
func (s *DB) CompleteTasks(ctx context.Context, t store.Table, q store.QueueKey, through store.TaskKey) (int64, error) {
	ctx, cancel := s.withStatement(ctx)
	defer cancel()
	b := s.deleteRangeSQL(t, q, store.TaskRange{Max: through})
	n, err := s.exec(ctx, b.String(), b.args)
	return n, s.wrapWrite(ctx, "delete "+taskTable(t), err)
}
