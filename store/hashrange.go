package store

// Hash ranges: the parts of the range_hash space that partitions of a pass
// work on, and that their locks cover.

import (
	"context"
	"fmt"
	"math"
)

// HashRange is the inclusive range Lo <= range_hash <= Hi of the uint32
// range_hash space. The zero value is the single hash 0; FullRange is all
// of it.
type HashRange struct {
	Lo, Hi uint32
}

// FullRange is the whole range_hash space: what a pass without partitions
// covers.
var FullRange = HashRange{Lo: 0, Hi: math.MaxUint32}

// Full reports whether r is the whole space.
func (r HashRange) Full() bool { return r == FullRange }

// Contains reports whether h lies in r.
func (r HashRange) Contains(h uint32) bool { return r.Lo <= h && h <= r.Hi }

// Overlaps reports whether r and o share a hash.
func (r HashRange) Overlaps(o HashRange) bool { return r.Lo <= o.Hi && o.Lo <= r.Hi }

// String formats r as "[lo,hi]".
func (r HashRange) String() string { return fmt.Sprintf("[%d,%d]", r.Lo, r.Hi) }

// Start is the listing position before every key of r: nil for a range
// that starts at hash 0 (from the first row), else a key of r.Lo with a nil
// ID, which ListQueues and ListTaskQueueIDs read as "before every id of
// that hash".
func (r HashRange) Start() *QueueKey {
	if r.Lo == 0 {
		return nil
	}
	return &QueueKey{RangeHash: r.Lo}
}

// RangeLocker takes the lock of one part of the range_hash space, so that
// passes over disjoint ranges (partitions) run at once while passes over
// overlapping ranges exclude each other, whatever their ranges. The lock of
// FullRange is the one Locker.Lock takes, and a range lock excludes the
// whole-pass lock older versions take (see package sqlstore for how each
// engine does it).
type RangeLocker interface {
	// LockRange takes the lock of r, as Locker.Lock does for the whole
	// space: with wait it blocks until no overlapping lock is held or ctx
	// ends; without, it returns an error wrapping ErrLocked at once.
	LockRange(ctx context.Context, r HashRange, wait bool) (Lock, error)
}

// Identifier names the database a store reads, so that a checkpoint
// written against one database is not resumed against another.
type Identifier interface {
	// Identity returns a string that is the same for every connection to
	// the same database (and schema) and differs between databases. It
	// never holds a password or a DSN.
	Identity(ctx context.Context) (string, error)
}
