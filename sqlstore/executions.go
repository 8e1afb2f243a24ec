// This file owns the reads of Temporal's history tables (executions,
// current_executions, shards, cluster_metadata_info, namespaces) that the
// closed-workflow rule makes: store.ExecutionReader.

package sqlstore

import (
	"context"
	"fmt"

	"github.com/tqscavenger/tqscavenger/store"
)

var _ store.ExecutionReader = (*DB)(nil)

// lookupChunk is how many keys one primary-key lookup statement carries:
// 4 parameters each, well under every engine's limits and SQLite's
// expression depth, and small enough to hold no statement for long.
const lookupChunk = store.LookupChunk

// historyErr wraps the error of a read of a history table; a read refused
// for want of a privilege also wraps store.ErrNoPrivilege, naming the
// table, so that the command exits 2 with it.
func (s *DB) historyErr(ctx context.Context, table string, err error) error {
	if err == nil {
		return nil
	}
	if s.d.denied != nil && s.d.denied(err) {
		return fmt.Errorf("read %s: %w", table, mark(err, store.ErrNoPrivilege))
	}
	return s.wrap(ctx, "read "+table, err)
}

// ClusterMetadata implements store.ExecutionReader.
func (s *DB) ClusterMetadata(ctx context.Context) ([]store.ClusterMetadataRow, error) {
	ctx, cancel := s.withStatement(ctx)
	defer cancel()
	rows, err := s.query(ctx, "SELECT metadata_partition, cluster_name, data, data_encoding FROM cluster_metadata_info ORDER BY metadata_partition, cluster_name", nil)
	if err != nil {
		return nil, s.historyErr(ctx, "cluster_metadata_info", err)
	}
	defer rows.Close()
	var out []store.ClusterMetadataRow
	for rows.Next() {
		var r store.ClusterMetadataRow
		if err := rows.Scan(&r.Partition, &r.ClusterName, &r.Data, &r.Encoding); err != nil {
			return nil, s.historyErr(ctx, "cluster_metadata_info", err)
		}
		out = append(out, r)
	}
	return out, s.historyErr(ctx, "cluster_metadata_info", rows.Err())
}

// ShardIDs implements store.ExecutionReader.
func (s *DB) ShardIDs(ctx context.Context) ([]int32, error) {
	ctx, cancel := s.withStatement(ctx)
	defer cancel()
	rows, err := s.query(ctx, "SELECT shard_id FROM shards ORDER BY shard_id", nil)
	if err != nil {
		return nil, s.historyErr(ctx, "shards", err)
	}
	defer rows.Close()
	var out []int32
	for rows.Next() {
		var id int32
		if err := rows.Scan(&id); err != nil {
			return nil, s.historyErr(ctx, "shards", err)
		}
		out = append(out, id)
	}
	return out, s.historyErr(ctx, "shards", rows.Err())
}

// MaxExecutionShard implements store.ExecutionReader. MAX of the leading
// primary-key column is one index probe on every engine.
func (s *DB) MaxExecutionShard(ctx context.Context) (int32, bool, error) {
	ctx, cancel := s.withStatement(ctx)
	defer cancel()
	rows, err := s.query(ctx, "SELECT MAX(shard_id) FROM executions", nil)
	if err != nil {
		return 0, false, s.historyErr(ctx, "executions", err)
	}
	defer rows.Close()
	var max *int64
	if rows.Next() {
		if err := rows.Scan(&max); err != nil {
			return 0, false, s.historyErr(ctx, "executions", err)
		}
	}
	if err := rows.Err(); err != nil {
		return 0, false, s.historyErr(ctx, "executions", err)
	}
	if max == nil {
		return 0, false, nil
	}
	return int32(*max), true, nil
}

// NextWorkflow implements store.ExecutionReader: a keyset on (shard_id,
// namespace_id, workflow_id) over the primary key.
func (s *DB) NextWorkflow(ctx context.Context, after *store.ExecutionKey) (store.ExecutionKey, bool, error) {
	ctx, cancel := s.withStatement(ctx)
	defer cancel()
	b := s.newBuilder()
	b.w("SELECT shard_id, namespace_id, workflow_id, run_id FROM executions")
	if after != nil {
		b.w(" WHERE ").cmp([]string{"shard_id", "namespace_id", "workflow_id"}, []any{after.ShardID, after.NamespaceID[:], after.WorkflowID}, ">")
	}
	b.w(" ORDER BY shard_id, namespace_id, workflow_id, run_id LIMIT 1")
	rows, err := s.query(ctx, b.String(), b.args)
	if err != nil {
		return store.ExecutionKey{}, false, s.historyErr(ctx, "executions", err)
	}
	defer rows.Close()
	if !rows.Next() {
		return store.ExecutionKey{}, false, s.historyErr(ctx, "executions", rows.Err())
	}
	k, err := scanExecutionKey(rows, true)
	if err != nil {
		return store.ExecutionKey{}, false, s.historyErr(ctx, "executions", err)
	}
	return k, true, s.historyErr(ctx, "executions", rows.Err())
}

type scanner interface{ Scan(dest ...any) error }

// scanExecutionKey scans shard_id, namespace_id, workflow_id (and run_id).
func scanExecutionKey(r scanner, _ bool, extra ...any) (store.ExecutionKey, error) {
	var (
		k       store.ExecutionKey
		ns, run []byte
	)
	dest := []any{&k.ShardID, &ns, &k.WorkflowID, &run}
	dest = append(dest, extra...)
	if err := r.Scan(dest...); err != nil {
		return k, err
	}
	if len(ns) != 16 || len(run) != 16 {
		return k, fmt.Errorf("shard %d workflow %q: namespace_id of %d bytes, run_id of %d: want 16", k.ShardID, k.WorkflowID, len(ns), len(run))
	}
	copy(k.NamespaceID[:], ns)
	copy(k.RunID[:], run)
	return k, nil
}

