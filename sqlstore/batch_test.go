package sqlstore_test

import (
	"fmt"
	"testing"

	"github.com/tqscavenger/tqscavenger/sqlstore"
	"github.com/tqscavenger/tqscavenger/store"
)

// TestDeleteQueuesBetweenOthers: a batch of fenced rows goes, and every row
// between them that was not listed, or changed since, stays.
func TestDeleteQueuesBetweenOthers(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e sqlstore.Engine, db *sqlstore.DB) {
		// Rows r00..r19 in key order. Fenced: all but r05 (created after
		// the listing, at the same range_id) and r12 (another's); r17 was
		// never created (gone); r09 was taken over since (range_id 2).
		var fences []store.QueueFence
		keep := map[string]bool{"r05": true, "r09": true, "r12": true}
		for i := range 20 {
			name := fmt.Sprintf("r%02d", i)
			q := qk(7, name)
			switch name {
			case "r17":
			case "r09":
				mustCreate(t, db, store.V1, queueRow(q, 2))
			default:
				mustCreate(t, db, store.V1, queueRow(q, 1))
			}
			if name != "r05" && name != "r12" {
				fences = append(fences, store.QueueFence{QueueKey: q, RangeID: 1})
			}
		}
		n, err := db.DeleteQueues(ctx, store.V1, fences)
		if err != nil {
			t.Fatal(err)
		}
		if n != 16 {
			t.Errorf("deleted %d, want 16", n)
		}
		rows, err := db.ListQueues(ctx, store.V1, nil, 100)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			if !keep[string(r.ID)] {
				t.Errorf("row %s left", r.ID)
			}
		}
		if len(rows) != len(keep) {
			t.Errorf("%d rows left, want %d", len(rows), len(keep))
		}
	})
}
