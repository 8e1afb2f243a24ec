package testdb

// Temporal's history tables (executions, current_executions, shards,
// cluster_metadata_info, namespaces) for tests of the closed-workflow rule:
// their DDL as Temporal v1.32's schema writes it on each engine (only the
// columns, not the other tables of the schema), and inserts of their rows.

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tqscavenger/tqscavenger/sqlstore"
	"github.com/tqscavenger/tqscavenger/store"
	"github.com/tqscavenger/tqscavenger/wire"
)

// historyTypes are the engine's types of Temporal's history DDL: integer,
// 16 raw bytes, blob, boolean, timestamp.
func historyTypes(e sqlstore.Engine) (integer, id, blob, boolean, ts string) {
	switch e {
	case sqlstore.Postgres:
		return "INTEGER", "BYTEA", "BYTEA", "BOOLEAN", "TIMESTAMP"
	case sqlstore.MySQL:
		return "INT", "BINARY(16)", "MEDIUMBLOB", "TINYINT(1)", "DATETIME(6)"
	}
	return "INT", "BINARY(16)", "MEDIUMBLOB", "TINYINT(1)", "TIMESTAMP"
}

// CreateHistoryTables creates Temporal's history tables in db's database.
func CreateHistoryTables(t testing.TB, db *sqlstore.DB) {
	t.Helper()
	i, id, blob, boolean, ts := historyTypes(db.Engine())
	for _, q := range []string{
		"CREATE TABLE namespaces (partition_id " + i + " NOT NULL, id " + id + " NOT NULL, name VARCHAR(255) UNIQUE NOT NULL, notification_version BIGINT NOT NULL, data " + blob + " NOT NULL, data_encoding VARCHAR(16) NOT NULL, is_global " + boolean + " NOT NULL, PRIMARY KEY (partition_id, id))",
		"CREATE TABLE shards (shard_id " + i + " NOT NULL, range_id BIGINT NOT NULL, data " + blob + " NOT NULL, data_encoding VARCHAR(16) NOT NULL, PRIMARY KEY (shard_id))",
		"CREATE TABLE executions (shard_id " + i + " NOT NULL, namespace_id " + id + " NOT NULL, workflow_id VARCHAR(255) NOT NULL, run_id " + id + " NOT NULL, next_event_id BIGINT NOT NULL, last_write_version BIGINT NOT NULL, data " + blob + " NOT NULL, data_encoding VARCHAR(16) NOT NULL, state " + blob + " NOT NULL, state_encoding VARCHAR(16) NOT NULL, db_record_version BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (shard_id, namespace_id, workflow_id, run_id))",
		"CREATE TABLE current_executions (shard_id " + i + " NOT NULL, namespace_id " + id + " NOT NULL, workflow_id VARCHAR(255) NOT NULL, run_id " + id + " NOT NULL, create_request_id VARCHAR(255) NOT NULL, state " + i + " NOT NULL, status " + i + " NOT NULL, start_time " + ts + " NULL, last_write_version BIGINT NOT NULL, data " + blob + " NULL, data_encoding VARCHAR(16) NOT NULL DEFAULT '', PRIMARY KEY (shard_id, namespace_id, workflow_id))",
		"CREATE TABLE cluster_metadata_info (metadata_partition " + i + " NOT NULL, cluster_name VARCHAR(255) NOT NULL, data " + blob + " NOT NULL, data_encoding VARCHAR(16) NOT NULL, version BIGINT NOT NULL, PRIMARY KEY (metadata_partition, cluster_name))",
	} {
		Exec(t, db, q)
	}
}

// execQ runs q, written with ? placeholders, in the engine's dialect.
func execQ(t testing.TB, db *sqlstore.DB, q string, args ...any) {
	t.Helper()
	if db.Engine() == sqlstore.Postgres {
		var b strings.Builder
		n := 0
		for _, c := range q {
			if c == '?' {
				n++
				b.WriteString("$" + strconv.Itoa(n))
				continue
			}
			b.WriteRune(c)
		}
		q = b.String()
	}
	Exec(t, db, q, args...)
}

// InsertShards inserts shards rows 1…n.
func InsertShards(t testing.TB, db *sqlstore.DB, n int) {
	t.Helper()
	for i := 1; i <= n; i++ {
		execQ(t, db, "INSERT INTO shards (shard_id, range_id, data, data_encoding) VALUES (?, 1, ?, 'Proto3')", i, []byte{})
	}
}

// InsertClusterMetadata inserts the cluster_metadata_info row of a cluster
// with n history shards.
func InsertClusterMetadata(t testing.TB, db *sqlstore.DB, cluster string, n int32) {
	t.Helper()
	data := wire.EncodeClusterMetadata(wire.ClusterMetadata{ClusterName: cluster, HistoryShardCount: n})
	execQ(t, db, "INSERT INTO cluster_metadata_info (metadata_partition, cluster_name, data, data_encoding, version) VALUES (0, ?, ?, 'Proto3', 1)", cluster, data)
}

// InsertNamespace inserts a namespaces row with the given retention.
func InsertNamespace(t testing.TB, db *sqlstore.DB, id wire.NamespaceID, name string, retention time.Duration, global bool) {
	t.Helper()
	g := any(0)
	if global {
		g = 1
	}
	if db.Engine() == sqlstore.Postgres {
		g = global
	}
	execQ(t, db, "INSERT INTO namespaces (partition_id, id, name, notification_version, data, data_encoding, is_global) VALUES (0, ?, ?, 1, ?, 'Proto3', ?)",
		id[:], name, wire.EncodeNamespaceDetail(id, name, retention), g)
}

// InsertExecution inserts an executions row of a run in the given state,
// in the shard the formula gives for n shards, and returns its key.
func InsertExecution(t testing.TB, db *sqlstore.DB, n int32, ns wire.NamespaceID, workflowID string, run wire.NamespaceID, state wire.ExecutionState) store.ExecutionKey {
	t.Helper()
	k := store.ExecutionKey{ShardID: wire.HistoryShard(ns.String(), workflowID, n), NamespaceID: ns, WorkflowID: workflowID, RunID: run}
	InsertExecutionRow(t, db, k, wire.EncodeExecutionState(run.String(), state))
	return k
}

// InsertExecutionRow inserts an executions row with the given state blob.
// Its data blob is a kilobyte of zeros: the rule must never read it.
func InsertExecutionRow(t testing.TB, db *sqlstore.DB, k store.ExecutionKey, state []byte) {
	t.Helper()
	execQ(t, db, "INSERT INTO executions (shard_id, namespace_id, workflow_id, run_id, next_event_id, last_write_version, data, data_encoding, state, state_encoding) VALUES (?, ?, ?, ?, 1, 0, ?, 'Proto3', ?, 'Proto3')",
		k.ShardID, k.NamespaceID[:], k.WorkflowID, k.RunID[:], make([]byte, 1024), state)
}

// InsertCurrent inserts the current_executions row of k's workflow,
// pointing at k's run.
func InsertCurrent(t testing.TB, db *sqlstore.DB, k store.ExecutionKey, state wire.ExecutionState) {
	t.Helper()
	execQ(t, db, "INSERT INTO current_executions (shard_id, namespace_id, workflow_id, run_id, create_request_id, state, status, last_write_version, data_encoding) VALUES (?, ?, ?, ?, '', ?, 1, 0, '')",
		k.ShardID, k.NamespaceID[:], k.WorkflowID, k.RunID[:], int32(state))
}
