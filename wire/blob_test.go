package wire

import (
	"bytes"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
)

// Two blobs written out byte by byte: a task_queues row of the queue my-tq
// and a tasks row of one of its tasks. They are what proto.Marshal writes for
// these messages: TestRoundTrip holds the encoders to proto.Marshal, and
// TestExampleBlobs holds them to these bytes.
const (
	exampleTaskQueueInfoHex     = "0a2433323034396236382d373837322d343039342d386536332d64306464353938393661383312056d792d7471180120013a060880e2cfaa06"
	exampleAllocatedTaskInfoHex = "0a450a2433323034396236382d373837322d343039342d386536332d643064643539383936613833120477662d311a0572756e2d3120052a060880e2cfaa06320608bce2cfaa0610a18d06"
)

var (
	exampleTaskQueueInfo = TaskQueueInfo{
		NamespaceID:    exampleNS,
		Name:           "my-tq",
		TaskType:       TaskTypeWorkflow,
		Kind:           KindNormal,
		LastUpdateTime: time.Unix(1700000000, 0).UTC(),
	}
	exampleAllocatedTaskInfo = AllocatedTaskInfo{
		Data: TaskInfo{
			NamespaceID:      exampleNS,
			WorkflowID:       "wf-1",
			RunID:            "run-1",
			ScheduledEventID: 5,
			CreateTime:       time.Unix(1700000000, 0).UTC(),
			ExpiryTime:       time.Unix(1700000060, 0).UTC(),
		},
		TaskID: 100001,
	}
)

func TestExampleBlobs(t *testing.T) {
	qb := unhexString(t, exampleTaskQueueInfoHex)
	if got := EncodeTaskQueueInfo(exampleTaskQueueInfo); !bytes.Equal(got, qb) {
		t.Errorf("EncodeTaskQueueInfo(example) =\n %x\nwant\n %x", got, qb)
	}
	q, err := DecodeTaskQueueInfo(EncodingProto3, qb)
	if err != nil {
		t.Fatal(err)
	}
	if !equalQueue(q, exampleTaskQueueInfo) {
		t.Errorf("DecodeTaskQueueInfo(example) = %+v, want %+v", q, exampleTaskQueueInfo)
	}

	tb := unhexString(t, exampleAllocatedTaskInfoHex)
	if got := EncodeAllocatedTaskInfo(exampleAllocatedTaskInfo); !bytes.Equal(got, tb) {
		t.Errorf("EncodeAllocatedTaskInfo(example) =\n %x\nwant\n %x", got, tb)
	}
	task, err := DecodeAllocatedTaskInfo("ENCODING_TYPE_PROTO3", tb)
	if err != nil {
		t.Fatal(err)
	}
	if !equalTask(task, exampleAllocatedTaskInfo) {
		t.Errorf("DecodeAllocatedTaskInfo(example) = %+v, want %+v", task, exampleAllocatedTaskInfo)
	}
	times, err := DecodeTaskTimes(EncodingProto3, tb)
	if err != nil {
		t.Fatal(err)
	}
	if !times.CreateTime.Equal(time.Unix(1700000000, 0)) || !times.ExpiryTime.Equal(time.Unix(1700000060, 0)) {
		t.Errorf("DecodeTaskTimes(example) = %+v", times)
	}
}

// equalQueue compares as reflect.DeepEqual, but times by instant.
func equalQueue(a, b TaskQueueInfo) bool {
	if !a.ExpiryTime.Equal(b.ExpiryTime) || !a.LastUpdateTime.Equal(b.LastUpdateTime) {
		return false
	}
	a.ExpiryTime, b.ExpiryTime = time.Time{}, time.Time{}
	a.LastUpdateTime, b.LastUpdateTime = time.Time{}, time.Time{}
	if len(a.Subqueues) == 0 && len(b.Subqueues) == 0 {
		a.Subqueues, b.Subqueues = nil, nil
	}
	return reflect.DeepEqual(a, b)
}