// whereKeys writes the OR of the keys' primary-key equalities: every
// engine reads an OR of full-key equalities as point lookups.
func (b *builder) whereKeys(keys []store.ExecutionKey, withRun bool) *builder {
	for i, k := range keys {
		if i > 0 {
			b.w(" OR ")
		}
		b.w("(shard_id = ").p(k.ShardID).w(" AND namespace_id = ").p(k.NamespaceID[:]).w(" AND workflow_id = ").p(k.WorkflowID)
		if withRun {
			b.w(" AND run_id = ").p(k.RunID[:])
		}
		b.w(")")
	}
	return b
}

// GetExecutions implements store.ExecutionReader. It selects the state
// blob only, never data.
func (s *DB) GetExecutions(ctx context.Context, keys []store.ExecutionKey) ([]store.ExecutionRow, error) {
	var out []store.ExecutionRow
	for len(keys) > 0 {
		n := min(len(keys), lookupChunk)
		got, err := s.getExecutions(ctx, keys[:n])
		if err != nil {
			return nil, err
		}
		out = append(out, got...)
		keys = keys[n:]
	}
	return out, nil
}

func (s *DB) getExecutions(ctx context.Context, keys []store.ExecutionKey) ([]store.ExecutionRow, error) {
	ctx, cancel := s.withStatement(ctx)
	defer cancel()
	b := s.newBuilder()
	b.w("SELECT shard_id, namespace_id, workflow_id, run_id, state, state_encoding FROM executions WHERE ").whereKeys(keys, true)
	rows, err := s.query(ctx, b.String(), b.args)
	if err != nil {
		return nil, s.historyErr(ctx, "executions", err)
	}
	defer rows.Close()
	var out []store.ExecutionRow
	for rows.Next() {
		var r store.ExecutionRow
		k, err := scanExecutionKey(rows, true, &r.State, &r.StateEncoding)
		if err != nil {
			return nil, s.historyErr(ctx, "executions", err)
		}
		r.ExecutionKey = k
		out = append(out, r)
	}
	return out, s.historyErr(ctx, "executions", rows.Err())
}

// GetCurrentExecutions implements store.ExecutionReader.
func (s *DB) GetCurrentExecutions(ctx context.Context, keys []store.ExecutionKey) ([]store.CurrentExecutionRow, error) {
	var out []store.CurrentExecutionRow
	for len(keys) > 0 {
		n := min(len(keys), lookupChunk)
		got, err := s.getCurrent(ctx, keys[:n])
		if err != nil {
			return nil, err
		}
		out = append(out, got...)
		keys = keys[n:]
	}
	return out, nil
}

func (s *DB) getCurrent(ctx context.Context, keys []store.ExecutionKey) ([]store.CurrentExecutionRow, error) {
	ctx, cancel := s.withStatement(ctx)
	defer cancel()
	b := s.newBuilder()
	b.w("SELECT shard_id, namespace_id, workflow_id, run_id, state FROM current_executions WHERE ").whereKeys(keys, false)
	rows, err := s.query(ctx, b.String(), b.args)
	if err != nil {
		return nil, s.historyErr(ctx, "current_executions", err)
	}
	defer rows.Close()
	var out []store.CurrentExecutionRow
	for rows.Next() {
		var r store.CurrentExecutionRow
		k, err := scanExecutionKey(rows, true, &r.State)
		if err != nil {
			return nil, s.historyErr(ctx, "current_executions", err)
		}
		r.ExecutionKey = k
		out = append(out, r)
	}
	return out, s.historyErr(ctx, "current_executions", rows.Err())
}

// Namespaces implements store.ExecutionReader.
func (s *DB) Namespaces(ctx context.Context) ([]store.NamespaceRow, error) {
	ctx, cancel := s.withStatement(ctx)
	defer cancel()
	rows, err := s.query(ctx, "SELECT id, name, data, data_encoding, is_global FROM namespaces ORDER BY partition_id, id", nil)
	if err != nil {
		return nil, s.namespacesError(ctx, err)
	}
	defer rows.Close()
	var out []store.NamespaceRow
	for rows.Next() {
		var (
			r      store.NamespaceRow
			id     []byte
			global any
		)
		if err := rows.Scan(&id, &r.Name, &r.Data, &r.Encoding, &global); err != nil {
			return nil, s.historyErr(ctx, "namespaces", err)
		}
		if len(id) != 16 {
			return nil, fmt.Errorf("read namespaces: namespace %q has an id of %d bytes, want 16", r.Name, len(id))
		}
		copy(r.ID[:], id)
		g, err := truth(global)
		if err != nil {
			return nil, fmt.Errorf("read namespaces: namespace %q: is_global: %w", r.Name, err)
		}
		r.IsGlobal = g
		out = append(out, r)
	}
	return out, s.historyErr(ctx, "namespaces", rows.Err())
}

// truth reads a boolean column: BOOLEAN on PostgreSQL, TINYINT(1)
// elsewhere. A value that is neither is an error, never a guess.
func truth(v any) (bool, error) {
	switch x := v.(type) {
	case bool:
		return x, nil
	case int64:
		if x == 0 || x == 1 {
			return x == 1, nil
		}
	case []byte:
		switch string(x) {
		case "0":
			return false, nil
		case "1":
			return true, nil
		}
	}
	return false, fmt.Errorf("%v is no boolean", v)
}
