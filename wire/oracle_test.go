package wire

import (
	"math"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"
	_ "google.golang.org/protobuf/types/known/timestamppb" // registers google/protobuf/timestamp.proto
)

// The oracle is protobuf-go itself, driven by a descriptor of the subset of
// Temporal's persistence messages this package models (enums as int32,
// which is the same on the wire). It checks the hand-written codec against
// the real proto.Marshal and proto.Unmarshal without importing Temporal.

var oracleOnce struct {
	sync.Once
	taskQueueInfo, allocatedTaskInfo protoreflect.MessageDescriptor
}

func oracle(t testing.TB) (taskQueueInfo, allocatedTaskInfo protoreflect.MessageDescriptor) {
	t.Helper()
	oracleOnce.Do(func() {
		fd, err := protodesc.NewFile(oracleFile(), protoregistry.GlobalFiles)
		if err != nil {
			panic(err)
		}
		msgs := fd.Messages()
		oracleOnce.taskQueueInfo = msgs.ByName("TaskQueueInfo")
		oracleOnce.allocatedTaskInfo = msgs.ByName("AllocatedTaskInfo")
	})
	return oracleOnce.taskQueueInfo, oracleOnce.allocatedTaskInfo
}

func oracleFile() *descriptorpb.FileDescriptorProto {
	type f = descriptorpb.FieldDescriptorProto
	const (
		i32  = descriptorpb.FieldDescriptorProto_TYPE_INT32
		i64  = descriptorpb.FieldDescriptorProto_TYPE_INT64
		str  = descriptorpb.FieldDescriptorProto_TYPE_STRING
		bol  = descriptorpb.FieldDescriptorProto_TYPE_BOOL
		flt  = descriptorpb.FieldDescriptorProto_TYPE_FLOAT
		msg  = descriptorpb.FieldDescriptorProto_TYPE_MESSAGE
		opt  = descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL
		rep  = descriptorpb.FieldDescriptorProto_LABEL_REPEATED
		ts   = ".google.protobuf.Timestamp"
		pkg  = ".oracle."
		none = ""
	)
	field := func(name string, num int32, typ descriptorpb.FieldDescriptorProto_Type, typeName string, label descriptorpb.FieldDescriptorProto_Label) *f {
		fd := &f{Name: proto.String(name), Number: proto.Int32(num), Type: typ.Enum(), Label: label.Enum(), JsonName: proto.String(name)}
		if typeName != "" {
			fd.TypeName = proto.String(typeName)
		}
		return fd
	}
	message := func(name string, fields ...*f) *descriptorpb.DescriptorProto {
		return &descriptorpb.DescriptorProto{Name: proto.String(name), Field: fields}
	}
	return &descriptorpb.FileDescriptorProto{
		Name:       proto.String("oracle/persistence.proto"),
		Package:    proto.String("oracle"),
		Syntax:     proto.String("proto3"),
		Dependency: []string{"google/protobuf/timestamp.proto"},
		MessageType: []*descriptorpb.DescriptorProto{
			message("FairLevel",
				field("task_pass", 1, i64, none, opt),
				field("task_id", 2, i64, none, opt)),
			message("SubqueueKey",
				field("priority", 1, i32, none, opt)),
			message("SubqueueInfo",
				field("key", 1, msg, pkg+"SubqueueKey", opt),
				field("ack_level", 2, i64, none, opt),
				field("approximate_backlog_count", 3, i64, none, opt),
				field("fair_ack_level", 4, msg, pkg+"FairLevel", opt),
				field("fair_max_read_level", 5, msg, pkg+"FairLevel", opt)),
			message("TaskQueueInfo",
				field("namespace_id", 1, str, none, opt),
				field("name", 2, str, none, opt),
				field("task_type", 3, i32, none, opt),
				field("kind", 4, i32, none, opt),
				field("ack_level", 5, i64, none, opt),
				field("expiry_time", 6, msg, ts, opt),
				field("last_update_time", 7, msg, ts, opt),
				field("approximate_backlog_count", 8, i64, none, opt),
				field("subqueues", 9, msg, pkg+"SubqueueInfo", rep),
				field("other_has_tasks", 10, bol, none, opt)),
			message("Priority",
				field("priority_key", 1, i32, none, opt),
				field("fairness_key", 2, str, none, opt),
				field("fairness_weight", 3, flt, none, opt)),
			message("TaskInfo",
				field("namespace_id", 1, str, none, opt),
				field("workflow_id", 2, str, none, opt),
				field("run_id", 3, str, none, opt),
				field("scheduled_event_id", 4, i64, none, opt),
				field("create_time", 5, msg, ts, opt),
				field("expiry_time", 6, msg, ts, opt),
				field("stamp", 9, i32, none, opt),
				field("priority", 10, msg, pkg+"Priority", opt)),
			message("AllocatedTaskInfo",
				field("data", 1, msg, pkg+"TaskInfo", opt),
				field("task_id", 2, i64, none, opt),
				field("task_pass", 3, i64, none, opt)),
		},
	}
}

