package wire

import (
	"bytes"
	"encoding/hex"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

const exampleNS = "32049b68-7872-4094-8e63-d0dd59896a83"

func mustNS(t testing.TB, s string) NamespaceID {
	t.Helper()
	ns, err := ParseNamespaceID(s)
	if err != nil {
		t.Fatal(err)
	}
	return ns
}

func unhexString(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		t.Fatalf("bad hex %q: %v", s, err)
	}
	return b
}

// TestQueueIDExamples checks QueueID and RangeHash on fixed ids: both task
// types, subqueues whose uvarints take one and two bytes, and a partition's
// name. TestFixtures checks the same layout against the ids in databases that
// Temporal wrote.
func TestQueueIDExamples(t *testing.T) {
	const nsHex = "32049b68787240948e63d0dd59896a83"
	tests := []struct {
		name     string
		typ      TaskType
		subqueue int
		id       string // after the namespace bytes
		hash     uint32
	}{
		{"my-tq", TaskTypeWorkflow, 0, "6d792d7471 01", 1454174539},
		{"my-tq", TaskTypeActivity, 0, "6d792d7471 02", 4060367326},
		{"my-tq", TaskTypeWorkflow, 1, "6d792d7471 81 01", 4052530386},
		{"my-tq", TaskTypeActivity, 3, "6d792d7471 82 03", 2278747876},
		{"my-tq", TaskTypeWorkflow, 200, "6d792d7471 81 c801", 347841311},
		{"/_sys/my-tq/1", TaskTypeWorkflow, 0, "2f5f7379732f6d792d74712f31 01", 1041734460},
	}
	ns := mustNS(t, exampleNS)
	for _, tt := range tests {
		want := unhexString(t, nsHex+tt.id)
		got := QueueID(ns, tt.name, tt.typ, tt.subqueue)
		if !bytes.Equal(got, want) {
			t.Errorf("QueueID(%q, %v, %d) = %x, want %x", tt.name, tt.typ, tt.subqueue, got, want)
		}
		prefix := []byte("prefix")
		if got := AppendQueueID(prefix, ns, tt.name, tt.typ, tt.subqueue); !bytes.Equal(got, append([]byte("prefix"), want...)) {
			t.Errorf("AppendQueueID(%q, %v, %d) = %x, want prefix then %x", tt.name, tt.typ, tt.subqueue, got, want)
		}
		if got := RangeHash(want); got != tt.hash {
			t.Errorf("RangeHash(%x) = %d, want %d", want, got, tt.hash)
		}
	}
}

func TestRangeHashFingerprint32(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want uint32
	}{
		{"", 3696677242},
		{"hello", 2039911270},
	} {
		if got := RangeHash([]byte(tt.in)); got != tt.want {
			t.Errorf("RangeHash(%q) = %d, want %d", tt.in, got, tt.want)
		}
	}
}

func TestQueueIDPanics(t *testing.T) {
	ns := mustNS(t, exampleNS)
	for _, tt := range []struct {
		typ      TaskType
		subqueue int
	}{
		{TaskTypeWorkflow, -1},
		{0x80, 0},
		{0xff, 1},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("QueueID(typ %d, subqueue %d) did not panic", tt.typ, tt.subqueue)
				}
			}()
			QueueID(ns, "q", tt.typ, tt.subqueue)
		}()
	}
}

func TestParseNamespaceID(t *testing.T) {
	ns, err := ParseNamespaceID("32049B68-7872-4094-8E63-D0DD59896A83")
	if err != nil {
		t.Fatal(err)
	}
	if want := unhexString(t, "32049b68787240948e63d0dd59896a83"); !bytes.Equal(ns[:], want) {
		t.Errorf("bytes = %x, want %x", ns[:], want)
	}
	if got := ns.String(); got != exampleNS {
		t.Errorf("String() = %q, want %q", got, exampleNS)
	}
	for _, bad := range []string{
		"",
		"32049b68787240948e63d0dd59896a83",
		"{32049b68-7872-4094-8e63-d0dd59896a83}",
		"32049b68-7872-4094-8e63-d0dd59896a8",
		"32049b68-7872-4094-8e63-d0dd59896a833",
		"32049b68_7872-4094-8e63-d0dd59896a83",
		"32049b68-7872-4094-8e63-d0dd59896a8g",
		"32049b6-87872-4094-8e63-d0dd59896a83",
	} {
		_, err := ParseNamespaceID(bad)
		if err == nil {
			t.Errorf("ParseNamespaceID(%q) succeeded", bad)
			continue
		}
		if !strings.Contains(err.Error(), `"`+bad+`"`) {
			t.Errorf("ParseNamespaceID(%q) error %q does not name the value", bad, err)
		}
	}
}