// equalTask compares as reflect.DeepEqual, but times by instant and
// weights bit for bit, so that NaN equals itself.
func equalTask(a, b AllocatedTaskInfo) bool {
	if !a.Data.CreateTime.Equal(b.Data.CreateTime) || !a.Data.ExpiryTime.Equal(b.Data.ExpiryTime) ||
		!sameFloat(a.Data.Priority.FairnessWeight, b.Data.Priority.FairnessWeight) {
		return false
	}
	a.Data.CreateTime, b.Data.CreateTime = time.Time{}, time.Time{}
	a.Data.ExpiryTime, b.Data.ExpiryTime = time.Time{}, time.Time{}
	a.Data.Priority.FairnessWeight, b.Data.Priority.FairnessWeight = 0, 0
	return reflect.DeepEqual(a, b)
}

var roundTripQueues = []TaskQueueInfo{
	{},
	exampleTaskQueueInfo,
	{
		NamespaceID:             "01a22c88-cc61-7e51-8943-ea4d7b47625a",
		Name:                    "vm:392101b3-c352-4ac4-b283-09723c08ce5e",
		TaskType:                TaskTypeWorkflow,
		Kind:                    KindSticky,
		AckLevel:                9,
		ExpiryTime:              time.Date(2026, 12, 1, 13, 12, 32, 288523893, time.UTC),
		LastUpdateTime:          time.Date(2026, 11, 27, 13, 13, 26, 917288324, time.UTC),
		ApproximateBacklogCount: 3,
		Subqueues:               []SubqueueInfo{{Priority: 3, AckLevel: 9}},
		OtherHasTasks:           true,
	},
	{
		Name:     "/_sys/fq-act-fair-prio-60/1",
		TaskType: TaskTypeActivity,
		Kind:     KindNormal,
		Subqueues: []SubqueueInfo{
			{Priority: 3, FairAckLevel: FairLevel{2000, 2}, HasFairAckLevel: true, FairMaxReadLevel: FairLevel{2000, 2}},
			{Priority: 2, ApproximateBacklogCount: 11, FairMaxReadLevel: FairLevel{Pass: 6000, TaskID: 9}},
			{},                                   // empty key
			{Priority: 1, HasFairAckLevel: true}, // present, zero level
			{Priority: -7, AckLevel: -1, ApproximateBacklogCount: math.MinInt64, FairMaxReadLevel: FairLevel{TaskID: math.MaxInt64}},
		},
	},
	{
		// Extremes: a negative enum, the epoch (an empty Timestamp, which
		// is present), times before the epoch and past 2038.
		TaskType:       TaskTypeNexus,
		Kind:           Kind(-1),
		AckLevel:       math.MaxInt64,
		ExpiryTime:     time.Unix(0, 0).UTC(),
		LastUpdateTime: time.Unix(-1, 999999999).UTC(),
	},
	{
		ExpiryTime:     time.Unix(1<<40, 1).UTC(),
		LastUpdateTime: time.Date(1, 1, 1, 0, 0, 0, 1, time.UTC), // not IsZero
		Kind:           KindWorkerCommands,
	},
}