// oracleCanonical unmarshals b with protobuf-go, drops the fields this
// package does not model, and marshals the rest again: the bytes the
// encoders must produce for the decoded value.
func oracleCanonical(t testing.TB, md protoreflect.MessageDescriptor, b []byte) ([]byte, error) {
	m := dynamicpb.NewMessage(md)
	if err := (proto.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(b, m); err != nil {
		return nil, err
	}
	// Deterministic sorts the fields of a dynamic message by number, as
	// generated code always does.
	return proto.MarshalOptions{Deterministic: true}.Marshal(m)
}

// oracleTaskQueueInfo decodes b with protobuf-go into the package's types.
func oracleTaskQueueInfo(t testing.TB, b []byte) (TaskQueueInfo, error) {
	md, _ := oracle(t)
	m := dynamicpb.NewMessage(md)
	if err := proto.Unmarshal(b, m); err != nil {
		return TaskQueueInfo{}, err
	}
	get := func(m protoreflect.Message, name string) protoreflect.Value {
		return m.Get(m.Descriptor().Fields().ByName(protoreflect.Name(name)))
	}
	info := TaskQueueInfo{
		NamespaceID:             get(m, "namespace_id").String(),
		Name:                    get(m, "name").String(),
		TaskType:                TaskType(get(m, "task_type").Int()),
		Kind:                    Kind(get(m, "kind").Int()),
		AckLevel:                get(m, "ack_level").Int(),
		ExpiryTime:              oracleTime(m, "expiry_time"),
		LastUpdateTime:          oracleTime(m, "last_update_time"),
		ApproximateBacklogCount: get(m, "approximate_backlog_count").Int(),
		OtherHasTasks:           get(m, "other_has_tasks").Bool(),
	}
	list := get(m, "subqueues").List()
	for i := 0; i < list.Len(); i++ {
		s := list.Get(i).Message()
		fair := func(name string) FairLevel {
			l := get(s, name).Message()
			return FairLevel{Pass: get(l, "task_pass").Int(), TaskID: get(l, "task_id").Int()}
		}
		info.Subqueues = append(info.Subqueues, SubqueueInfo{
			Priority:                int32(get(get(s, "key").Message(), "priority").Int()),
			AckLevel:                get(s, "ack_level").Int(),
			ApproximateBacklogCount: get(s, "approximate_backlog_count").Int(),
			FairAckLevel:            fair("fair_ack_level"),
			HasFairAckLevel:         s.Has(s.Descriptor().Fields().ByName("fair_ack_level")),
			FairMaxReadLevel:        fair("fair_max_read_level"),
		})
	}
	return info, nil
}

// oracleAllocatedTaskInfo decodes b with protobuf-go into the package's
// types.
func oracleAllocatedTaskInfo(t testing.TB, b []byte) (AllocatedTaskInfo, error) {
	_, md := oracle(t)
	m := dynamicpb.NewMessage(md)
	if err := proto.Unmarshal(b, m); err != nil {
		return AllocatedTaskInfo{}, err
	}
	get := func(m protoreflect.Message, name string) protoreflect.Value {
		return m.Get(m.Descriptor().Fields().ByName(protoreflect.Name(name)))
	}
	d := get(m, "data").Message()
	p := get(d, "priority").Message()
	return AllocatedTaskInfo{
		Data: TaskInfo{
			NamespaceID:      get(d, "namespace_id").String(),
			WorkflowID:       get(d, "workflow_id").String(),
			RunID:            get(d, "run_id").String(),
			ScheduledEventID: get(d, "scheduled_event_id").Int(),
			CreateTime:       oracleTime(d, "create_time"),
			ExpiryTime:       oracleTime(d, "expiry_time"),
			Stamp:            int32(get(d, "stamp").Int()),
			Priority: Priority{
				PriorityKey:    int32(get(p, "priority_key").Int()),
				FairnessKey:    get(p, "fairness_key").String(),
				FairnessWeight: float32(get(p, "fairness_weight").Float()),
			},
		},
		TaskID:   get(m, "task_id").Int(),
		TaskPass: get(m, "task_pass").Int(),
	}, nil
}

func oracleTime(m protoreflect.Message, name string) time.Time {
	fd := m.Descriptor().Fields().ByName(protoreflect.Name(name))
	if !m.Has(fd) {
		return time.Time{}
	}
	ts := m.Get(fd).Message()
	sec := ts.Get(ts.Descriptor().Fields().ByName("seconds")).Int()
	nanos := ts.Get(ts.Descriptor().Fields().ByName("nanos")).Int()
	return time.Unix(sec, nanos).UTC()
}

// sameFloat compares floats bit for bit, except that any two NaNs are the
// same: protoreflect holds a float as a float64, which quiets a signaling
// NaN on the way.
func sameFloat(a, b float32) bool {
	return math.Float32bits(a) == math.Float32bits(b) || a != a && b != b
}
