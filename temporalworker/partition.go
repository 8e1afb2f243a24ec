package temporalworker

import (
	"fmt"
	"strconv"
	"strings"
)

// hashSpace is the size of the range_hash space: uint32 values.
const hashSpace = uint64(1) << 32

// HashRange is an inclusive range [Lo, Hi] of range_hash values.
type HashRange struct {
	Lo, Hi uint32
}

// String formats r as lo-hi.
func (r HashRange) String() string { return fmt.Sprintf("%d-%d", r.Lo, r.Hi) }

// Contains reports whether h is in r.
func (r HashRange) Contains(h uint32) bool { return r.Lo <= h && h <= r.Hi }

// PartitionRange returns the i-th of n contiguous ranges that split the
// uint32 space, in integer arithmetic: range i starts at ⌊i·2³²/n⌋, so
// the ranges cover every value, 0 and 2³²−1 included, exactly once.
func PartitionRange(i, n int) (HashRange, error) {
	if n < 1 || uint64(n) > hashSpace {
		return HashRange{}, fmt.Errorf("partitions %d: want at least 1", n)
	}
	if i < 0 || i >= n {
		return HashRange{}, fmt.Errorf("partition %d of %d: want 0 to %d", i, n, n-1)
	}
	lo := uint64(i) * hashSpace / uint64(n)
	hi := uint64(i+1)*hashSpace/uint64(n) - 1
	return HashRange{Lo: uint32(lo), Hi: uint32(hi)}, nil
}

// ParsePartition parses I/N, as --partition takes it.
func ParsePartition(s string) (i, n int, err error) {
	a, b, ok := strings.Cut(s, "/")
	if ok {
		i, err = strconv.Atoi(a)
		if err == nil {
			n, err = strconv.Atoi(b)
		}
	}
	if !ok || err != nil {
		return 0, 0, fmt.Errorf("partition %q: want I/N, e.g. 0/4", s)
	}
	if _, err := PartitionRange(i, n); err != nil {
		return 0, 0, err
	}
	return i, n, nil
}

// chunks splits the part of r from next on into the pieces an activity
// runs one after the other: the boundaries are those of r split into k
// equal pieces, so a resumed activity keeps its pieces, and a next that
// falls between two boundaries (a finer mark) starts the first piece
// there. next is a position in [r.Lo, r.Hi+1]; r.Hi+1 means done.
func chunks(r HashRange, k int, next uint64) []HashRange {
	if k < 1 {
		k = 1
	}
	size := uint64(r.Hi) - uint64(r.Lo) + 1
	if uint64(k) > size {
		k = int(size)
	}
	var out []HashRange
	for j := range k {
		lo := uint64(r.Lo) + uint64(j)*size/uint64(k)
		hi := uint64(r.Lo) + uint64(j+1)*size/uint64(k) - 1
		if hi < next {
			continue
		}
		lo = max(lo, next)
		out = append(out, HashRange{Lo: uint32(lo), Hi: uint32(hi)})
	}
	return out
}
