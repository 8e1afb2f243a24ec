package wire

import (
	"math"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
)

// The encoders write what proto.Marshal writes for Temporal's generated
// messages holding the same values: fields in ascending number order, proto3
// zero values left out. Sizes are computed first so that nested messages can
// be written in place, behind their length, into one exactly sized buffer.
//
// Strings are written as they are; proto.Marshal would refuse invalid UTF-8,
// and so do the decoders here.

// EncodeTaskQueueInfo encodes the blob of a task_queues or task_queues_v2
// row. A zero ExpiryTime or LastUpdateTime is left out. Every subqueue gets
// its key field, even when it is empty (priority 0), as Temporal always sets
// it.
func EncodeTaskQueueInfo(info TaskQueueInfo) []byte {
	return appendTaskQueueInfo(make([]byte, 0, sizeTaskQueueInfo(&info)), &info)
}

// EncodeAllocatedTaskInfo encodes the blob of a tasks or tasks_v2 row. The
// data field is always written, as Temporal always sets it; a zero
// CreateTime or ExpiryTime and an all-zero Priority are left out.
func EncodeAllocatedTaskInfo(t AllocatedTaskInfo) []byte {
	return appendAllocatedTaskInfo(make([]byte, 0, sizeAllocatedTaskInfo(&t)), &t)
}

// Field numbers here are all below 16, so every tag is one byte.
const tagSize = 1

func sizeVarintField(v uint64) int {
	if v == 0 {
		return 0
	}
	return tagSize + protowire.SizeVarint(v)
}

func sizeStringField(s string) int {
	if s == "" {
		return 0
	}
	return tagSize + protowire.SizeBytes(len(s))
}

// sizeMessageField is the size of a present message field of n bytes.
func sizeMessageField(n int) int {
	return tagSize + protowire.SizeBytes(n)
}

func appendVarintField(b []byte, num protowire.Number, v uint64) []byte {
	if v == 0 {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.VarintType)
	return protowire.AppendVarint(b, v)
}

