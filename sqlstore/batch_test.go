package sqlstore_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/tqscavenger/tqscavenger/sqlstore"
	"github.com/tqscavenger/tqscavenger/store"
)

// TestDeleteQueuesBatch: a batch of fenced rows goes, and every row between
// or around them that was not listed, or changed since, stays. The cases
// cover both forms an engine may use for a batch: the fences as a list,
// and (MySQL) the key range they span when its rows are exactly the fences.
func TestDeleteQueuesBatch(t *testing.T) {
	// Rows r00..r19 in key order (all under one range_hash), at range_id 1
	// unless the case says otherwise.
	tests := []struct {
		name string
		// fenced lists the rows in the batch, at range_id 1.
		fenced []int
		// changed rows are at range_id 2; missing rows were never created.
		changed, missing []int
		shuffle          bool
		table            store.Table
	}{
		{name: "whole range inside others", fenced: span(3, 16)},
		{name: "whole range, fences out of order", fenced: span(3, 16), shuffle: true},
		{name: "whole table", fenced: span(0, 19)},
		{name: "whole range in v2", fenced: span(3, 16), table: store.V2},
		{name: "unlisted rows between", fenced: without(span(0, 19), 5, 12)},
		{name: "one changed since", fenced: span(3, 16), changed: []int{9}},
		{name: "one gone", fenced: span(3, 16), missing: []int{9}},
		{name: "last gone", fenced: span(3, 16), missing: []int{16}},
		{name: "everything at once", fenced: without(span(0, 19), 5, 12), changed: []int{9}, missing: []int{17}, shuffle: true},
		{name: "one row", fenced: []int{7}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			forEachEngine(t, func(t *testing.T, e sqlstore.Engine, db *sqlstore.DB) {
				tb := tt.table
				if tb == 0 {
					tb = store.V1
				}
				key := func(i int) store.QueueKey { return qk(7, fmt.Sprintf("r%02d", i)) }
				var want []string // rows left, in key order
				for i := range 20 {
					if slices.Contains(tt.missing, i) {
						continue
					}
					rangeID := int64(1)
					if slices.Contains(tt.changed, i) {
						rangeID = 2
					}
					mustCreate(t, db, tb, queueRow(key(i), rangeID))
					if rangeID != 1 || !slices.Contains(tt.fenced, i) {
						want = append(want, string(key(i).ID))
					}
				}
				var fences []store.QueueFence
				for _, i := range tt.fenced {
					fences = append(fences, store.QueueFence{QueueKey: key(i), RangeID: 1})
				}
				if tt.shuffle {
					rand.New(rand.NewPCG(1, 2)).Shuffle(len(fences), func(i, j int) { fences[i], fences[j] = fences[j], fences[i] })
				}
				n, err := db.DeleteQueues(ctx, tb, fences)
				if err != nil {
					t.Fatal(err)
				}
				if wantN := 20 - len(tt.missing) - len(want); n != int64(wantN) {
					t.Errorf("deleted %d, want %d", n, wantN)
				}
				rows, err := db.ListQueues(ctx, tb, nil, 100)
				if err != nil {
					t.Fatal(err)
				}
				var got []string
				for _, r := range rows {
					got = append(got, string(r.ID))
				}
				if !slices.Equal(got, want) {
					t.Errorf("rows left %q, want %q", got, want)
				}
			})
		})
	}
}

// span returns lo..hi.
func span(lo, hi int) []int {
	var out []int
	for i := lo; i <= hi; i++ {
		out = append(out, i)
	}
	return out
}

func without(s []int, drop ...int) []int {
	return slices.DeleteFunc(s, func(i int) bool { return slices.Contains(drop, i) })
}

