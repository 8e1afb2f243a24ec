// This file owns the rows whose range_hash lies outside the uint32 space:
// the listings never return them (see builder.hashMax), and OddHashes
// finds them for the pass to report.

package sqlstore

import (
	"context"
	"fmt"
	"math"

	"github.com/tqscavenger/tqscavenger/store"
)

// hashOf is a listed range_hash as a QueueKey's. The listings read
// 0…2³²−1 only, so a value outside it is a bug, reported instead of
// wrapped around (−1 read as 4294967295 would end a walk early).
func hashOf(rh int64) (uint32, error) {
	if rh < 0 || rh > math.MaxUint32 {
		return 0, fmt.Errorf("sqlstore: listed range_hash %d lies outside 0…%d", rh, uint32(math.MaxUint32))
	}
	return uint32(rh), nil
}

// oddWhere selects the rows outside the uint32 range_hash space.
const oddWhere = " WHERE range_hash < 0 OR range_hash > " + maxHashLit

// OddHashes implements store.OddHashFinder: two counts and two short
// listings per table, each an index range at either end of the primary
// key. On MySQL the column is INT UNSIGNED, so they find nothing.
func (s *DB) OddHashes(ctx context.Context, t store.Table, limit int) (store.OddHashes, error) {
	ctx, cancel := s.withStatement(ctx)
	defer cancel()
	op := "find range_hash values outside 0…" + maxHashLit + " in " + queueTable(t) + " and " + taskTable(t)
	var out store.OddHashes
	for _, tab := range []string{queueTable(t), taskTable(t)} {
		var below, above int64
		q := "SELECT (SELECT COUNT(*) FROM " + tab + " WHERE range_hash < 0), (SELECT COUNT(*) FROM " + tab + " WHERE range_hash > " + maxHashLit + ")"
		if err := s.db.QueryRowContext(ctx, q).Scan(&below, &above); err != nil {
			return store.OddHashes{}, s.wrap(ctx, op, err)
		}
		out.Below += below
		out.Above += above
		if below+above == 0 || limit <= 0 {
			continue
		}
		task := tab == taskTable(t)
		cols := "range_hash, task_queue_id"
		if task {
			cols += ", " + orderBy(t)
		}
		b := s.newBuilder()
		b.w("SELECT ", cols, " FROM ", tab, oddWhere, " ORDER BY ", cols, " LIMIT ").p(limit)
		rows, err := s.db.QueryContext(ctx, b.String(), b.args...)
		if err != nil {
			return store.OddHashes{}, s.wrap(ctx, op, err)
		}
		for rows.Next() {
			var r store.OddHashRow
			var k store.TaskKey
			switch {
			case !task:
				err = rows.Scan(&r.RangeHash, &r.ID)
			case t == store.V2:
				err = rows.Scan(&r.RangeHash, &r.ID, &k.Pass, &k.ID)
			default:
				err = rows.Scan(&r.RangeHash, &r.ID, &k.ID)
			}
			if err != nil {
				rows.Close()
				return store.OddHashes{}, s.wrap(ctx, op, err)
			}
			if task {
				r.Task = &k
			}
			out.Rows = append(out.Rows, r)
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return store.OddHashes{}, s.wrap(ctx, op, err)
		}
	}
	return out, nil
}

var _ store.OddHashFinder = (*DB)(nil)
