// Reading the fields of a protowire message: the reader that the general
// decoders of decode.go walk a message with, and the malformedError they
// fail with.

package wire

import (
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
