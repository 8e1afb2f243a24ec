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

// OddHashRow is a row of a task table pair whose range_hash lies outside
// the uint32 space: a value the PostgreSQL (BIGINT) and SQLite (INTEGER)
// columns hold, that Temporal never writes, and that no QueueKey can carry.
type OddHashRow struct {
	// RangeHash is the row's range_hash as stored.
	RangeHash int64
	ID        []byte // task_queue_id
	// Task is the key of a task row, nil for a queue row.
	Task *TaskKey
}

// OddHashes is what a task table pair holds outside the uint32 range_hash
// space.
type OddHashes struct {
	// Below and Above count the rows (queue and task rows) whose
	// range_hash is negative, or above 2³²−1.
	Below, Above int64
	// Rows are the first of them, in primary-key order.
	Rows []OddHashRow
}

// OddHashFinder is a Store that finds the rows whose range_hash lies
// outside the uint32 space. Such rows are invisible to every listing of a
// Store (ListQueues, ListTaskQueueIDs, ScanTasks list 0…2³²−1 only, so a
// walk never stops at one), so a pass asks for them apart to report them.
type OddHashFinder interface {
	// OddHashes counts the queue and task rows of table t whose
	// range_hash lies outside 0…2³²−1 and returns up to limit of each
	// kind.
	OddHashes(ctx context.Context, t Table, limit int) (OddHashes, error)
}
