// The public decoders, and the general decoder of each message, which
// handles every valid blob and reports every invalid one. DecodeTaskTimes
// tries its fast path, in decode_fast.go, first. The general decoders walk
// a blob with the reader of reader.go.

package wire

import (
	"strconv"
	"time"
)

// DecodeTaskQueueInfo decodes the blob of a task_queues or task_queues_v2
// row.
//
// Like proto.Unmarshal, it skips fields it does not know, lets the last
// occurrence of a scalar field win, merges repeated occurrences of a message
// field and rejects strings that are not UTF-8. Unlike proto.Unmarshal, it
// rejects a known field with the wrong wire type instead of keeping it as an
// unknown field: such a blob was not written by Temporal, and acting on a
// guess about it could delete the wrong rows. It also rejects a task_type
// that cannot be the type byte of a task_queue_id.
func DecodeTaskQueueInfo(encoding string, data []byte) (TaskQueueInfo, error) {
	var m TaskQueueInfo
	if err := CheckEncoding(encoding); err != nil {
		return m, err
	}
	var err *malformedError
	r := reader{b: data, err: &err}
	decodeTaskQueueInfo(&r, &m)
	if err != nil {
		return TaskQueueInfo{}, err.within("TaskQueueInfo")
	}
	return m, nil
}

// DecodeAllocatedTaskInfo decodes the blob of a tasks or tasks_v2 row, with
// the same rules as DecodeTaskQueueInfo.
func DecodeAllocatedTaskInfo(encoding string, data []byte) (AllocatedTaskInfo, error) {
	var m AllocatedTaskInfo
	if err := CheckEncoding(encoding); err != nil {
		return m, err
	}
	var tt taskTimes
	var err *malformedError
	r := reader{b: data, err: &err}
	decodeAllocatedTaskInfo(&r, &m, &tt)
	if err != nil {
		return AllocatedTaskInfo{}, err.within("AllocatedTaskInfo")
	}
	m.Data.CreateTime = tt.create.time()
	m.Data.ExpiryTime = tt.expiry.time()
	return m, nil
}

// DecodeTaskTimes decodes only the create and expiry times of a task blob,
// without allocating: it is what the scavenger runs for every task it
// examines.
//
// It checks the whole blob as DecodeAllocatedTaskInfo does, and fails with
// the same error, except that it does not check that the strings it skips
// are UTF-8: that check would cost more than the rest of the decoding, and
// such a string does not change the times.
func DecodeTaskTimes(encoding string, data []byte) (TaskTimes, error) {
	if err := CheckEncoding(encoding); err != nil {
		return TaskTimes{}, err
	}
	var tt taskTimes
	if !fastTaskTimes(data, &tt) {
		// Something the fast path does not handle, most likely an error:
		// start over with the decoder that knows every case.
		var err *malformedError
		if tt, err = decodeTaskTimes(data); err != nil {
			return TaskTimes{}, err.within("AllocatedTaskInfo")
		}
	}
	return TaskTimes{CreateTime: tt.create.time(), ExpiryTime: tt.expiry.time()}, nil
}

// decodeTaskTimes is DecodeTaskTimes with the general decoder. It is a
// function of its own so that the scratch message, on the stack, costs the
// fast path nothing.
func decodeTaskTimes(data []byte) (taskTimes, *malformedError) {
	var m AllocatedTaskInfo // the fields other than the times, dropped
	var tt taskTimes
	var err *malformedError
	r := reader{b: data, err: &err, lax: true}
	decodeAllocatedTaskInfo(&r, &m, &tt)
	return tt, err
}

// timestamp is a google.protobuf.Timestamp as decoded so far; set records
// that the field was present, however empty.
type timestamp struct {
	sec   int64
	nanos int32
	set   bool
}

// time converts as timestamppb.AsTime does, and maps an absent timestamp
// to the zero time.Time.
func (ts timestamp) time() time.Time {
	if !ts.set {
		return time.Time{}
	}
	return time.Unix(ts.sec, int64(ts.nanos)).UTC()
}

// The decoders below read a message from r into their destination, merging
// it with what is there, as protobuf does when a message field occurs more
// than once; on an error they stop and leave it to r. Each case names its
// field as the .proto file does, for the error path.

func decodeTimestamp(r *reader, ts *timestamp) {
	ts.set = true
	for r.next() {
		switch r.num {
		case 1:
			r.int64("seconds", &ts.sec)
		case 2:
			r.int32("nanos", &ts.nanos)
		default:
			r.skip()
		}
	}
}

func decodeFairLevel(r *reader, l *FairLevel) {
	for r.next() {
		switch r.num {
		case 1:
			r.int64("task_pass", &l.Pass)
		case 2:
			r.int64("task_id", &l.TaskID)
		default:
			r.skip()
		}
	}
}

