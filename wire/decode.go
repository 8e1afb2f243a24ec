// The public decoders, and the general decoder of each message, which
// handles every valid blob and reports every invalid one. DecodeTaskTimes
// tries its fast path, in decode_fast.go, first. The general decoders walk
// messages with the reader of reader.go.

package wire

import (
	"math"
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
	if err := decodeTaskQueueInfo(data, &m); err != nil {
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
	if err := decodeAllocatedTaskInfo(data, &m, &tt); err != nil {
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
		tt = taskTimes{}
		if err := decodeAllocatedTaskInfo(data, nil, &tt); err != nil {
			return TaskTimes{}, err.within("AllocatedTaskInfo")
		}
	}
	return TaskTimes{CreateTime: tt.create.time(), ExpiryTime: tt.expiry.time()}, nil
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

// decodeTimestamp merges the encoded Timestamp b into ts, as protobuf does
// when a message field occurs more than once.
func decodeTimestamp(b []byte, ts *timestamp) *malformedError {
	ts.set = true
	r := reader{b}
	for len(r.b) > 0 {
		num, typ, err := r.next()
		if err != nil {
			return err
		}
		switch num {
		case 1:
			v, err := r.varint("seconds", num, typ)
			if err != nil {
				return err
			}
			ts.sec = int64(v)
		case 2:
			v, err := r.varint("nanos", num, typ)
			if err != nil {
				return err
			}
			ts.nanos = int32(v)
		default:
			if err := r.skip(num, typ); err != nil {
				return err
			}
		}
	}
	return nil
}

func decodeFairLevel(b []byte, l *FairLevel) *malformedError {
	r := reader{b}
	for len(r.b) > 0 {
		num, typ, err := r.next()
		if err != nil {
			return err
		}
		switch num {
		case 1:
			v, err := r.varint("task_pass", num, typ)
			if err != nil {
				return err
			}
			l.Pass = int64(v)
		case 2:
			v, err := r.varint("task_id", num, typ)
			if err != nil {
				return err
			}
			l.TaskID = int64(v)
		default:
			if err := r.skip(num, typ); err != nil {
				return err
			}
		}
	}
	return nil
}

func decodeSubqueueKey(b []byte, s *SubqueueInfo) *malformedError {
	r := reader{b}
	for len(r.b) > 0 {
		num, typ, err := r.next()
		if err != nil {
			return err
		}
		switch num {
		case 1:
			v, err := r.varint("priority", num, typ)
			if err != nil {
				return err
			}
			s.Priority = int32(v)
		default:
			if err := r.skip(num, typ); err != nil {
				return err
			}
		}
	}
	return nil
}

func decodeSubqueueInfo(b []byte, s *SubqueueInfo) *malformedError {
	r := reader{b}
	for len(r.b) > 0 {
		num, typ, err := r.next()
		if err != nil {
			return err
		}
		switch num {
		case 1:
			v, err := r.bytes("key", num, typ)
			if err != nil {
				return err
			}
			if err := decodeSubqueueKey(v, s); err != nil {
				return err.within("key")
			}
		case 2:
			v, err := r.varint("ack_level", num, typ)
			if err != nil {
				return err
			}
			s.AckLevel = int64(v)
		case 3:
			v, err := r.varint("approximate_backlog_count", num, typ)
			if err != nil {
				return err
			}
			s.ApproximateBacklogCount = int64(v)
		case 4:
			v, err := r.bytes("fair_ack_level", num, typ)
			if err != nil {
				return err
			}
			if err := decodeFairLevel(v, &s.FairAckLevel); err != nil {
				return err.within("fair_ack_level")
			}
			s.HasFairAckLevel = true
		case 5:
			v, err := r.bytes("fair_max_read_level", num, typ)
			if err != nil {
				return err
			}
			if err := decodeFairLevel(v, &s.FairMaxReadLevel); err != nil {
				return err.within("fair_max_read_level")
			}
		default:
			if err := r.skip(num, typ); err != nil {
				return err
			}
		}
	}
	return nil
}

func decodeTaskQueueInfo(b []byte, m *TaskQueueInfo) *malformedError {
	var expiry, update timestamp
	r := reader{b}
	for len(r.b) > 0 {
		num, typ, err := r.next()
		if err != nil {
			return err
		}
		switch num {
		case 1:
			v, err := r.string("namespace_id", num, typ, true)
			if err != nil {
				return err
			}
			m.NamespaceID = string(v)
		case 2:
			v, err := r.string("name", num, typ, true)
			if err != nil {
				return err
			}
			m.Name = string(v)
		case 3:
			v, err := r.varint("task_type", num, typ)
			if err != nil {
				return err
			}
			// Enums are int32 on the wire; a negative one is sign-extended.
			if t := int32(v); t < 0 || t >= subqueueFlag {
				return &malformedError{path: "task_type", num: num, msg: "value " + strconv.Itoa(int(t)) + " cannot be the type byte of a task_queue_id"}
			}
			m.TaskType = TaskType(v)
		case 4:
			v, err := r.varint("kind", num, typ)
			if err != nil {
				return err
			}
			m.Kind = Kind(int32(v))
		case 5:
			v, err := r.varint("ack_level", num, typ)
			if err != nil {
				return err
			}
			m.AckLevel = int64(v)
		case 6:
			v, err := r.bytes("expiry_time", num, typ)
			if err != nil {
				return err
			}
			if err := decodeTimestamp(v, &expiry); err != nil {
				return err.within("expiry_time")
			}
		case 7:
			v, err := r.bytes("last_update_time", num, typ)
			if err != nil {
				return err
			}
			if err := decodeTimestamp(v, &update); err != nil {
				return err.within("last_update_time")
			}
		case 8:
			v, err := r.varint("approximate_backlog_count", num, typ)
			if err != nil {
				return err
			}
			m.ApproximateBacklogCount = int64(v)
		case 9:
			v, err := r.bytes("subqueues", num, typ)
			if err != nil {
				return err
			}
			i := len(m.Subqueues)
			m.Subqueues = append(m.Subqueues, SubqueueInfo{})
			if err := decodeSubqueueInfo(v, &m.Subqueues[i]); err != nil {
				return err.within("subqueues[" + strconv.Itoa(i) + "]")
			}
		case 10:
			v, err := r.varint("other_has_tasks", num, typ)
			if err != nil {
				return err
			}
			m.OtherHasTasks = v != 0
		default:
			if err := r.skip(num, typ); err != nil {
				return err
			}
		}
	}
	m.ExpiryTime = expiry.time()
	m.LastUpdateTime = update.time()
	return nil
}

// taskTimes collects the timestamps of a TaskInfo, which may be spread over
// several occurrences of AllocatedTaskInfo.data.
type taskTimes struct {
	create, expiry timestamp
}

// decodeAllocatedTaskInfo decodes b into m, or only checks it if m is nil;
// either way it merges the task's timestamps into tt.
func decodeAllocatedTaskInfo(b []byte, m *AllocatedTaskInfo, tt *taskTimes) *malformedError {
	r := reader{b}
	for len(r.b) > 0 {
		num, typ, err := r.next()
		if err != nil {
			return err
		}
		switch num {
		case 1:
			v, err := r.bytes("data", num, typ)
			if err != nil {
				return err
			}
			var ti *TaskInfo
			if m != nil {
				ti = &m.Data
			}
			if err := decodeTaskInfo(v, ti, tt); err != nil {
				return err.within("data")
			}
		case 2:
			v, err := r.varint("task_id", num, typ)
			if err != nil {
				return err
			}
			if m != nil {
				m.TaskID = int64(v)
			}
		case 3:
			v, err := r.varint("task_pass", num, typ)
			if err != nil {
				return err
			}
			if m != nil {
				m.TaskPass = int64(v)
			}
		default:
			if err := r.skip(num, typ); err != nil {
				return err
			}
		}
	}
	return nil
}

// decodeTaskInfo decodes b into t, or only checks it if t is nil; either
// way it merges the timestamps into tt. With a nil t it must not allocate.
func decodeTaskInfo(b []byte, t *TaskInfo, tt *taskTimes) *malformedError {
	r := reader{b}
	for len(r.b) > 0 {
		num, typ, err := r.next()
		if err != nil {
			return err
		}
		switch num {
		case 1:
			v, err := r.string("namespace_id", num, typ, t != nil)
			if err != nil {
				return err
			}
			if t != nil {
				t.NamespaceID = string(v)
			}
		case 2:
			v, err := r.string("workflow_id", num, typ, t != nil)
			if err != nil {
				return err
			}
			if t != nil {
				t.WorkflowID = string(v)
			}
		case 3:
			v, err := r.string("run_id", num, typ, t != nil)
			if err != nil {
				return err
			}
			if t != nil {
				t.RunID = string(v)
			}
		case 4:
			v, err := r.varint("scheduled_event_id", num, typ)
			if err != nil {
				return err
			}
			if t != nil {
				t.ScheduledEventID = int64(v)
			}
		case 5:
			v, err := r.bytes("create_time", num, typ)
			if err != nil {
				return err
			}
			if err := decodeTimestamp(v, &tt.create); err != nil {
				return err.within("create_time")
			}
		case 6:
			v, err := r.bytes("expiry_time", num, typ)
			if err != nil {
				return err
			}
			if err := decodeTimestamp(v, &tt.expiry); err != nil {
				return err.within("expiry_time")
			}
		case 9:
			v, err := r.varint("stamp", num, typ)
			if err != nil {
				return err
			}
			if t != nil {
				t.Stamp = int32(v)
			}
		case 10:
			v, err := r.bytes("priority", num, typ)
			if err != nil {
				return err
			}
			var p *Priority
			if t != nil {
				p = &t.Priority
			}
			if err := decodePriority(v, p); err != nil {
				return err.within("priority")
			}
		default:
			if err := r.skip(num, typ); err != nil {
				return err
			}
		}
	}
	return nil
}

// decodePriority merges b into p, or only checks it if p is nil.
func decodePriority(b []byte, p *Priority) *malformedError {
	r := reader{b}
	for len(r.b) > 0 {
		num, typ, err := r.next()
		if err != nil {
			return err
		}
		switch num {
		case 1:
			v, err := r.varint("priority_key", num, typ)
			if err != nil {
				return err
			}
			if p != nil {
				p.PriorityKey = int32(v)
			}
		case 2:
			v, err := r.string("fairness_key", num, typ, p != nil)
			if err != nil {
				return err
			}
			if p != nil {
				p.FairnessKey = string(v)
			}
		case 3:
			v, err := r.fixed32("fairness_weight", num, typ)
			if err != nil {
				return err
			}
			if p != nil {
				p.FairnessWeight = math.Float32frombits(v)
			}
		default:
			if err := r.skip(num, typ); err != nil {
				return err
			}
		}
	}
	return nil
}