var roundTripTasks = []AllocatedTaskInfo{
	{},
	exampleAllocatedTaskInfo,
	{
		Data: TaskInfo{
			NamespaceID:      "01a22c95-56e8-791a-a2b4-bd3eb352eb92",
			WorkflowID:       "gen-fair-s0-p02-fq-act-exp-1000-k0-0000",
			RunID:            "01a22c95-64b8-7624-95e3-fb0d729f7d56",
			ScheduledEventID: 205,
			CreateTime:       time.Date(2026, 11, 30, 13, 12, 3, 449281147, time.UTC),
			ExpiryTime:       time.Date(2026, 11, 30, 13, 12, 8, 449281147, time.UTC),
			Stamp:            2,
			Priority:         Priority{PriorityKey: 1, FairnessKey: "big-tenant", FairnessWeight: 2.5},
		},
		TaskID:   17,
		TaskPass: 13000,
	},
	{Data: TaskInfo{Priority: Priority{FairnessWeight: float32(math.Copysign(0, -1))}}}, // -0 is written
	{Data: TaskInfo{Priority: Priority{FairnessWeight: float32(math.NaN())}, Stamp: -3}, TaskID: -1},
	{Data: TaskInfo{Priority: Priority{FairnessKey: "ключ"}, ExpiryTime: time.Unix(0, 0).UTC()}},
	{Data: TaskInfo{Priority: Priority{PriorityKey: math.MinInt32}, CreateTime: time.Unix(-62135596800, 1).UTC()}},
}

// TestRoundTrip checks that decoding undoes encoding, and that the encoding
// is byte for byte what protobuf-go's proto.Marshal writes.
func TestRoundTrip(t *testing.T) {
	queueMD, taskMD := oracle(t)
	for i, q := range roundTripQueues {
		b := EncodeTaskQueueInfo(q)
		got, err := DecodeTaskQueueInfo(EncodingProto3, b)
		if err != nil {
			t.Errorf("queue %d: decode: %v", i, err)
			continue
		}
		if !equalQueue(got, q) {
			t.Errorf("queue %d: round trip\n got %+v\nwant %+v", i, got, q)
		}
		canon, err := oracleCanonical(t, queueMD, b)
		if err != nil {
			t.Errorf("queue %d: proto.Unmarshal: %v", i, err)
		} else if !bytes.Equal(b, canon) {
			t.Errorf("queue %d: encoded\n %x\nproto.Marshal\n %x", i, b, canon)
		}
		if want, err := oracleTaskQueueInfo(t, b); err != nil || !equalQueue(got, want) {
			t.Errorf("queue %d: decoded %+v, protobuf-go decoded %+v, %v", i, got, want, err)
		}
	}
	for i, task := range roundTripTasks {
		b := EncodeAllocatedTaskInfo(task)
		got, err := DecodeAllocatedTaskInfo(EncodingProto3, b)
		if err != nil {
			t.Errorf("task %d: decode: %v", i, err)
			continue
		}
		if !equalTask(got, task) {
			t.Errorf("task %d: round trip\n got %+v\nwant %+v", i, got, task)
		}
		times, err := DecodeTaskTimes(EncodingProto3, b)
		if err != nil || !times.CreateTime.Equal(task.Data.CreateTime) || !times.ExpiryTime.Equal(task.Data.ExpiryTime) ||
			times.CreateTime.IsZero() != task.Data.CreateTime.IsZero() || times.ExpiryTime.IsZero() != task.Data.ExpiryTime.IsZero() {
			t.Errorf("task %d: DecodeTaskTimes = %+v, %v", i, times, err)
		}
		canon, err := oracleCanonical(t, taskMD, b)
		if err != nil {
			t.Errorf("task %d: proto.Unmarshal: %v", i, err)
		} else if !bytes.Equal(b, canon) {
			t.Errorf("task %d: encoded\n %x\nproto.Marshal\n %x", i, b, canon)
		}
		if want, err := oracleAllocatedTaskInfo(t, b); err != nil || !equalTask(got, want) {
			t.Errorf("task %d: decoded %+v, protobuf-go decoded %+v, %v", i, got, want, err)
		}
	}
}

