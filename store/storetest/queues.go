package storetest

// Tests of the queue rows: listing, point reads, fenced writes and
// deletes, and which tables exist.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/tqscavenger/tqscavenger/store"
)

// testListQueues pages through every queue row in primary-key order, at
// several page sizes and from keys that are not in the table.
func testListQueues(t *testing.T, db subject) {
	for _, tb := range []store.Table{store.V1, store.V2} {
		// Insert in a shuffled order so the table's physical order is not
		// the key order.
		want := make([]store.QueueRow, len(listKeys))
		for i, k := range listKeys {
			want[i] = queueRow(k, int64(i+1)+int64(tb)*100)
		}
		ins := slices.Clone(want)
		rand.New(rand.NewPCG(1, uint64(tb))).Shuffle(len(ins), func(i, j int) { ins[i], ins[j] = ins[j], ins[i] })
		mustCreate(t, db, tb, ins...)
	}
	for _, tb := range []store.Table{store.V1, store.V2} {
		want := make([]store.QueueRow, len(listKeys))
		for i, k := range listKeys {
			want[i] = queueRow(k, int64(i+1)+int64(tb)*100)
		}
		for _, limit := range []int{1, 2, 3, 7, len(want), 100} {
			t.Run(fmt.Sprintf("%s/limit=%d", tb, limit), func(t *testing.T) {
				var got []store.QueueRow
				var after *store.QueueKey
				for pages := 0; ; pages++ {
					if pages > len(want)+1 {
						t.Fatalf("paging does not end: %d pages", pages)
					}
					page, err := db.ListQueues(ctx, tb, after, limit)
					if err != nil {
						t.Fatal(err)
					}
					if len(page) > limit {
						t.Fatalf("page of %d rows, limit %d", len(page), limit)
					}
					got = append(got, page...)
					if len(page) < limit {
						break
					}
					k := page[len(page)-1].QueueKey
					after = &k
				}
				checkRows(t, got, want)
			})
		}
		// Starting after keys that are not in the table (between rows, before
		// the first, after the last) gives exactly the rows above them.
		for _, after := range []store.QueueKey{
			qk(0, ""), qk(0, "a\x00"), qk(1, ""), qk(1, "a\x00\x00\x00"), qk(1, "a\x80\x00"),
			qk(math.MaxInt32, "y"), qk(math.MaxInt32+1, ""), qk(math.MaxInt32+1, "w"),
			qk(3_000_000_000, "p"), qk(math.MaxUint32, "\xfe"), qk(math.MaxUint32, "\xff\xff\xff\xff"),
		} {
			t.Run(fmt.Sprintf("%s/after=%s", tb, after), func(t *testing.T) {
				var exp []store.QueueRow
				for _, r := range want {
					if after.Less(r.QueueKey) {
						exp = append(exp, r)
					}
				}
				got, err := db.ListQueues(ctx, tb, &after, 100)
				if err != nil {
					t.Fatal(err)
				}
				checkRows(t, got, exp)
			})
		}
	}
}

func checkRows(t *testing.T, got, want []store.QueueRow) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("got %d rows, want %d", len(got), len(want))
	}
	for i := range min(len(got), len(want)) {
		g, w := got[i], want[i]
		if g.RangeHash != w.RangeHash || !bytes.Equal(g.ID, w.ID) || g.RangeID != w.RangeID || !bytes.Equal(g.Data, w.Data) || g.Encoding != w.Encoding {
			t.Errorf("row %d = %s range_id %d %q %q, want %s range_id %d %q %q", i, g.QueueKey, g.RangeID, g.Data, g.Encoding, w.QueueKey, w.RangeID, w.Data, w.Encoding)
		}
	}
}