// exampleQueues are queues (of namespace exampleNS) whose row ids the key
// tests build and take apart.
var exampleQueues = []struct {
	name string
	typ  TaskType
}{
	{"my-tq", TaskTypeWorkflow},
	{"my-tq", TaskTypeActivity},
	{"/_sys/my-tq/1", TaskTypeActivity},
	{"tq-é", TaskTypeNexus},
	{"ключ", TaskTypeWorkflow}, // a name whose bytes look like uvarint bytes
	{"", TaskTypeWorkflow},
	{"", TaskTypeUnspecified},
}

func TestParseQueueRowID(t *testing.T) {
	ns := mustNS(t, exampleNS)
	for _, tt := range exampleQueues {
		id := QueueID(ns, tt.name, tt.typ, 0)
		gotNS, gotName, gotTyp, err := ParseQueueRowID(id)
		if err != nil || gotNS != ns || gotName != tt.name || gotTyp != tt.typ {
			t.Errorf("ParseQueueRowID(%x) = %v, %q, %v, %v; want %v, %q, %v", id, gotNS, gotName, gotTyp, err, ns, tt.name, tt.typ)
		}
	}
	for _, bad := range []struct {
		what string
		id   []byte
	}{
		{"empty", nil},
		{"namespace only", ns[:]},
		{"subqueue id", QueueID(ns, "my-tq", TaskTypeWorkflow, 1)[:22]}, // ends in 0x81
		{"invalid UTF-8 name", append(append(ns[:], 0xff, 'q'), 1)},
	} {
		if _, _, _, err := ParseQueueRowID(bad.id); err == nil {
			t.Errorf("ParseQueueRowID(%s %x) succeeded", bad.what, bad.id)
		}
	}
}

func TestCandidateParents(t *testing.T) {
	ns := mustNS(t, exampleNS)
	id := func(name string, typ TaskType, k int) []byte { return QueueID(ns, name, typ, k) }
	raw := func(name string, tail ...byte) []byte { return append(append(ns[:], name...), tail...) }
	tests := []struct {
		what string
		id   []byte
		want []Parent
	}{
		{
			what: "k=0",
			id:   id("my-tq", TaskTypeWorkflow, 0),
			want: []Parent{{id("my-tq", TaskTypeWorkflow, 0), 0}},
		},
		{
			// The uvarint's last byte reads as a type byte too.
			what: "k=1",
			id:   id("my-tq", TaskTypeWorkflow, 1),
			want: []Parent{
				{raw("my-tq\x81", 0x01), 0},
				{id("my-tq", TaskTypeWorkflow, 0), 1},
			},
		},
		{
			what: "k=200",
			id:   unhexString(t, "32049b68787240948e63d0dd59896a83 6d792d7471 81 c801"),
			want: []Parent{
				{raw("my-tq\x81\xc8", 0x01), 0},
				{id("my-tq", TaskTypeWorkflow, 0), 200},
				// 0xc8 is followed by 01, the uvarint 1.
				{raw("my-tq\x81", 0x48), 1},
			},
		},
		{
			what: "k=3 activity",
			id:   id("my-tq", TaskTypeActivity, 3),
			want: []Parent{
				{raw("my-tq\x82", 0x03), 0},
				{id("my-tq", TaskTypeActivity, 0), 3},
			},
		},
		{
			// "é" is c3 a9: both bytes have the high bit set, and
			// "a9 81 01" and "81 01" are both minimal uvarints.
			what: "name with UTF-8 é, k=1",
			id:   id("tq-é", TaskTypeWorkflow, 1),
			want: []Parent{
				{raw("tq-é\x81", 0x01), 0},
				{raw("tq-", 0x43), 0x29 | 0x01<<7 | 0x01<<14},
				{raw("tq-\xc3", 0x29), 0x01 | 0x01<<7},
				{id("tq-é", TaskTypeWorkflow, 0), 1},
			},
		},
		{
			what: "name with UTF-8 é, k=0",
			id:   id("tq-é", TaskTypeActivity, 0),
			want: []Parent{
				{id("tq-é", TaskTypeActivity, 0), 0},
				// c3 followed by the uvarint a9 02, a9 by the uvarint 02.
				{raw("tq-", 0x43), 0x29 | 0x02<<7},
				{raw("tq-\xc3", 0x29), 2},
			},
		},
		{
			what: "non-minimal uvarint",
			id:   raw("q", 0x81, 0x81, 0x00),
			want: []Parent{{raw("q", 0x81, 0x81, 0x00), 0}},
		},
		{
			what: "uvarint 0",
			id:   raw("q", 0x81, 0x00),
			want: []Parent{{raw("q", 0x81, 0x00), 0}},
		},
		{
			what: "too short",
			id:   ns[:],
			want: nil,
		},
		{
			// The high byte at position 16 is the first byte a type byte
			// can occupy: an empty name.
			what: "empty name, k=5",
			id:   id("", TaskTypeNexus, 5),
			want: []Parent{
				{raw("\x83", 0x05), 0},
				{id("", TaskTypeNexus, 0), 5},
			},
		},
		{
			what: "namespace bytes are never a split point",
			id:   raw("", 0x02),
			want: []Parent{{raw("", 0x02), 0}},
		},
	}
	for _, tt := range tests {
		got := CandidateParents(tt.id)
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: CandidateParents(%x):\n got %s\nwant %s", tt.what, tt.id, fmtParents(got), fmtParents(tt.want))
		}
	}

	// The result must not alias the input.
	in := id("my-tq", TaskTypeWorkflow, 0)
	ps := CandidateParents(in)
	ps[0].QueueID[0] ^= 0xff
	if !bytes.Equal(in, id("my-tq", TaskTypeWorkflow, 0)) {
		t.Error("CandidateParents returned a slice aliasing its input")
	}
}

