package wire

import (
	"time"

	"google.golang.org/protobuf/encoding/protowire"
)

// The encoders of the history blobs the closed-workflow rule reads, for
// tests, the seeder and the lab: what proto.Marshal writes for messages
// holding only these fields.

// EncodeExecutionState encodes an executions row's state blob holding a
// run id and a state.
func EncodeExecutionState(runID string, state ExecutionState) []byte {
	var b []byte
	if runID != "" {
		b = protowire.AppendTag(b, 2, protowire.BytesType)
		b = protowire.AppendString(b, runID)
	}
	return appendVarintField(b, 3, uint64(int64(state)))
}

// EncodeClusterMetadata encodes a cluster_metadata_info row's data.
func EncodeClusterMetadata(m ClusterMetadata) []byte {
	var b []byte
	if m.ClusterName != "" {
		b = protowire.AppendTag(b, 1, protowire.BytesType)
		b = protowire.AppendString(b, m.ClusterName)
	}
	return appendVarintField(b, 2, uint64(int64(m.HistoryShardCount)))
}

// EncodeNamespaceDetail encodes a namespaces row's data holding the
// namespace's id and name (info) and its retention (config).
func EncodeNamespaceDetail(id NamespaceID, name string, retention time.Duration) []byte {
	var info []byte
	info = protowire.AppendTag(info, 1, protowire.BytesType)
	info = protowire.AppendString(info, id.String())
	info = protowire.AppendTag(info, 3, protowire.BytesType)
	info = protowire.AppendString(info, name)
	var dur []byte
	dur = appendVarintField(dur, 1, uint64(int64(retention/time.Second)))
	dur = appendVarintField(dur, 2, uint64(int64(retention%time.Second)))
	var cfg []byte
	cfg = protowire.AppendTag(cfg, 1, protowire.BytesType)
	cfg = protowire.AppendBytes(cfg, dur)
	var b []byte
	b = protowire.AppendTag(b, 1, protowire.BytesType)
	b = protowire.AppendBytes(b, info)
	b = protowire.AppendTag(b, 2, protowire.BytesType)
	return protowire.AppendBytes(b, cfg)
}

// AppendComponentRef appends to a task blob a TaskInfo holding only a
// component_ref (field 11), which protobuf merges into the blob's data: a
// standalone activity's task.
func AppendComponentRef(blob, ref []byte) []byte {
	var info []byte
	info = protowire.AppendTag(info, 11, protowire.BytesType)
	info = protowire.AppendBytes(info, ref)
	blob = protowire.AppendTag(blob, 1, protowire.BytesType)
	return protowire.AppendBytes(blob, info)
}
