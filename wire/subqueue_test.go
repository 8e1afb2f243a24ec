package wire

import (
	"bytes"
	"slices"
	"testing"
)

// subqueueKs are subqueue numbers whose uvarints take one, two and three
// bytes, at and around the boundaries.
var subqueueKs = []int{0, 1, 2, 127, 128, 200, 16383, 16384, 1 << 20}

func TestSubqueueID(t *testing.T) {
	const nsHex = "32049b68787240948e63d0dd59896a83"
	tests := []struct {
		row  string // after the namespace bytes
		k    int
		want string
	}{
		{"6d792d7471 01", 0, "6d792d7471 01"},
		{"6d792d7471 01", 1, "6d792d7471 81 01"},
		{"6d792d7471 02", 3, "6d792d7471 82 03"},
		{"6d792d7471 01", 127, "6d792d7471 81 7f"},
		{"6d792d7471 01", 128, "6d792d7471 81 8001"},
		{"6d792d7471 01", 200, "6d792d7471 81 c801"},
		{"6d792d7471 03", 16384, "6d792d7471 83 808001"},
		{"2f5f7379732f6d792d74712f31 01", 2, "2f5f7379732f6d792d74712f31 81 02"},
		{"c3a9 01", 5, "c3a9 81 05"},             // a name ending in a byte above 0x7f
		{"01", 1, "81 01"},                       // no name: the type byte follows the namespace
		{"6d792d7471 00", 1, "6d792d7471 80 01"}, // TaskTypeUnspecified
	}
	for _, tt := range tests {
		row := unhexString(t, nsHex+tt.row)
		want := unhexString(t, nsHex+tt.want)
		if got := SubqueueID(row, tt.k); !bytes.Equal(got, want) {
			t.Errorf("SubqueueID(%x, %d) = %x, want %x", row, tt.k, got, want)
		}
	}
}

// TestSubqueueIDQueueID checks SubqueueID against QueueID, and that
// CandidateParents finds the row id and subqueue back, for ids whose
// uvarints take one to three bytes.
func TestSubqueueIDQueueID(t *testing.T) {
	ns := mustNS(t, exampleNS)
	for _, q := range exampleQueues {
		row := QueueID(ns, q.name, q.typ, 0)
		if _, name, typ, err := ParseQueueRowID(row); err != nil || name != q.name || typ != q.typ {
			t.Fatalf("ParseQueueRowID(%x) = %q, %v, %v", row, name, typ, err)
		}
		for _, k := range subqueueKs {
			got := SubqueueID(row, k)
			if want := QueueID(ns, q.name, q.typ, k); !bytes.Equal(got, want) {
				t.Errorf("SubqueueID(%x, %d) = %x, want QueueID's %x", row, k, got, want)
			}
			if !slices.ContainsFunc(CandidateParents(got), func(p Parent) bool {
				return bytes.Equal(p.QueueID, row) && p.Subqueue == k
			}) {
				t.Errorf("CandidateParents(SubqueueID(%x, %d)) = %s, want {%x %d} among them", row, k, fmtParents(CandidateParents(got)), row, k)
			}
		}
	}
}

func TestSubqueueIDCopies(t *testing.T) {
	row := QueueID(mustNS(t, exampleNS), "my-tq", TaskTypeWorkflow, 0)
	orig := slices.Clone(row)
	for _, k := range []int{0, 1} {
		got := SubqueueID(row, k)
		got[0] ^= 0xff
		if !bytes.Equal(row, orig) {
			t.Fatalf("writing to SubqueueID(row, %d) changed row", k)
		}
	}
}

func TestSubqueueIDPanics(t *testing.T) {
	row := QueueID(mustNS(t, exampleNS), "my-tq", TaskTypeWorkflow, 0)
	for _, tt := range []struct {
		what string
		row  []byte
		k    int
	}{
		{"negative subqueue", row, -1},
		{"empty id", nil, 1},
		{"empty id, subqueue 0", []byte{}, 0},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: SubqueueID(%x, %d) did not panic", tt.what, tt.row, tt.k)
				}
			}()
			SubqueueID(tt.row, tt.k)
		}()
	}
}

