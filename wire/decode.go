package wire

import (
	"math"
	"strconv"
	"time"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"
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

// malformedError says where and why a blob failed to decode. It is built
// from the inside out: each enclosing message prefixes its field to path.
type malformedError struct {
	path string // dotted path of the failing field, e.g. TaskQueueInfo.subqueues[1].key
	num  protowire.Number
	msg  string
}

func (e *malformedError) Error() string {
	s := ErrMalformed.Error() + ": " + e.path
	if e.num != 0 {
		s += " (field " + strconv.Itoa(int(e.num)) + ")"
	}
	return s + ": " + e.msg
}

func (e *malformedError) Unwrap() error { return ErrMalformed }

// within records that the error happened inside the field (or message)
// named prefix.
func (e *malformedError) within(prefix string) *malformedError {
	if e.path == "" {
		e.path = prefix
	} else {
		e.path = prefix + "." + e.path
	}
	return e
}

// reader walks the fields of one message.
type reader struct {
	b []byte
}

// next consumes the tag of the next field.
//
// The fast paths of next, varint and bytes handle the one-byte tags, values
// and lengths that make up most of a blob without calling into protowire;
// the slow paths handle everything else, errors included.
func (r *reader) next() (protowire.Number, protowire.Type, *malformedError) {
	if len(r.b) > 0 && r.b[0] < 0x80 && r.b[0] >= 1<<3 {
		c := r.b[0]
		r.b = r.b[1:]
		return protowire.Number(c >> 3), protowire.Type(c & 7), nil
	}
	return r.nextSlow()
}

func (r *reader) nextSlow() (protowire.Number, protowire.Type, *malformedError) {
	num, typ, n := protowire.ConsumeTag(r.b)
	if n < 0 {
		return 0, 0, &malformedError{msg: "bad field tag: " + protowire.ParseError(n).Error()}
	}
	if num > protowire.MaxValidNumber {
		// proto.Unmarshal rejects these too.
		return 0, 0, &malformedError{msg: "field number " + strconv.Itoa(int(num)) + " out of range"}
	}
	r.b = r.b[n:]
	return num, typ, nil
}

// skip consumes the value of a field this package does not decode.
func (r *reader) skip(num protowire.Number, typ protowire.Type) *malformedError {
	n := protowire.ConsumeFieldValue(num, typ, r.b)
	if n < 0 {
		return &malformedError{num: num, msg: "skipping unknown field: " + protowire.ParseError(n).Error()}
	}
	r.b = r.b[n:]
	return nil
}

func (r *reader) varint(name string, num protowire.Number, typ protowire.Type) (uint64, *malformedError) {
	if typ == protowire.VarintType && len(r.b) > 0 && r.b[0] < 0x80 {
		v := uint64(r.b[0])
		r.b = r.b[1:]
		return v, nil
	}
	return r.varintSlow(name, num, typ)
}

func (r *reader) varintSlow(name string, num protowire.Number, typ protowire.Type) (uint64, *malformedError) {
	if typ != protowire.VarintType {
		return 0, wrongType(name, num, typ, protowire.VarintType)
	}
	v, n := protowire.ConsumeVarint(r.b)
	if n < 0 {
		return 0, &malformedError{path: name, num: num, msg: protowire.ParseError(n).Error()}
	}
	r.b = r.b[n:]
	return v, nil
}

func (r *reader) bytes(name string, num protowire.Number, typ protowire.Type) ([]byte, *malformedError) {
	if typ == protowire.BytesType && len(r.b) > 0 && r.b[0] < 0x80 && int(r.b[0]) < len(r.b) {
		n := 1 + int(r.b[0])
		v := r.b[1:n:n]
		r.b = r.b[n:]
		return v, nil
	}
	return r.bytesSlow(name, num, typ)
}

func (r *reader) bytesSlow(name string, num protowire.Number, typ protowire.Type) ([]byte, *malformedError) {
	if typ != protowire.BytesType {
		return nil, wrongType(name, num, typ, protowire.BytesType)
	}
	v, n := protowire.ConsumeBytes(r.b)
	if n < 0 {
		return nil, &malformedError{path: name, num: num, msg: protowire.ParseError(n).Error()}
	}
	r.b = r.b[n:]
	return v, nil
}

// string consumes a string field; the result aliases the blob. It checks
// that the string is UTF-8 only if asked to: the check costs more than the
// rest of DecodeTaskTimes, which ignores strings.
func (r *reader) string(name string, num protowire.Number, typ protowire.Type, check bool) ([]byte, *malformedError) {
	v, err := r.bytes(name, num, typ)
	if err != nil {
		return nil, err
	}
	if check && !utf8.Valid(v) {
		return nil, &malformedError{path: name, num: num, msg: "invalid UTF-8"}
	}
	return v, nil
}

func (r *reader) fixed32(name string, num protowire.Number, typ protowire.Type) (uint32, *malformedError) {
	if typ != protowire.Fixed32Type {
		return 0, wrongType(name, num, typ, protowire.Fixed32Type)
	}
	v, n := protowire.ConsumeFixed32(r.b)
	if n < 0 {
		return 0, &malformedError{path: name, num: num, msg: protowire.ParseError(n).Error()}
	}
	r.b = r.b[n:]
	return v, nil
}

func wrongType(name string, num protowire.Number, got, want protowire.Type) *malformedError {
	return &malformedError{path: name, num: num, msg: "wire type " + typeName(got) + ", want " + typeName(want)}
}

func typeName(t protowire.Type) string {
	switch t {
	case protowire.VarintType:
		return "varint"
	case protowire.Fixed32Type:
		return "fixed32"
	case protowire.Fixed64Type:
		return "fixed64"
	case protowire.BytesType:
		return "bytes"
	case protowire.StartGroupType:
		return "start-group"
	case protowire.EndGroupType:
		return "end-group"
	}
	return strconv.Itoa(int(t))
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

// The fast path of DecodeTaskTimes walks the blob by hand, byte by byte, for
// the common shapes only: one-byte tags, varints of up to 9 bytes, no groups.
// It gives up (returns false) on anything else, errors included, and
// DecodeTaskTimes then runs the general decoder, so errors and rare shapes
// are handled in one place. The fast path must accept only what the general
// decoder accepts, with the same result; FuzzDecode checks that.

// fastVarint decodes the varint at b[i:] and returns it with the index that
// follows it, or -1 if it is truncated or longer than 9 bytes.
func fastVarint(b []byte, i int) (uint64, int) {
	var v uint64
	for shift := uint(0); shift < 63; shift += 7 {
		if i >= len(b) {
			return 0, -1
		}
		c := b[i]
		i++
		v |= uint64(c&0x7f) << shift
		if c < 0x80 {
			return v, i
		}
	}
	return 0, -1
}

// fastSkip skips the value of wire type typ at b[i:] and returns the index
// that follows it, or -1.
func fastSkip(b []byte, i int, typ protowire.Type) int {
	switch typ {
	case protowire.VarintType:
		// Only the end matters: no need to gather the value.
		end := min(len(b), i+9)
		for i < end && b[i] >= 0x80 {
			i++
		}
		if i == end {
			return -1
		}
		i++
	case protowire.Fixed32Type:
		i += 4
	case protowire.Fixed64Type:
		i += 8
	case protowire.BytesType:
		var n uint64
		n, i = fastVarint(b, i)
		if i < 0 || n > uint64(len(b)-i) {
			return -1
		}
		i += int(n)
	default:
		return -1
	}
	if i > len(b) {
		return -1
	}
	return i
}

// fastBytes returns the bounds of the length-prefixed value at b[i:], or
// end < 0.
func fastBytes(b []byte, i int) (start, end int) {
	n, i := fastVarint(b, i)
	if i < 0 || n > uint64(len(b)-i) {
		return 0, -1
	}
	return i, i + int(n)
}

// fastTag reads a one-byte tag at b[i].
func fastTag(b []byte, i int) (protowire.Number, protowire.Type, bool) {
	c := b[i]
	if c >= 0x80 || c < 1<<3 {
		return 0, 0, false
	}
	return protowire.Number(c >> 3), protowire.Type(c & 7), true
}

// fastTaskTimes is the fast path of decodeAllocatedTaskInfo(b, nil, tt).
func fastTaskTimes(b []byte, tt *taskTimes) bool {
	for i := 0; i < len(b); {
		num, typ, ok := fastTag(b, i)
		if !ok {
			return false
		}
		i++
		switch num {
		case 1: // data
			if typ != protowire.BytesType {
				return false
			}
			start, end := fastBytes(b, i)
			if end < 0 || !fastTaskInfo(b[start:end], tt) {
				return false
			}
			i = end
		case 2, 3: // task_id, task_pass
			if typ != protowire.VarintType {
				return false
			}
			if i = fastSkip(b, i, typ); i < 0 {
				return false
			}
		default:
			if i = fastSkip(b, i, typ); i < 0 {
				return false
			}
		}
	}
	return true
}

// fastTaskInfo is the fast path of decodeTaskInfo(b, nil, tt).
func fastTaskInfo(b []byte, tt *taskTimes) bool {
	for i := 0; i < len(b); {
		num, typ, ok := fastTag(b, i)
		if !ok {
			return false
		}
		i++
		switch num {
		case 5, 6: // create_time, expiry_time
			if typ != protowire.BytesType {
				return false
			}
			start, end := fastBytes(b, i)
			if end < 0 {
				return false
			}
			ts := &tt.create
			if num == 6 {
				ts = &tt.expiry
			}
			if !fastTimestamp(b[start:end], ts) {
				return false
			}
			i = end
		case 10: // priority
			if typ != protowire.BytesType {
				return false
			}
			start, end := fastBytes(b, i)
			if end < 0 || !fastPriority(b[start:end]) {
				return false
			}
			i = end
		case 1, 2, 3, 4, 9:
			// Strings (not checked for UTF-8, as in the general decoder
			// with a nil TaskInfo) and varints.
			want := protowire.BytesType
			if num == 4 || num == 9 {
				want = protowire.VarintType
			}
			if typ != want {
				return false
			}
			fallthrough
		default:
			if i = fastSkip(b, i, typ); i < 0 {
				return false
			}
		}
	}
	return true
}

// fastTimestamp is the fast path of decodeTimestamp.
func fastTimestamp(b []byte, ts *timestamp) bool {
	ts.set = true
	for i := 0; i < len(b); {
		num, typ, ok := fastTag(b, i)
		if !ok {
			return false
		}
		i++
		switch num {
		case 1, 2:
			if typ != protowire.VarintType {
				return false
			}
			var v uint64
			if v, i = fastVarint(b, i); i < 0 {
				return false
			}
			if num == 1 {
				ts.sec = int64(v)
			} else {
				ts.nanos = int32(v)
			}
		default:
			if i = fastSkip(b, i, typ); i < 0 {
				return false
			}
		}
	}
	return true
}

// fastPriority is the fast path of decodePriority(b, nil).
func fastPriority(b []byte) bool {
	for i := 0; i < len(b); {
		num, typ, ok := fastTag(b, i)
		if !ok {
			return false
		}
		i++
		switch {
		case num == 1 && typ != protowire.VarintType,
			num == 2 && typ != protowire.BytesType,
			num == 3 && typ != protowire.Fixed32Type:
			return false
		}
		if i = fastSkip(b, i, typ); i < 0 {
			return false
		}
	}
	return true
}
