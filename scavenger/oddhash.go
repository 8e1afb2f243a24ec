package scavenger

// Rows outside the range_hash space: kept, counted and logged as bad rows.

import (
	"context"
	"fmt"
	"math"

	"github.com/tqscavenger/tqscavenger/store"
)

// OddHashError is a BadRow's error for a row whose range_hash lies outside
// 0…2³²−1 (a value Temporal never writes: Fingerprint32 is a uint32). Such
// a row is never listed (see store.OddHashFinder), so it cannot end a walk
// or a page early; it is kept and reported.
type OddHashError struct {
	// RangeHash is the row's range_hash as stored.
	RangeHash int64
}

func (e *OddHashError) Error() string {
	return fmt.Sprintf("range_hash %d lies outside 0…%d: row kept", e.RangeHash, uint32(math.MaxUint32))
}

// reportOddHashes reports the rows of tables whose range_hash lies outside
// the uint32 space as bad rows. They sort before hash 0 (negative) or after
// 2³²−1, so they belong to the pass whose range starts at 0 (negative ones)
// or ends at 2³²−1 (the others): a full pass reports them all, and the
// partitions of a partitioned pass report them once between them, as a
// full pass does. A store that cannot find them (not a store.OddHashFinder)
// holds none: its keys are uint32. The reads go through the pass's
// middleware, as its other statements do.
func (p *pass) reportOddHashes(ctx context.Context, tables []store.Table) error {
	f := p.st.odd
	if f == nil {
		return nil
	}
	below, above := p.rng.Lo == 0, p.rng.Hi == math.MaxUint32
	for _, t := range tables {
		var oh store.OddHashes
		err := p.retry(ctx, "find rows outside the range_hash space", func(ctx context.Context) (err error) {
			oh, err = f.OddHashes(ctx, t, MaxBadRows)
			return err
		})
		if err != nil {
			return fmt.Errorf("find %s rows outside the range_hash space: %w", t, err)
		}
		var n int64
		if below {
			n += oh.Below
		}
		if above {
			n += oh.Above
		}
		if n == 0 {
			continue
		}
		var listed int64
		for _, r := range oh.Rows {
			if (r.RangeHash < 0 && !below) || (r.RangeHash >= 0 && !above) {
				continue
			}
			b := BadRow{Table: t, Queue: store.QueueKey{ID: r.ID}, Task: r.Task, Err: &OddHashError{RangeHash: r.RangeHash}}
			p.c.bad(b)
			listed++
			p.cfg.Logger.Warn("bad row: range_hash outside 0…4294967295, kept", "table", t.String(), "row", b.String())
		}
		p.c.badMore(t, n-listed)
		p.cfg.Logger.Warn("rows outside the range_hash space: kept, counted as bad rows", "table", t.String(), "rows", n, "listed", listed)
	}
	return nil
}
