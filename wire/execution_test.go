package wire

import (
	"errors"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
)

func TestDecodeExecutionState(t *testing.T) {
	for _, s := range []ExecutionState{StateCreated, StateRunning, StateCompleted, StateZombie, StateCorrupted} {
		got, err := DecodeExecutionState(EncodingProto3, EncodeExecutionState("run", s))
		if err != nil || got.State != s || got.RunID != "run" || got.Unknown {
			t.Errorf("%v: got %+v, %v", s, got, err)
		}
	}
	// A field of a later Temporal is reported, not skipped silently.
	blob := protowire.AppendTag(EncodeExecutionState("run", StateCompleted), 42, protowire.VarintType)
	blob = protowire.AppendVarint(blob, 1)
	if got, err := DecodeExecutionState(EncodingProto3, blob); err != nil || !got.Unknown || got.State != StateCompleted {
		t.Errorf("unknown field: got %+v, %v", got, err)
	}
	// Known fields Temporal writes are no unknown fields.
	blob = protowire.AppendTag(EncodeExecutionState("run", StateCompleted), 4, protowire.VarintType)
	blob = protowire.AppendVarint(blob, 2)
	if got, err := DecodeExecutionState(EncodingProto3, blob); err != nil || got.Unknown {
		t.Errorf("status field: got %+v, %v", got, err)
	}
	for name, b := range map[string][]byte{
		"truncated":  EncodeExecutionState("run", StateCompleted)[:3],
		"wrong type": protowire.AppendString(protowire.AppendTag(nil, 3, protowire.BytesType), "x"),
	} {
		if _, err := DecodeExecutionState(EncodingProto3, b); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: err = %v, want ErrMalformed", name, err)
		}
	}
	if _, err := DecodeExecutionState("Json", nil); !errors.Is(err, ErrUnknownEncoding) {
		t.Errorf("Json: %v", err)
	}
}

func TestDecodeTaskRun(t *testing.T) {
	create := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	info := AllocatedTaskInfo{TaskID: 7, Data: TaskInfo{NamespaceID: "ns", WorkflowID: "wf", RunID: "run", CreateTime: create, ScheduledEventID: 5, Stamp: 1, Priority: Priority{PriorityKey: 2}}}
	blob := EncodeAllocatedTaskInfo(info)
	got, err := DecodeTaskRun(EncodingProto3, blob)
	if err != nil || got != (TaskRun{NamespaceID: "ns", WorkflowID: "wf", RunID: "run", CreateTime: create}) {
		t.Fatalf("got %+v, %v", got, err)
	}
	if got, err := DecodeTaskRun(EncodingProto3, AppendComponentRef(blob, []byte("ref"))); err != nil || !got.ComponentRef || got.RunID != "run" {
		t.Errorf("component_ref: got %+v, %v", got, err)
	}
	if got, err := DecodeTaskRun(EncodingProto3, AppendComponentRef(blob, nil)); err != nil || !got.ComponentRef {
		t.Errorf("empty component_ref: got %+v, %v", got, err)
	}
	unknown := protowire.AppendVarint(protowire.AppendTag(blob, 9, protowire.VarintType), 1)
	if got, err := DecodeTaskRun(EncodingProto3, unknown); err != nil || !got.Unknown {
		t.Errorf("unknown AllocatedTaskInfo field: got %+v, %v", got, err)
	}
	inner := protowire.AppendVarint(protowire.AppendTag(nil, 12, protowire.VarintType), 1)
	unknown = protowire.AppendBytes(protowire.AppendTag(blob, 1, protowire.BytesType), inner)
	if got, err := DecodeTaskRun(EncodingProto3, unknown); err != nil || !got.Unknown {
		t.Errorf("unknown TaskInfo field: got %+v, %v", got, err)
	}
	if _, err := DecodeTaskRun(EncodingProto3, blob[:len(blob)-1]); !errors.Is(err, ErrMalformed) {
		t.Errorf("truncated: %v", err)
	}
}

func TestDecodeClusterMetadataAndRetention(t *testing.T) {
	m, err := DecodeClusterMetadata(EncodingProto3, EncodeClusterMetadata(ClusterMetadata{ClusterName: "active", HistoryShardCount: 16}))
	if err != nil || m.ClusterName != "active" || m.HistoryShardCount != 16 {
		t.Fatalf("got %+v, %v", m, err)
	}
	id, _ := ParseNamespaceID("32049b68-7872-4094-8e63-d0dd59896a83")
	r, err := DecodeNamespaceRetention(EncodingProto3, EncodeNamespaceDetail(id, "default", 24*time.Hour+time.Nanosecond))
	if err != nil || !r.HasRetention || r.Retention != 24*time.Hour+time.Nanosecond {
		t.Fatalf("got %+v, %v", r, err)
	}
	// No config: the retention is unknown, not zero.
	info := protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), []byte{0x1a, 1, 'x'})
	if r, err := DecodeNamespaceRetention(EncodingProto3, info); err != nil || r.HasRetention {
		t.Errorf("no config: got %+v, %v", r, err)
	}
}

// The history shard of a workflow, against values printed by Temporal
// v1.32.1's own common.WorkflowIDToHistoryShard.
func TestHistoryShard(t *testing.T) {
	for _, c := range historyShardVectors {
		if got := HistoryShard(c.ns, c.wf, c.n); got != c.want {
			t.Errorf("HistoryShard(%q, %q, %d) = %d, want %d", c.ns, c.wf, c.n, got, c.want)
		}
	}
}

// Printed by a program calling go.temporal.io/server@v1.32.1/common.WorkflowIDToHistoryShard.
var historyShardVectors = []struct {
	ns, wf  string
	n, want int32
}{
	{"11111111-2222-4333-8444-555555555555", "wf", 4, 3},
	{"11111111-2222-4333-8444-555555555555", "wf", 16, 15},
	{"11111111-2222-4333-8444-555555555555", "wf", 512, 447},
	{"aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee", "wf", 4, 4},
	{"aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee", "wf", 16, 4},
	{"aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee", "wf", 512, 324},
	{"32049b68-7872-4094-8e63-d0dd59896a83", "order-12345", 4, 1},
	{"32049b68-7872-4094-8e63-d0dd59896a83", "order-12345", 16, 5},
	{"32049b68-7872-4094-8e63-d0dd59896a83", "order-12345", 512, 149},
}
