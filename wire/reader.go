// Reading the fields of a protowire message: the reader that the general
// decoders of decode.go walk a blob with, its typed field helpers, and the
// malformedError they fail with.

package wire

import (
	"math"
	"strconv"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"
)

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

// reader walks the fields of a message, and of the messages nested in it.
// A decoder is a loop over the fields with one case, and one helper call, a
// field it knows:
//
//	for r.next() {
//		switch r.num {
//		case 1:
//			r.int64("seconds", &ts.sec)
//		case 2:
//			r.int32("nanos", &ts.nanos)
//		default:
//			r.skip()
//		}
//	}
//
// next reads the tag of a field into num and typ. A helper checks the wire
// type, reads the value into its destination, and on an error records it,
// with the field's name and number; skip passes over a field the decoder
// does not know, as protobuf does. (A chain of helpers that each test the
// field number, one line a field, reads better but measured 10-20% slower
// than the switch's single jump.)
//
// A nested message is decoded in place: message points the reader at the
// nested bytes, runs the nested decoder, whose loop ends where they end, and
// points the reader past them again. So one reader, on the caller's stack,
// serves a whole blob, and a decoder takes no bytes and returns no error.
//
// The first error ends the walk: fail stores it in *err and leaves nothing
// to read, so every enclosing loop ends too, each enclosing message
// prefixing its field to the error's path on the way out.
type reader struct {
	b   []byte           // the rest of the innermost message being read
	num protowire.Number // the field whose tag was read last
	typ protowire.Type   // its wire type

	// err points to the caller's error variable, not to an error kept in
	// the reader: escape analysis does not tell one field of a variable
	// from another, so returning an error kept next to b would count as
	// returning the blob, and a blob on the caller's stack would be moved
	// to the heap.
	err **malformedError

	// lax: strings are neither kept nor checked for UTF-8. DecodeTaskTimes
	// ignores strings, and the check costs more than the rest of decoding.
	lax bool
}

// fail stops the walk with err.
func (r *reader) fail(err *malformedError) {
	*r.err = err
	r.b = nil
}

// next reads the tag of the next field. It reports false at the end of the
// message, or after an error.
//
// next is small enough to be inlined, so that the end of a message costs no
// call: the small nested messages, timestamps and levels, spend a good part
// of their time there.
func (r *reader) next() bool {
	return len(r.b) > 0 && r.tag()
}

// tag reads the tag of the next field; there is one.
//
// The fast paths of tag, varint, bytes and nested handle the one-byte tags,
// values and lengths that make up most of a blob without calling into
// protowire; the slow paths handle everything else, errors included.
func (r *reader) tag() bool {
	if c := r.b[0]; c < 0x80 && c >= 1<<3 {
		r.b = r.b[1:]
		r.num, r.typ = protowire.Number(c>>3), protowire.Type(c&7)
		return true
	}
	return r.tagSlow()
}

func (r *reader) tagSlow() bool {
	num, typ, n := protowire.ConsumeTag(r.b)
	if n < 0 {
		r.fail(&malformedError{msg: "bad field tag: " + protowire.ParseError(n).Error()})
		return false
	}
	if num > protowire.MaxValidNumber {
		// proto.Unmarshal rejects these too.
		r.fail(&malformedError{msg: "field number " + strconv.Itoa(int(num)) + " out of range"})
		return false
	}
	r.b = r.b[n:]
	r.num, r.typ = num, typ
	return true
}

// skip consumes the value of a field the decoder does not know.
func (r *reader) skip() {
	n := protowire.ConsumeFieldValue(r.num, r.typ, r.b)
	if n < 0 {
		r.fail(&malformedError{num: r.num, msg: "skipping unknown field: " + protowire.ParseError(n).Error()})
		return
	}
	r.b = r.b[n:]
}

// The typed helpers read the current field, which errors name name, into
// dst.

// int64 reads an int64 field.
func (r *reader) int64(name string, dst *int64) {
	if v, ok := r.varint(name); ok {
		*dst = int64(v)
	}
}

// int32 reads an int32 or enum field. Both are sign-extended to 64 bits on
// the wire; the conversion drops the extension.
func (r *reader) int32(name string, dst *int32) {
	if v, ok := r.varint(name); ok {
		*dst = int32(v)
	}
}

// bool reads a bool field.
func (r *reader) bool(name string, dst *bool) {
	if v, ok := r.varint(name); ok {
		*dst = v != 0
	}
}

// float32 reads a float field.
func (r *reader) float32(name string, dst *float32) {
	if v, ok := r.fixed32(name); ok {
		*dst = math.Float32frombits(v)
	}
}

// string reads a string field, which must be UTF-8 unless the reader is
// lax. A lax reader does not keep it either: keeping it would allocate.
func (r *reader) string(name string, dst *string) {
	num := r.num
	v, ok := r.bytes(name)
	if !ok || r.lax {
		return
	}
	if !utf8.Valid(v) {
		r.fail(&malformedError{path: name, num: num, msg: "invalid UTF-8"})
		return
	}
	*dst = string(v)
}