// TestDecodeProtobufRules checks the rules of proto3 decoding that an
// encoder never exercises: unknown fields, repeated scalars, merged messages.
func TestDecodeProtobufRules(t *testing.T) {
	tag := func(b []byte, num protowire.Number, typ protowire.Type) []byte {
		return protowire.AppendTag(b, num, typ)
	}
	varint := func(b []byte, num protowire.Number, v uint64) []byte {
		return protowire.AppendVarint(tag(b, num, protowire.VarintType), v)
	}
	msg := func(b []byte, num protowire.Number, m []byte) []byte {
		return protowire.AppendBytes(tag(b, num, protowire.BytesType), m)
	}

	var b []byte
	b = varint(b, 99, 7)                                              // unknown varint
	b = msg(b, 11, []byte{0x0a, 0x02, 0x08, 0x01})                    // partition_scale_state: unknown here
	b = protowire.AppendFixed64(tag(b, 12, protowire.Fixed64Type), 1) // unknown fixed64
	b = protowire.AppendFixed32(tag(b, 13, protowire.Fixed32Type), 1) // unknown fixed32
	b = tag(b, 14, protowire.StartGroupType)                          // unknown group
	b = varint(b, 1, 5)
	b = tag(b, 14, protowire.EndGroupType)
	b = varint(b, 5, 1) // ack_level, overwritten below
	b = varint(b, 5, 2)
	b = msg(b, 7, varint(nil, 1, 100))                          // last_update_time.seconds
	b = msg(b, 7, varint(nil, 2, 5))                            // merged: .nanos
	b = msg(b, 9, msg(varint(nil, 6, 1), 1, varint(nil, 1, 4))) // subqueue with an unknown field first
	b = msg(b, 9, nil)                                          // empty subqueue
	got, err := DecodeTaskQueueInfo(EncodingProto3, b)
	if err != nil {
		t.Fatal(err)
	}
	want := TaskQueueInfo{AckLevel: 2, LastUpdateTime: time.Unix(100, 5), Subqueues: []SubqueueInfo{{Priority: 4}, {}}}
	if !equalQueue(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
	if o, err := oracleTaskQueueInfo(t, b); err != nil || !equalQueue(got, o) {
		t.Errorf("protobuf-go decoded %+v, %v", o, err)
	}

	// AllocatedTaskInfo.data twice: the second merges into the first.
	var tb []byte
	tb = msg(tb, 1, msg(msg(nil, 2, []byte("wf")), 6, varint(nil, 1, 50)))
	tb = varint(tb, 2, 9)
	tb = msg(tb, 1, msg(varint(nil, 4, 3), 6, varint(nil, 2, 7)))
	task, err := DecodeAllocatedTaskInfo(EncodingProto3, tb)
	if err != nil {
		t.Fatal(err)
	}
	wantTask := AllocatedTaskInfo{Data: TaskInfo{WorkflowID: "wf", ScheduledEventID: 3, ExpiryTime: time.Unix(50, 7)}, TaskID: 9}
	if !equalTask(task, wantTask) {
		t.Errorf("got %+v, want %+v", task, wantTask)
	}
	if o, err := oracleAllocatedTaskInfo(t, tb); err != nil || !equalTask(task, o) {
		t.Errorf("protobuf-go decoded %+v, %v", o, err)
	}
	if times, err := DecodeTaskTimes(EncodingProto3, tb); err != nil || !times.ExpiryTime.Equal(time.Unix(50, 7)) || !times.CreateTime.IsZero() {
		t.Errorf("DecodeTaskTimes = %+v, %v", times, err)
	}
}

func TestUnknownEncoding(t *testing.T) {
	b := unhexString(t, exampleAllocatedTaskInfoHex)
	for _, enc := range []string{"Json", "ENCODING_TYPE_JSON", "", "proto3", "PROTO3", "Proto3 ", "ENCODING_TYPE_UNSPECIFIED"} {
		for name, err := range map[string]error{
			"CheckEncoding":           CheckEncoding(enc),
			"DecodeTaskQueueInfo":     second(DecodeTaskQueueInfo(enc, b)),
			"DecodeAllocatedTaskInfo": second(DecodeAllocatedTaskInfo(enc, b)),
			"DecodeTaskTimes":         second(DecodeTaskTimes(enc, b)),
		} {
			if !errors.Is(err, ErrUnknownEncoding) {
				t.Errorf("%s(%q) = %v, want ErrUnknownEncoding", name, enc, err)
				continue
			}
			if !strings.Contains(err.Error(), `"`+enc+`"`) {
				t.Errorf("%s(%q): error %q does not name the encoding", name, enc, err)
			}
		}
	}
	for _, enc := range []string{"Proto3", "ENCODING_TYPE_PROTO3"} {
		if err := CheckEncoding(enc); err != nil {
			t.Errorf("CheckEncoding(%q) = %v", enc, err)
		}
	}
}

func second[T any](_ T, err error) error { return err }

func TestMalformed(t *testing.T) {
	queue := unhexString(t, exampleTaskQueueInfoHex)
	task := unhexString(t, exampleAllocatedTaskInfoHex)
	tests := []struct {
		what  string
		queue bool // TaskQueueInfo, else AllocatedTaskInfo
		b     []byte
		msg   string // in the error
	}{
		{"bad tag", true, []byte{0x80}, "TaskQueueInfo: bad field tag"},
		{"field 0", true, []byte{0x00, 0x01}, "bad field tag"},
		{"field number too large", true, protowire.AppendTag(nil, protowire.MaxValidNumber+1, protowire.VarintType), "out of range"},
		{"name as varint", true, []byte{0x10, 0x01}, "TaskQueueInfo.name (field 2): wire type varint, want bytes"},
		{"task_type as bytes", true, []byte{0x1a, 0x00}, "TaskQueueInfo.task_type (field 3): wire type bytes, want varint"},
		{"task_type 0x80", true, []byte{0x18, 0x80, 0x01}, "task_type (field 3): value 128"},
		{"task_type -1", true, protowire.AppendVarint([]byte{0x18}, math.MaxUint64), "value -1"},
		{"truncated varint", true, []byte{0x28, 0xff}, "TaskQueueInfo.ack_level (field 5)"},
		{"overlong varint", true, append([]byte{0x28}, bytes.Repeat([]byte{0xff}, 11)...), "ack_level"},
		{"truncated length", true, []byte{0x12, 0x05, 'a'}, "TaskQueueInfo.name"},
		{"name not UTF-8", true, []byte{0x12, 0x01, 0xff}, "name (field 2): invalid UTF-8"},
		{"last_update_time as fixed64", true, protowire.AppendFixed64([]byte{0x39}, 0), "last_update_time (field 7): wire type fixed64"},
		{"timestamp seconds as bytes", true, []byte{0x3a, 0x02, 0x0a, 0x00}, "TaskQueueInfo.last_update_time.seconds (field 1)"},
		{"subqueue key priority as fixed32", true, []byte{0x4a, 0x07, 0x0a, 0x05, 0x0d, 0, 0, 0, 0}, "TaskQueueInfo.subqueues[0].key.priority (field 1): wire type fixed32"},
		{"second subqueue bad", true, []byte{0x4a, 0x00, 0x4a, 0x02, 0x22, 0x01}, "TaskQueueInfo.subqueues[1].fair_ack_level"},
		{"fair level pass truncated", true, []byte{0x4a, 0x04, 0x2a, 0x02, 0x08, 0x80}, "subqueues[0].fair_max_read_level.task_pass"},
		{"other_has_tasks as bytes", true, []byte{0x52, 0x00}, "other_has_tasks (field 10)"},
		{"unknown field truncated", true, []byte{0x5a, 0x05, 0x00}, "TaskQueueInfo (field 11): skipping unknown field"},
		{"stray end group", true, []byte{0x5c}, "TaskQueueInfo (field 11)"},
		{"unterminated group", true, []byte{0x5b, 0x08, 0x01}, "TaskQueueInfo (field 11)"},
		{"queue cut short", true, queue[:len(queue)-1], "TaskQueueInfo.last_update_time"},
		{"data as varint", false, []byte{0x08, 0x01}, "AllocatedTaskInfo.data (field 1): wire type varint"},
		{"task_id as bytes", false, []byte{0x12, 0x00}, "AllocatedTaskInfo.task_id (field 2)"},
		{"task_pass as fixed64", false, protowire.AppendFixed64([]byte{0x19}, 0), "AllocatedTaskInfo.task_pass (field 3)"},
		{"expiry nanos as fixed32", false, []byte{0x0a, 0x07, 0x32, 0x05, 0x15, 0, 0, 0, 0}, "AllocatedTaskInfo.data.expiry_time.nanos (field 2)"},
		{"create_time as varint", false, []byte{0x0a, 0x02, 0x28, 0x01}, "AllocatedTaskInfo.data.create_time (field 5)"},
		{"workflow_id not UTF-8", false, []byte{0x0a, 0x03, 0x12, 0x01, 0xc3}, "data.workflow_id (field 2): invalid UTF-8"},
		{"stamp as bytes", false, []byte{0x0a, 0x02, 0x4a, 0x00}, "data.stamp (field 9)"},
		{"fairness_weight as varint", false, []byte{0x0a, 0x04, 0x52, 0x02, 0x18, 0x00}, "data.priority.fairness_weight (field 3): wire type varint, want fixed32"},
		{"fairness_weight truncated", false, []byte{0x0a, 0x04, 0x52, 0x02, 0x1d, 0x00}, "data.priority.fairness_weight"},
		{"fairness_key not UTF-8", false, []byte{0x0a, 0x05, 0x52, 0x03, 0x12, 0x01, 0x80}, "data.priority.fairness_key"},
		{"task cut short", false, task[:len(task)-1], "AllocatedTaskInfo.task_id"},
		{"data cut short", false, task[:20], "AllocatedTaskInfo.data"},
	}
	for _, tt := range tests {
		var err error
		if tt.queue {
			_, err = DecodeTaskQueueInfo(EncodingProto3, tt.b)
		} else {
			var tErr error
			_, err = DecodeAllocatedTaskInfo(EncodingProto3, tt.b)
			_, tErr = DecodeTaskTimes(EncodingProto3, tt.b)
			if !timesAgree(err, tErr) {
				t.Errorf("%s: DecodeAllocatedTaskInfo: %v; DecodeTaskTimes: %v", tt.what, err, tErr)
			}
		}
		if !errors.Is(err, ErrMalformed) {
			t.Errorf("%s (%x): err = %v, want ErrMalformed", tt.what, tt.b, err)
			continue
		}
		if !strings.Contains(err.Error(), tt.msg) {
			t.Errorf("%s (%x): error %q does not contain %q", tt.what, tt.b, err, tt.msg)
		}
	}
}

// TestTruncations cuts valid blobs at every length: each must fail cleanly
// or decode (a cut at a field boundary is a valid shorter message).
func TestTruncations(t *testing.T) {
	for _, q := range roundTripQueues {
		b := EncodeTaskQueueInfo(q)
		for n := range len(b) {
			if _, err := DecodeTaskQueueInfo(EncodingProto3, b[:n]); err != nil && !errors.Is(err, ErrMalformed) {
				t.Errorf("DecodeTaskQueueInfo(%x): %v, want ErrMalformed", b[:n], err)
			}
		}
	}
	for _, task := range roundTripTasks {
		b := EncodeAllocatedTaskInfo(task)
		for n := range len(b) {
			_, err := DecodeAllocatedTaskInfo(EncodingProto3, b[:n])
			if err != nil && !errors.Is(err, ErrMalformed) {
				t.Errorf("DecodeAllocatedTaskInfo(%x): %v, want ErrMalformed", b[:n], err)
			}
			if _, tErr := DecodeTaskTimes(EncodingProto3, b[:n]); !timesAgree(err, tErr) {
				t.Errorf("DecodeTaskTimes(%x): %v, DecodeAllocatedTaskInfo: %v", b[:n], tErr, err)
			}
		}
	}
	// The data field of the example task cut inside: malformed, not a panic.
	b := unhexString(t, exampleAllocatedTaskInfoHex)
	if _, err := DecodeTaskTimes(EncodingProto3, b[:len(b)-5]); !errors.Is(err, ErrMalformed) {
		t.Errorf("DecodeTaskTimes(cut) = %v, want ErrMalformed", err)
	}
}

// timesAgree reports whether DecodeTaskTimes agreed with
// DecodeAllocatedTaskInfo on a blob: both accept it, or both reject it with
// the same error. DecodeTaskTimes does not look at strings, so where
// DecodeAllocatedTaskInfo finds one that is not UTF-8, DecodeTaskTimes may
// accept the blob or fail further on.
func timesAgree(err, timesErr error) bool {
	badString := err != nil && strings.HasSuffix(err.Error(), ": invalid UTF-8")
	switch {
	case err == nil:
		return timesErr == nil
	case timesErr == nil:
		return badString
	}
	return err.Error() == timesErr.Error() || badString && errors.Is(timesErr, ErrMalformed)
}

func TestExpired(t *testing.T) {
	now := time.Date(2026, 11, 30, 13, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		expiry time.Time
		want   bool
	}{
		{time.Time{}, false},                       // no expiry
		{time.Unix(0, 0), false},                   // set but at the epoch
		{time.Unix(0, 999), false},                 // Unix() is still 0
		{time.Unix(-5, 0), false},                  // before the epoch
		{time.Unix(1, 0), true},                    // just after
		{now.Add(-time.Nanosecond), true},          // just before now
		{now, false},                               // not before now
		{now.Add(time.Hour), false},                // future
		{now.Add(-72 * time.Hour), true},           // long past
		{now.In(time.FixedZone("X", 3600)), false}, // zones do not matter
	} {
		if got := Expired(tt.expiry, now); got != tt.want {
			t.Errorf("Expired(%v, %v) = %v, want %v", tt.expiry, now, got, tt.want)
		}
	}
}

// FuzzDecode checks that no input panics the decoders, that DecodeTaskTimes
// agrees with DecodeAllocatedTaskInfo, that whatever decodes agrees with
// protobuf-go, and that encoding what was decoded is stable.
func FuzzDecode(f *testing.F) {
	f.Add(unhexString(f, exampleTaskQueueInfoHex))
	f.Add(unhexString(f, exampleAllocatedTaskInfoHex))
	for _, q := range roundTripQueues {
		f.Add(EncodeTaskQueueInfo(q))
	}
	for _, task := range roundTripTasks {
		f.Add(EncodeAllocatedTaskInfo(task))
	}
	f.Add([]byte{0x5b, 0x08, 0x01, 0x5c})
	f.Fuzz(func(t *testing.T, b []byte) {
		q, err := DecodeTaskQueueInfo(EncodingProto3, b)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("DecodeTaskQueueInfo: %v is not ErrMalformed", err)
			}
		} else {
			if o, oErr := oracleTaskQueueInfo(t, b); oErr != nil || !equalQueue(q, o) {
				t.Fatalf("DecodeTaskQueueInfo = %+v\nprotobuf-go: %+v, %v", q, o, oErr)
			}
			enc := EncodeTaskQueueInfo(q)
			q2, err := DecodeTaskQueueInfo(EncodingProto3, enc)
			if err != nil || !equalQueue(q, q2) {
				t.Fatalf("re-decoding %x: %+v, %v; want %+v", enc, q2, err, q)
			}
			if enc2 := EncodeTaskQueueInfo(q2); !bytes.Equal(enc, enc2) {
				t.Fatalf("encoding is not stable: %x then %x", enc, enc2)
			}
		}

		task, err := DecodeAllocatedTaskInfo(EncodingProto3, b)
		times, tErr := DecodeTaskTimes(EncodingProto3, b)
		if !timesAgree(err, tErr) {
			t.Fatalf("DecodeAllocatedTaskInfo: %v; DecodeTaskTimes: %v", err, tErr)
		}
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("DecodeAllocatedTaskInfo: %v is not ErrMalformed", err)
			}
			return
		}
		if times.CreateTime != task.Data.CreateTime || times.ExpiryTime != task.Data.ExpiryTime {
			t.Fatalf("DecodeTaskTimes = %+v, DecodeAllocatedTaskInfo data = %+v", times, task.Data)
		}
		if o, oErr := oracleAllocatedTaskInfo(t, b); oErr != nil || !equalTask(task, o) {
			t.Fatalf("DecodeAllocatedTaskInfo = %+v\nprotobuf-go: %+v, %v", task, o, oErr)
		}
		enc := EncodeAllocatedTaskInfo(task)
		task2, err := DecodeAllocatedTaskInfo(EncodingProto3, enc)
		if err != nil || !equalTask(task, task2) {
			t.Fatalf("re-decoding %x: %+v, %v; want %+v", enc, task2, err, task)
		}
		if enc2 := EncodeAllocatedTaskInfo(task2); !bytes.Equal(enc, enc2) {
			t.Fatalf("encoding is not stable: %x then %x", enc, enc2)
		}
	})
}

