package store

import (
	"context"
	"errors"
)

// ExecutionReader reads Temporal's history tables, which the closed-workflow
// rule consults to tell a task of a closed run from a task of a live one:
// executions and current_executions (by primary key), shards,
// cluster_metadata_info and namespaces. It never reads an executions row's
// data blob (the large mutable state), only its state blob.
//
// Every read is one statement (or one per chunk), takes no lock and sees
// committed rows only. What it reports may change right after: a run
// closes, a run is deleted by retention. The rule acts only on what does
// not change back: a run that is COMPLETED stays completed (except where
// global namespaces' conflict resolution rebuilds it, see the rule), and a
// deleted run does not come back.
type ExecutionReader interface {
	// ClusterMetadata returns every cluster_metadata_info row.
	ClusterMetadata(ctx context.Context) ([]ClusterMetadataRow, error)

	// ShardIDs returns the shard_id of every shards row, ascending.
	ShardIDs(ctx context.Context) ([]int32, error)

	// MaxExecutionShard returns the largest shard_id of executions, and
	// false if the table is empty.
	MaxExecutionShard(ctx context.Context) (int32, bool, error)

	// NextWorkflow returns the key of the first executions row (its
	// first run) of the first workflow after after's, in key order
	// (shard_id, namespace_id, workflow_id), across shards; nil after:
	// the table's first. ok is false past the last. One statement, an
	// index seek: a workflow of many runs (a continue-as-new chain) costs
	// no more than one of one.
	NextWorkflow(ctx context.Context, after *ExecutionKey) (k ExecutionKey, ok bool, err error)

	// GetExecutions looks the keys up in executions and returns the rows
	// it found, in no particular order; a key it does not return has no
	// row. One statement per LookupChunk keys, on the primary key.
	GetExecutions(ctx context.Context, keys []ExecutionKey) ([]ExecutionRow, error)

	// GetCurrentExecutions looks the keys up in current_executions and
	// returns the rows it found; the key's RunID is ignored.
	GetCurrentExecutions(ctx context.Context, keys []ExecutionKey) ([]CurrentExecutionRow, error)

	// Namespaces returns every namespaces row.
	Namespaces(ctx context.Context) ([]NamespaceRow, error)
}

// LookupChunk is how many keys one statement of GetExecutions and
// GetCurrentExecutions carries: a caller that paces statements (the
// closed-workflow rule) asks for at most this many at a time.
const LookupChunk = 100

// ExecutionKey is the primary key of an executions row: current_executions
// has the same without the run id. NamespaceID and RunID are the 16 raw
// bytes of their UUIDs.
type ExecutionKey struct {
	ShardID     int32
	NamespaceID [16]byte
	WorkflowID  string
	RunID       [16]byte
}

// ExecutionRow is an executions row's key and state blob.
type ExecutionRow struct {
	ExecutionKey
	State         []byte
	StateEncoding string
}

// CurrentExecutionRow is a current_executions row: the run it points at.
type CurrentExecutionRow struct {
	ExecutionKey // RunID: the current run
	State        int32
}

// ClusterMetadataRow is a cluster_metadata_info row.
type ClusterMetadataRow struct {
	Partition   int32
	ClusterName string
	Data        []byte
	Encoding    string
}

// NamespaceRow is a namespaces row.
type NamespaceRow struct {
	ID       [16]byte
	Name     string
	Data     []byte
	Encoding string
	IsGlobal bool
}

// ErrNoPrivilege reports a read refused for want of a privilege (SELECT on
// a history table the closed-workflow rule reads); the error names the
// table.
var ErrNoPrivilege = errors.New("permission denied")
