package sqlstore_test

import (
	"fmt"
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