// TestDecodeTaskTimesAllocs checks that DecodeTaskTimes allocates nothing,
// on its fast path and on the general decoder it falls back to, and that it
// does not make its caller's buffer escape: the blob is copied into an array
// on the stack of each run, which would be a heap allocation if it escaped.
func TestDecodeTaskTimesAllocs(t *testing.T) {
	task := EncodeAllocatedTaskInfo(roundTripTasks[2])
	tag := func(b []byte, num protowire.Number, typ protowire.Type) []byte {
		return protowire.AppendTag(b, num, typ)
	}
	data := func(inner []byte) []byte {
		return append(protowire.AppendBytes(tag(nil, 1, protowire.BytesType), inner), task...)
	}
	tests := []struct {
		what string
		b    []byte
		fast bool // the fast path decodes it
	}{
		{"task", task, true},
		{"two-byte tag", protowire.AppendVarint(tag(task, 16, protowire.VarintType), 1), false},
		{"ten-byte varint", protowire.AppendVarint(tag(task, 2, protowire.VarintType), math.MaxUint64), false},
		{"group in data", data(tag(tag(nil, 11, protowire.StartGroupType), 11, protowire.EndGroupType)), false},
		{"two-byte tag in priority", data(protowire.AppendBytes(tag(nil, 10, protowire.BytesType), protowire.AppendVarint(tag(nil, 20, protowire.VarintType), 1))), false},
	}
	for _, tt := range tests {
		var times taskTimes
		if got := fastTaskTimes(tt.b, &times); got != tt.fast {
			t.Errorf("%s: fastTaskTimes = %v, want %v", tt.what, got, tt.fast)
		}
		want, err := DecodeAllocatedTaskInfo(EncodingProto3, tt.b)
		if err != nil {
			t.Fatalf("%s: %v", tt.what, err)
		}
		var got TaskTimes
		allocs := testing.AllocsPerRun(100, func() {
			var buf [256]byte
			n := copy(buf[:], tt.b)
			got, err = DecodeTaskTimes(EncodingProto3, buf[:n])
		})
		if err != nil || got.CreateTime != want.Data.CreateTime || got.ExpiryTime != want.Data.ExpiryTime {
			t.Errorf("%s: DecodeTaskTimes = %+v, %v; want the times of %+v", tt.what, got, err, want.Data)
		}
		if allocs != 0 {
			t.Errorf("%s: DecodeTaskTimes allocates %v times a call, want 0", tt.what, allocs)
		}
	}
}