// message reads a message field: decode must be a decoder's loop over r,
// which message runs with r pointed at the nested message. A message that
// occurs more than once is decoded each time into the same destination,
// which merges the occurrences, as protobuf does.
func (r *reader) message(name string, decode func()) {
	r.nested(name, -1, decode)
}

// element reads an element of a repeated message field, the i-th so far,
// which errors name name[i].
func (r *reader) element(name string, i int, decode func()) {
	r.nested(name, i, decode)
}

func (r *reader) nested(name string, i int, decode func()) {
	start, end := 1, 0
	if r.typ == protowire.BytesType && len(r.b) > 0 && r.b[0] < 0x80 && int(r.b[0]) < len(r.b) {
		end = 1 + int(r.b[0])
	} else {
		var ok bool
		if start, end, ok = r.lengthSlow(name); !ok {
			return
		}
	}
	// The reader is pointed at the nested message, and back past it, by
	// reslicing r.b in place, never by storing another slice in it: escape
	// analysis takes such a store for a leak of the blob to the heap, which
	// would cost DecodeTaskTimes an allocation when its caller's buffer is
	// on the stack. The nested message's slice keeps the capacity that runs
	// on over the rest of this one, so the rest is got back by reslicing the
	// empty slice the nested loop ends with.
	rest := len(r.b) - end
	r.b = r.b[start:end]
	decode()
	if *r.err != nil {
		if i >= 0 {
			name += "[" + strconv.Itoa(i) + "]"
		}
		(*r.err).within(name)
		return
	}
	r.b = r.b[:rest]
}

// lengthSlow reads the length prefix of a length-delimited field without
// consuming anything: the value is r.b[start:end].
func (r *reader) lengthSlow(name string) (start, end int, ok bool) {
	if !r.is(name, protowire.BytesType) {
		return 0, 0, false
	}
	v, n := protowire.ConsumeBytes(r.b)
	if !r.valid(name, n) {
		return 0, 0, false
	}
	return n - len(v), n, true
}

// The raw reads, under the helpers: each checks the wire type of the
// current field and consumes its value, or fails and reports false.

func (r *reader) varint(name string) (uint64, bool) {
	if r.typ == protowire.VarintType && len(r.b) > 0 && r.b[0] < 0x80 {
		v := uint64(r.b[0])
		r.b = r.b[1:]
		return v, true
	}
	return r.varintSlow(name)
}

func (r *reader) varintSlow(name string) (uint64, bool) {
	if !r.is(name, protowire.VarintType) {
		return 0, false
	}
	v, n := protowire.ConsumeVarint(r.b)
	return v, r.consume(name, n)
}

// bytes reads a length-delimited value; the result aliases the blob.
func (r *reader) bytes(name string) ([]byte, bool) {
	if r.typ == protowire.BytesType && len(r.b) > 0 && r.b[0] < 0x80 && int(r.b[0]) < len(r.b) {
		n := 1 + int(r.b[0])
		v := r.b[1:n:n]
		r.b = r.b[n:]
		return v, true
	}
	return r.bytesSlow(name)
}

func (r *reader) bytesSlow(name string) ([]byte, bool) {
	if !r.is(name, protowire.BytesType) {
		return nil, false
	}
	v, n := protowire.ConsumeBytes(r.b)
	return v, r.consume(name, n)
}

func (r *reader) fixed32(name string) (uint32, bool) {
	if !r.is(name, protowire.Fixed32Type) {
		return 0, false
	}
	v, n := protowire.ConsumeFixed32(r.b)
	return v, r.consume(name, n)
}

// is reports whether the current field has the wire type want, and fails if
// it has not. It is small enough to be inlined, so that the check costs the
// common case, a multi-byte varint, no call.
func (r *reader) is(name string, want protowire.Type) bool {
	if r.typ == want {
		return true
	}
	r.failType(name, want)
	return false
}

func (r *reader) failType(name string, want protowire.Type) {
	r.fail(&malformedError{path: name, num: r.num, msg: "wire type " + typeName(r.typ) + ", want " + typeName(want)})
}

// valid reports whether n, what a protowire Consume function returned for
// the current field's value, is a length, and fails if it is an error. Like
// is, it is small enough to be inlined.
func (r *reader) valid(name string, n int) bool {
	if n >= 0 {
		return true
	}
	r.failParse(name, n)
	return false
}

func (r *reader) failParse(name string, n int) {
	r.fail(&malformedError{path: name, num: r.num, msg: protowire.ParseError(n).Error()})
}

// consume consumes the n bytes of the current field's value, n being what a
// protowire Consume function returned for it, or fails if that is an error.
func (r *reader) consume(name string, n int) bool {
	if !r.valid(name, n) {
		return false
	}
	r.b = r.b[n:]
	return true
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