func fmtParents(ps []Parent) string {
	parts := make([]string, len(ps))
	for i, p := range ps {
		parts[i] = hex.EncodeToString(p.QueueID[min(16, len(p.QueueID)):]) + "/" + strconv.Itoa(p.Subqueue)
	}
	return "[" + strings.Join(parts, " ") + "]"
}

func TestStrings(t *testing.T) {
	for _, tt := range []struct {
		got, want string
	}{
		{TaskTypeUnspecified.String(), "Unspecified"},
		{TaskTypeWorkflow.String(), "Workflow"},
		{TaskTypeActivity.String(), "Activity"},
		{TaskTypeNexus.String(), "Nexus"},
		{TaskType(9).String(), "TaskType(9)"},
		{KindUnspecified.String(), "Unspecified"},
		{KindNormal.String(), "Normal"},
		{KindSticky.String(), "Sticky"},
		{KindWorkerCommands.String(), "WorkerCommands"},
		{Kind(-4).String(), "Kind(-4)"},
	} {
		if tt.got != tt.want {
			t.Errorf("String() = %q, want %q", tt.got, tt.want)
		}
	}
}

// FuzzQueueID checks that CandidateParents and ParseQueueRowID invert
// QueueID for any queue.
func FuzzQueueID(f *testing.F) {
	f.Add([]byte{0x32, 0x04}, "my-tq", uint8(1), uint16(0))
	f.Add([]byte{1}, "tq-é", uint8(2), uint16(200))
	f.Add([]byte{}, "\x81\x01", uint8(3), uint16(1))
	f.Fuzz(func(t *testing.T, nsBytes []byte, name string, typ uint8, k uint16) {
		var ns NamespaceID
		copy(ns[:], nsBytes)
		typ &^= subqueueFlag
		id := QueueID(ns, name, TaskType(typ), int(k))
		parent := QueueID(ns, name, TaskType(typ), 0)
		found := false
		for _, p := range CandidateParents(id) {
			if p.Subqueue == int(k) && bytes.Equal(p.QueueID, parent) {
				found = true
			}
		}
		if !found {
			t.Errorf("CandidateParents(%x) = %s, missing %x/%d", id, fmtParents(CandidateParents(id)), parent, k)
		}
		gotNS, gotName, gotTyp, err := ParseQueueRowID(parent)
		if err != nil {
			if !utf8.ValidString(name) {
				return
			}
			t.Fatalf("ParseQueueRowID(%x): %v", parent, err)
		}
		if gotNS != ns || gotName != name || gotTyp != TaskType(typ) {
			t.Errorf("ParseQueueRowID(%x) = %v, %q, %v", parent, gotNS, gotName, gotTyp)
		}
	})
}