func TestSubqueues(t *testing.T) {
	row := QueueID(mustNS(t, exampleNS), "my-tq", TaskTypeActivity, 0)
	// Not RangeHash(row): subqueue 0 must take the row's hash as given.
	const rowHash = 12345

	// list returns a subqueues list of n entries, entry k acked at 10*k in
	// the v1 way and at (k, 10*k) in the v2 way, that level marked present
	// for odd k only. Priorities run backwards: they do not number the
	// subqueues.
	list := func(n int) []SubqueueInfo {
		sqs := make([]SubqueueInfo, n)
		for k := range sqs {
			sqs[k] = SubqueueInfo{
				Priority:        int32(n - k),
				AckLevel:        int64(10 * k),
				FairAckLevel:    FairLevel{Pass: int64(k), TaskID: int64(10 * k)},
				HasFairAckLevel: k%2 == 1,
			}
		}
		return sqs
	}
	// ack is what a subqueue's ack level is wanted to be.
	type ack struct {
		level FairLevel
		has   bool
	}
	v1 := func(k int) ack { return ack{FairLevel{TaskID: int64(10 * k)}, k > 0} }
	v2 := func(k int) ack { return ack{FairLevel{Pass: int64(k), TaskID: int64(10 * k)}, k%2 == 1} }
	tests := []struct {
		what string
		info TaskQueueInfo
		fair bool
		n    int             // subqueues wanted
		ack  func(k int) ack // wanted for subqueue k
	}{
		{"v1 without a list", TaskQueueInfo{AckLevel: 7}, false, 1, func(int) ack { return ack{FairLevel{TaskID: 7}, true} }},
		{"v1 without a list or ack", TaskQueueInfo{}, false, 1, func(int) ack { return ack{} }},
		{"v1 with a list of one", TaskQueueInfo{AckLevel: 7, Subqueues: list(1)}, false, 1, v1},
		{"v1 with a list", TaskQueueInfo{AckLevel: 7, Subqueues: list(201)}, false, 201, v1},
		{"v2 without a list", TaskQueueInfo{AckLevel: 7}, true, 1, func(int) ack { return ack{} }},
		{"v2 with a list of one", TaskQueueInfo{AckLevel: 7, Subqueues: list(1)}, true, 1, v2},
		{"v2 with a list", TaskQueueInfo{AckLevel: 7, Subqueues: list(201)}, true, 201, v2},
		{"v2 with a present zero level", TaskQueueInfo{Subqueues: []SubqueueInfo{{HasFairAckLevel: true}}}, true, 1, func(int) ack { return ack{has: true} }},
	}
	for _, tt := range tests {
		subs := Subqueues(row, rowHash, tt.info, tt.fair)
		if len(subs) != tt.n {
			t.Errorf("%s: %d subqueues, want %d", tt.what, len(subs), tt.n)
			continue
		}
		if &subs[0].ID[0] != &row[0] || subs[0].RangeHash != rowHash {
			t.Errorf("%s: subqueue 0 = %x, hash %d; want the row's own id %x and hash %d", tt.what, subs[0].ID, subs[0].RangeHash, row, rowHash)
		}
		for k, sq := range subs {
			if k > 0 {
				if want := SubqueueID(row, k); !bytes.Equal(sq.ID, want) || sq.RangeHash != RangeHash(want) {
					t.Errorf("%s: subqueue %d = %x, hash %d; want %x, hash %d", tt.what, k, sq.ID, sq.RangeHash, want, RangeHash(want))
				}
			}
			if got, want := (ack{sq.Ack, sq.HasAck}), tt.ack(k); got != want {
				t.Errorf("%s: subqueue %d ack = %+v, want %+v", tt.what, k, got, want)
			}
		}
	}
}