func decodeSubqueueKey(r *reader, s *SubqueueInfo) {
	for r.next() {
		switch r.num {
		case 1:
			r.int32("priority", &s.Priority)
		default:
			r.skip()
		}
	}
}

func decodeSubqueueInfo(r *reader, s *SubqueueInfo) {
	for r.next() {
		switch r.num {
		case 1:
			r.message("key", func() { decodeSubqueueKey(r, s) })
		case 2:
			r.int64("ack_level", &s.AckLevel)
		case 3:
			r.int64("approximate_backlog_count", &s.ApproximateBacklogCount)
		case 4:
			s.HasFairAckLevel = true // present, however empty
			r.message("fair_ack_level", func() { decodeFairLevel(r, &s.FairAckLevel) })
		case 5:
			r.message("fair_max_read_level", func() { decodeFairLevel(r, &s.FairMaxReadLevel) })
		default:
			r.skip()
		}
	}
}

func decodeTaskQueueInfo(r *reader, m *TaskQueueInfo) {
	var expiry, update timestamp
	for r.next() {
		switch r.num {
		case 1:
			r.string("namespace_id", &m.NamespaceID)
		case 2:
			r.string("name", &m.Name)
		case 3:
			r.taskType("task_type", &m.TaskType)
		case 4:
			r.int32("kind", (*int32)(&m.Kind))
		case 5:
			r.int64("ack_level", &m.AckLevel)
		case 6:
			r.message("expiry_time", func() { decodeTimestamp(r, &expiry) })
		case 7:
			r.message("last_update_time", func() { decodeTimestamp(r, &update) })
		case 8:
			r.int64("approximate_backlog_count", &m.ApproximateBacklogCount)
		case 9:
			r.element("subqueues", len(m.Subqueues), func() {
				m.Subqueues = append(m.Subqueues, SubqueueInfo{})
				decodeSubqueueInfo(r, &m.Subqueues[len(m.Subqueues)-1])
			})
		case 10:
			r.bool("other_has_tasks", &m.OtherHasTasks)
		default:
			r.skip()
		}
	}
	m.ExpiryTime = expiry.time()
	m.LastUpdateTime = update.time()
}

// taskType reads a TaskType field, and rejects a value that cannot be the
// type byte of a task_queue_id.
func (r *reader) taskType(name string, dst *TaskType) {
	num := r.num
	v, ok := r.varint(name)
	if !ok {
		return
	}
	// Enums are int32 on the wire; a negative one is sign-extended.
	if t := int32(v); t < 0 || t >= subqueueFlag {
		r.fail(&malformedError{path: name, num: num, msg: "value " + strconv.Itoa(int(t)) + " cannot be the type byte of a task_queue_id"})
		return
	}
	*dst = TaskType(v)
}

// taskTimes collects the timestamps of a TaskInfo, which may be spread over
// several occurrences of AllocatedTaskInfo.data.
type taskTimes struct {
	create, expiry timestamp
}

// decodeAllocatedTaskInfo decodes into m all but the task's timestamps,
// which it merges into tt.
func decodeAllocatedTaskInfo(r *reader, m *AllocatedTaskInfo, tt *taskTimes) {
	for r.next() {
		switch r.num {
		case 1:
			r.message("data", func() { decodeTaskInfo(r, &m.Data, tt) })
		case 2:
			r.int64("task_id", &m.TaskID)
		case 3:
			r.int64("task_pass", &m.TaskPass)
		default:
			r.skip()
		}
	}
}

// decodeTaskInfo decodes into t all but its timestamps, which it merges
// into tt. With a lax reader it must not allocate: DecodeTaskTimes runs it.
func decodeTaskInfo(r *reader, t *TaskInfo, tt *taskTimes) {
	for r.next() {
		switch r.num {
		case 1:
			r.string("namespace_id", &t.NamespaceID)
		case 2:
			r.string("workflow_id", &t.WorkflowID)
		case 3:
			r.string("run_id", &t.RunID)
		case 4:
			r.int64("scheduled_event_id", &t.ScheduledEventID)
		case 5:
			r.message("create_time", func() { decodeTimestamp(r, &tt.create) })
		case 6:
			r.message("expiry_time", func() { decodeTimestamp(r, &tt.expiry) })
		case 9:
			r.int32("stamp", &t.Stamp)
		case 10:
			r.message("priority", func() { decodePriority(r, &t.Priority) })
		default:
			r.skip()
		}
	}
}

func decodePriority(r *reader, p *Priority) {
	for r.next() {
		switch r.num {
		case 1:
			r.int32("priority_key", &p.PriorityKey)
		case 2:
			r.string("fairness_key", &p.FairnessKey)
		case 3:
			r.float32("fairness_weight", &p.FairnessWeight)
		default:
			r.skip()
		}
	}
}
