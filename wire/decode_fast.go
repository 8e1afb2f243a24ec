// The fast path of DecodeTaskTimes, which decodes only the task times,
// without allocating. It walks the blob by hand, byte by byte, for the common
// shapes only: one-byte tags, varints of up to 9 bytes, no groups. It gives
// up (returns false) on anything else, errors included, and DecodeTaskTimes
// then runs the general decoder of decode.go, so errors and rare shapes are
// handled in one place. The fast path must accept only what the general
// decoder accepts, with the same result; FuzzDecode checks that.

package wire

import "google.golang.org/protobuf/encoding/protowire"

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

// fastTaskTimes is the fast path of decodeTaskTimes: decodeAllocatedTaskInfo
// with a lax reader.
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

// fastTaskInfo is the fast path of decodeTaskInfo with a lax reader.
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
			// Strings (not checked for UTF-8, as the general decoder
			// with a lax reader does not) and varints.
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

// fastPriority is the fast path of decodePriority with a lax reader.
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