func appendStringField(b []byte, num protowire.Number, s string) []byte {
	if s == "" {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendString(b, s)
}

// appendMessageHeader starts a message field of n bytes.
func appendMessageHeader(b []byte, num protowire.Number, n int) []byte {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendVarint(b, uint64(n))
}

// int32 and enum values are sign-extended to 64 bits on the wire.
func i32(v int32) uint64 { return uint64(int64(v)) }

func sizeTimestamp(t time.Time) int {
	return sizeVarintField(uint64(t.Unix())) + sizeVarintField(i32(int32(t.Nanosecond())))
}

func sizeTimestampField(t time.Time) int {
	if t.IsZero() {
		return 0
	}
	return sizeMessageField(sizeTimestamp(t))
}

func appendTimestampField(b []byte, num protowire.Number, t time.Time) []byte {
	if t.IsZero() {
		return b
	}
	b = appendMessageHeader(b, num, sizeTimestamp(t))
	b = appendVarintField(b, 1, uint64(t.Unix()))
	return appendVarintField(b, 2, i32(int32(t.Nanosecond())))
}

func sizeFairLevel(l FairLevel) int {
	return sizeVarintField(uint64(l.Pass)) + sizeVarintField(uint64(l.TaskID))
}

func appendFairLevelField(b []byte, num protowire.Number, l FairLevel) []byte {
	b = appendMessageHeader(b, num, sizeFairLevel(l))
	b = appendVarintField(b, 1, uint64(l.Pass))
	return appendVarintField(b, 2, uint64(l.TaskID))
}

// hasFairAckLevel reports whether field 4 is present; a level set without
// HasFairAckLevel still counts, rather than being dropped silently.
func (s *SubqueueInfo) hasFairAckLevel() bool {
	return s.HasFairAckLevel || s.FairAckLevel != FairLevel{}
}

func sizeSubqueueInfo(s *SubqueueInfo) int {
	n := sizeMessageField(sizeVarintField(i32(s.Priority)))
	n += sizeVarintField(uint64(s.AckLevel))
	n += sizeVarintField(uint64(s.ApproximateBacklogCount))
	if s.hasFairAckLevel() {
		n += sizeMessageField(sizeFairLevel(s.FairAckLevel))
	}
	if s.FairMaxReadLevel != (FairLevel{}) {
		n += sizeMessageField(sizeFairLevel(s.FairMaxReadLevel))
	}
	return n
}

func appendSubqueueInfo(b []byte, s *SubqueueInfo) []byte {
	b = appendMessageHeader(b, 1, sizeVarintField(i32(s.Priority)))
	b = appendVarintField(b, 1, i32(s.Priority))
	b = appendVarintField(b, 2, uint64(s.AckLevel))
	b = appendVarintField(b, 3, uint64(s.ApproximateBacklogCount))
	if s.hasFairAckLevel() {
		b = appendFairLevelField(b, 4, s.FairAckLevel)
	}
	if s.FairMaxReadLevel != (FairLevel{}) {
		b = appendFairLevelField(b, 5, s.FairMaxReadLevel)
	}
	return b
}

func boolVarint(v bool) uint64 {
	if v {
		return 1
	}
	return 0
}

func sizeTaskQueueInfo(m *TaskQueueInfo) int {
	n := sizeStringField(m.NamespaceID)
	n += sizeStringField(m.Name)
	n += sizeVarintField(uint64(m.TaskType))
	n += sizeVarintField(i32(int32(m.Kind)))
	n += sizeVarintField(uint64(m.AckLevel))
	n += sizeTimestampField(m.ExpiryTime)
	n += sizeTimestampField(m.LastUpdateTime)
	n += sizeVarintField(uint64(m.ApproximateBacklogCount))
	for i := range m.Subqueues {
		n += sizeMessageField(sizeSubqueueInfo(&m.Subqueues[i]))
	}
	n += sizeVarintField(boolVarint(m.OtherHasTasks))
	return n
}

func appendTaskQueueInfo(b []byte, m *TaskQueueInfo) []byte {
	b = appendStringField(b, 1, m.NamespaceID)
	b = appendStringField(b, 2, m.Name)
	b = appendVarintField(b, 3, uint64(m.TaskType))
	b = appendVarintField(b, 4, i32(int32(m.Kind)))
	b = appendVarintField(b, 5, uint64(m.AckLevel))
	b = appendTimestampField(b, 6, m.ExpiryTime)
	b = appendTimestampField(b, 7, m.LastUpdateTime)
	b = appendVarintField(b, 8, uint64(m.ApproximateBacklogCount))
	for i := range m.Subqueues {
		s := &m.Subqueues[i]
		b = appendMessageHeader(b, 9, sizeSubqueueInfo(s))
		b = appendSubqueueInfo(b, s)
	}
	return appendVarintField(b, 10, boolVarint(m.OtherHasTasks))
}

func sizePriority(p *Priority) int {
	n := sizeVarintField(i32(p.PriorityKey))
	n += sizeStringField(p.FairnessKey)
	if math.Float32bits(p.FairnessWeight) != 0 {
		n += tagSize + 4
	}
	return n
}

func appendPriority(b []byte, p *Priority) []byte {
	b = appendVarintField(b, 1, i32(p.PriorityKey))
	b = appendStringField(b, 2, p.FairnessKey)
	if w := math.Float32bits(p.FairnessWeight); w != 0 {
		b = protowire.AppendTag(b, 3, protowire.Fixed32Type)
		b = protowire.AppendFixed32(b, w)
	}
	return b
}

func sizeTaskInfo(t *TaskInfo) int {
	n := sizeStringField(t.NamespaceID)
	n += sizeStringField(t.WorkflowID)
	n += sizeStringField(t.RunID)
	n += sizeVarintField(uint64(t.ScheduledEventID))
	n += sizeTimestampField(t.CreateTime)
	n += sizeTimestampField(t.ExpiryTime)
	n += sizeVarintField(i32(t.Stamp))
	if !t.Priority.isZero() {
		n += sizeMessageField(sizePriority(&t.Priority))
	}
	return n
}

func appendTaskInfo(b []byte, t *TaskInfo) []byte {
	b = appendStringField(b, 1, t.NamespaceID)
	b = appendStringField(b, 2, t.WorkflowID)
	b = appendStringField(b, 3, t.RunID)
	b = appendVarintField(b, 4, uint64(t.ScheduledEventID))
	b = appendTimestampField(b, 5, t.CreateTime)
	b = appendTimestampField(b, 6, t.ExpiryTime)
	b = appendVarintField(b, 9, i32(t.Stamp))
	if !t.Priority.isZero() {
		b = appendMessageHeader(b, 10, sizePriority(&t.Priority))
		b = appendPriority(b, &t.Priority)
	}
	return b
}

func sizeAllocatedTaskInfo(m *AllocatedTaskInfo) int {
	n := sizeMessageField(sizeTaskInfo(&m.Data))
	n += sizeVarintField(uint64(m.TaskID))
	n += sizeVarintField(uint64(m.TaskPass))
	return n
}

func appendAllocatedTaskInfo(b []byte, m *AllocatedTaskInfo) []byte {
	b = appendMessageHeader(b, 1, sizeTaskInfo(&m.Data))
	b = appendTaskInfo(b, &m.Data)
	b = appendVarintField(b, 2, uint64(m.TaskID))
	return appendVarintField(b, 3, uint64(m.TaskPass))
}