// testQueueRows checks the point read and the fenced writes of one queue
// row. An unchanged row's compare-and-set must succeed too, where the
// database reports only changed rows (MySQL without found rows: sqlstore
// runs this test on stores made by New over such a connector too).
func testQueueRows(t *testing.T, db subject) {
	for _, tb := range []store.Table{store.V1, store.V2} {
		k := qk(math.MaxUint32, "queue")
		other := qk(math.MaxUint32, "queue\x00")
		mustCreate(t, db, tb, queueRow(other, 9))

		t.Run(tb.String()+"/GetQueue missing", func(t *testing.T) {
			_, err := db.GetQueue(ctx, tb, k)
			if !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("GetQueue of a missing row: %v, want ErrNotFound", err)
			}
		})
		t.Run(tb.String()+"/CreateQueue", func(t *testing.T) {
			mustCreate(t, db, tb, queueRow(k, 1))
			got, err := db.GetQueue(ctx, tb, k)
			if err != nil {
				t.Fatal(err)
			}
			checkRows(t, []store.QueueRow{got}, []store.QueueRow{queueRow(k, 1)})
			err = db.CreateQueue(ctx, tb, queueRow(k, 5))
			if !errors.Is(err, store.ErrConditionFailed) {
				t.Fatalf("CreateQueue of an existing row: %v, want ErrConditionFailed", err)
			}
			if errors.Is(err, store.ErrTransient) {
				t.Errorf("a duplicate is not transient: %v", err)
			}
			if got, _ := db.GetQueue(ctx, tb, k); got.RangeID != 1 {
				t.Errorf("a failed create changed the row: range_id %d", got.RangeID)
			}
		})
		t.Run(tb.String()+"/UpdateQueue", func(t *testing.T) {
			for _, c := range []struct {
				name      string
				row       store.QueueRow
				prev      int64
				wantErr   bool
				wantAfter store.QueueRow
			}{
				{"new range_id", queueRow(k, 2), 1, false, queueRow(k, 2)},
				{"stale range_id", queueRow(k, 3), 1, true, queueRow(k, 2)},
				// Same range_id and the same bytes: the row matched, so the
				// compare-and-set succeeded (MySQL reports 0 changed rows
				// unless the client asks for found rows).
				{"unchanged row", queueRow(k, 2), 2, false, queueRow(k, 2)},
				{"same range_id, new data", store.QueueRow{QueueKey: k, RangeID: 2, Data: []byte("new"), Encoding: "Json"}, 2, false, store.QueueRow{QueueKey: k, RangeID: 2, Data: []byte("new"), Encoding: "Json"}},
				{"missing row", queueRow(qk(5, "missing"), 2), 1, true, store.QueueRow{}},
			} {
				t.Run(c.name, func(t *testing.T) {
					err := db.UpdateQueue(ctx, tb, c.row, c.prev)
					if c.wantErr != (err != nil) || (err != nil && !errors.Is(err, store.ErrConditionFailed)) {
						t.Fatalf("UpdateQueue: %v, want error %v (ErrConditionFailed)", err, c.wantErr)
					}
					if c.wantAfter.ID == nil {
						return
					}
					got, err := db.GetQueue(ctx, tb, k)
					if err != nil {
						t.Fatal(err)
					}
					checkRows(t, []store.QueueRow{got}, []store.QueueRow{c.wantAfter})
				})
			}
		})
		t.Run(tb.String()+"/DeleteQueue", func(t *testing.T) {
			cur, err := db.GetQueue(ctx, tb, k)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range []struct {
				name    string
				key     store.QueueKey
				rangeID int64
				wantErr bool
			}{
				{"range_id changed", k, cur.RangeID - 1, true},
				{"range_id newer", k, cur.RangeID + 1, true},
				{"fenced on range_id", k, cur.RangeID, false},
				{"row gone", k, cur.RangeID, true},
				{"never existed", qk(5, "missing"), 1, true},
			} {
				t.Run(c.name, func(t *testing.T) {
					err := deleteQueue(ctx, db, tb, c.key, c.rangeID)
					if c.wantErr != (err != nil) || (err != nil && !errors.Is(err, store.ErrConditionFailed)) {
						t.Fatalf("DeleteQueues of one: %v, want error %v (ErrConditionFailed)", err, c.wantErr)
					}
					_, err = db.GetQueue(ctx, tb, k)
					if exists := err == nil; exists != (c.name == "range_id changed" || c.name == "range_id newer") {
						t.Errorf("after %q the row exists: %v (%v)", c.name, exists, err)
					}
				})
			}
			if _, err := db.GetQueue(ctx, tb, other); err != nil {
				t.Errorf("the neighbour row: %v", err)
			}
		})
	}
}

// deleteQueue deletes the queue row q fenced on rangeID, as a DeleteQueues
// of one fence, and reports a row that changed or is gone as
// store.ErrConditionFailed.
func deleteQueue(ctx context.Context, db store.Store, tb store.Table, q store.QueueKey, rangeID int64) error {
	n, err := db.DeleteQueues(ctx, tb, []store.QueueFence{{QueueKey: q, RangeID: rangeID}})
	if err == nil && n == 0 {
		err = fmt.Errorf("delete %s at range_id %d: %w", q, rangeID, store.ErrConditionFailed)
	}
	return err
}

// testTables drops task tables behind the store's back, one after
// another, and checks that Tables sees each go.
func testTables(t *testing.T, db subject) {
	if db.dropTable == nil {
		t.Skip("Harness.DropTable is nil: the suite cannot drop the store's tables")
	}
	for _, c := range []struct {
		drop string
		want []store.Table
	}{
		{"", []store.Table{store.V1, store.V2}},
		{"tasks_v2", []store.Table{store.V1}},
		{"task_queues_v2", []store.Table{store.V1}},
		{"tasks", nil},
	} {
		if c.drop != "" {
			if err := db.dropTable(ctx, c.drop); err != nil {
				t.Fatalf("drop %s: %v", c.drop, err)
			}
		}
		got, err := db.Tables(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("after dropping %q: Tables() = %v, want %v", c.drop, got, c.want)
		}
	}
}

// testDeleteQueues deletes queue rows fenced on their range_id: those
// still at it go, those taken over since and those gone stay as they are.
func testDeleteQueues(t *testing.T, db subject) {
	for _, tb := range []store.Table{store.V1, store.V2} {
		var fences []store.QueueFence
		var kept []store.QueueKey
		var want int64
		for i := range 430 { // more fences than one statement takes
			q := qk(uint32(math.MaxUint32-i), fmt.Sprintf("q%d", i))
			switch i % 3 {
			case 0: // still at the fenced range_id: deleted
				mustCreate(t, db, tb, queueRow(q, 5))
				fences = append(fences, store.QueueFence{QueueKey: q, RangeID: 5})
				want++
			case 1: // taken over since: kept
				mustCreate(t, db, tb, queueRow(q, 6))
				fences = append(fences, store.QueueFence{QueueKey: q, RangeID: 5})
				kept = append(kept, q)
			case 2: // gone already
				fences = append(fences, store.QueueFence{QueueKey: q, RangeID: 5})
			}
		}
		n, err := db.DeleteQueues(ctx, tb, fences)
		if err != nil {
			t.Fatal(err)
		}
		if n != want {
			t.Errorf("%s: deleted %d, want %d", tb, n, want)
		}
		rows, err := db.ListQueues(ctx, tb, nil, 10000)
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != len(kept) {
			t.Errorf("%s: %d rows remain, want the %d taken over", tb, len(rows), len(kept))
		}
		for _, r := range rows {
			if r.RangeID != 6 {
				t.Errorf("%s: row %s at range_id %d remains", tb, r.QueueKey, r.RangeID)
			}
		}
	}
}