// TestDeleteTaskRanges: v1 range sets, the form a page scan deletes,
// delete exactly the tasks in their ranges, whatever their shape.
func TestDeleteTaskRanges(t *testing.T) {
	// Queues q0..q9 under one range_hash, each with tasks 1..10.
	type set struct{ q, min, max int } // min 0: from the first task
	full := func(qs ...int) []set {
		var out []set
		for _, q := range qs {
			out = append(out, set{q, 1, 10})
		}
		return out
	}
	tests := []struct {
		name string
		sets []set
		// gone are tasks deleted after the caller read them: q*100+id.
		gone    []int
		shuffle bool
	}{
		{name: "whole span", sets: full(2, 3, 4, 5, 6)},
		{name: "whole span, from the first task", sets: []set{{2, 0, 10}, {3, 0, 10}, {4, 0, 10}}},
		{name: "sets out of order", sets: full(2, 3, 4, 5, 6), shuffle: true},
		{name: "a queue between not in a set", sets: full(2, 3, 5, 6)},
		{name: "newer tasks above each set", sets: []set{{2, 1, 8}, {3, 1, 8}, {4, 1, 8}}},
		{name: "first set starts inside its queue", sets: []set{{2, 4, 10}, {3, 1, 10}}},
		{name: "last set ends inside its queue", sets: []set{{2, 1, 10}, {3, 1, 5}}},
		{name: "two runs of one queue", sets: []set{{2, 1, 3}, {2, 6, 10}, {3, 1, 10}}},
		{name: "tasks gone since read", sets: full(2, 3, 4), gone: []int{305, 306, 410}},
		{name: "one set", sets: full(4)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			forEachEngine(t, func(t *testing.T, e sqlstore.Engine, db *sqlstore.DB) {
				key := func(q int) store.QueueKey { return qk(7, fmt.Sprintf("q%d", q)) }
				var all []store.TaskRow
				for id := 1; id <= 10; id++ {
					all = append(all, task(0, int64(id)))
				}
				for q := range 10 {
					mustAppend(t, db, store.V1, key(q), key(q), all...)
				}
				var sets []store.TaskSet
				for _, s := range tt.sets {
					r := store.TaskRange{Max: store.TaskKey{ID: int64(s.max)}}
					if s.min > 0 {
						r.Min = store.TaskKey{ID: int64(s.min)}
					}
					sets = append(sets, store.TaskSet{Queue: key(s.q), Range: r})
				}
				for _, g := range tt.gone {
					if _, err := db.DeleteTaskKeys(ctx, store.V1, key(g/100), []store.TaskKey{{ID: int64(g % 100)}}); err != nil {
						t.Fatal(err)
					}
				}
				if tt.shuffle {
					rand.New(rand.NewPCG(3, 4)).Shuffle(len(sets), func(i, j int) { sets[i], sets[j] = sets[j], sets[i] })
				}
				var want []string // tasks left, q*100+id in key order
				wantN := int64(0)
				for q := range 10 {
					for id := 1; id <= 10; id++ {
						if slices.Contains(tt.gone, q*100+id) {
							continue
						}
						in := slices.ContainsFunc(tt.sets, func(s set) bool { return s.q == q && id >= s.min && id <= s.max })
						if in {
							wantN++
						} else {
							want = append(want, fmt.Sprintf("q%d/%d", q, id))
						}
					}
				}
				n, err := db.DeleteTaskSets(ctx, store.V1, sets)
				if err != nil {
					t.Fatal(err)
				}
				if n != wantN {
					t.Errorf("deleted %d, want %d", n, wantN)
				}
				left, err := db.ScanTasks(ctx, store.V1, store.TaskPos{}, qk(math.MaxUint32, "\xff"), 1000)
				if err != nil {
					t.Fatal(err)
				}
				var got []string
				for _, r := range left {
					got = append(got, fmt.Sprintf("%s/%d", r.Queue.ID, r.Key.ID))
				}
				if !slices.Equal(got, want) {
					t.Errorf("tasks left %q,\nwant %q", got, want)
				}
			})
		})
	}
}
