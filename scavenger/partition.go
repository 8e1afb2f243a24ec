package scavenger

// Partitions: a pass over one part of the range_hash space.

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/tqscavenger/tqscavenger/store"
)

// MaxPartitions bounds Partition.Count. Every partition of it still holds
// 65536 hashes; more only adds passes and locks.
const MaxPartitions = 1 << 16

// Partition selects the I-th (Index) of Count contiguous, equal ranges of
// the uint32 range_hash space: the queues whose queue row's range_hash lies
// in it, whatever the hashes of their subqueues' task rows, and the task
// rows of those hashes for the orphan walk. Partitions 0..Count-1 together
// do exactly what one pass over the whole space does. The zero value is
// the whole space (one partition).
type Partition struct {
	Index, Count int
}

// ErrBadPartition is wrapped by the errors of ParsePartition and
// Partition.Validate.
var ErrBadPartition = errors.New("bad partition")

// ParsePartition parses "I/N" (0 <= I < N <= MaxPartitions).
func ParsePartition(s string) (Partition, error) {
	is, ns, ok := strings.Cut(s, "/")
	if strings.ContainsAny(s, " \t\n\r+") {
		// Atoi would take "+1", and a stray blank is a typo to show,
		// not to guess past.
		return Partition{}, fmt.Errorf("%w %q: want I/N with digits only, such as 0/4", ErrBadPartition, s)
	}
	if !ok {
		return Partition{}, fmt.Errorf("%w %q: want I/N, such as 0/4 (the first of 4)", ErrBadPartition, s)
	}
	i, err1 := strconv.Atoi(is)
	n, err2 := strconv.Atoi(ns)
	if err1 != nil || err2 != nil {
		return Partition{}, fmt.Errorf("%w %q: I and N must be integers, as in 0/4", ErrBadPartition, s)
	}
	p := Partition{Index: i, Count: n}
	if n < 1 {
		return Partition{}, fmt.Errorf("%w %q: N must be 1 to %d", ErrBadPartition, s, MaxPartitions)
	}
	return p, p.Validate()
}

// Validate reports a partition that selects nothing.
func (p Partition) Validate() error {
	if p == (Partition{}) {
		return nil
	}
	if p.Count < 1 || p.Count > MaxPartitions {
		return fmt.Errorf("%w %d/%d: N must be 1 to %d", ErrBadPartition, p.Index, p.Count, MaxPartitions)
	}
	if p.Index < 0 || p.Index >= p.Count {
		return fmt.Errorf("%w %d/%d: I must be 0 to N-1 (%d)", ErrBadPartition, p.Index, p.Count, p.Count-1)
	}
	return nil
}

// Whole reports whether p is the whole space (the zero value or 0/1).
func (p Partition) Whole() bool { return p.Count <= 1 }

// String formats p as "I/N"; the whole space is "0/1".
func (p Partition) String() string {
	if p.Count == 0 {
		return "0/1"
	}
	return fmt.Sprintf("%d/%d", p.Index, p.Count)
}

// Range is p's part of the space: lo = floor(I·2³²/N), hi =
// floor((I+1)·2³²/N) − 1, in integer arithmetic (Temporal's
// TaskScanPartitions uses float32, which rounds boundaries). Consecutive
// partitions meet without a gap or an overlap, the first starts at 0 and
// the last ends at 2³²−1.
func (p Partition) Range() store.HashRange {
	if p.Whole() {
		return store.FullRange
	}
	const space = uint64(1) << 32
	i, n := uint64(p.Index), uint64(p.Count)
	return store.HashRange{Lo: uint32(i * space / n), Hi: uint32((i+1)*space/n - 1)}
}
