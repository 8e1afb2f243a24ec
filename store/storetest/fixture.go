package storetest

// The suite's fixture: keys in primary-key order, task keys whose pass
// order differs from their id order, and decoy queues beside the one a
// test works on, which it must leave as they are.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/tqscavenger/tqscavenger/store"
)

// ctx is the context of every call: the suite's tests end by failing, not
// by a deadline of their own.
var ctx = context.Background()

// qk makes a queue key.
func qk(rh uint32, id string) store.QueueKey { return store.QueueKey{RangeHash: rh, ID: []byte(id)} }

// queueRow makes the row of k at rangeID, with data that names both.
func queueRow(k store.QueueKey, rangeID int64) store.QueueRow {
	return store.QueueRow{QueueKey: k, RangeID: rangeID, Data: fmt.Appendf(nil, "data of %s at %d", k, rangeID), Encoding: "Proto3"}
}

// task makes the task row of (pass, id), with data that names both.
func task(pass, id int64) store.TaskRow {
	return store.TaskRow{Key: store.TaskKey{Pass: pass, ID: id}, Data: fmt.Appendf(nil, "task %d/%d", pass, id), Encoding: "Proto3"}
}

// keysOf returns the keys of rows, for comparisons.
func keysOf(rows []store.TaskRow) []store.TaskKey {
	out := make([]store.TaskKey, len(rows))
	for i, r := range rows {
		out[i] = r.Key
	}
	return out
}

// mustCreate creates the queue rows, failing the test if one cannot be.
func mustCreate(t *testing.T, w store.Writer, tb store.Table, rows ...store.QueueRow) {
	t.Helper()
	for _, r := range rows {
		if err := w.CreateQueue(ctx, tb, r); err != nil {
			t.Fatalf("CreateQueue %s %s: %v", tb, r.QueueKey, err)
		}
	}
}

// mustAppend creates the owner row if needed and appends tasks to target.
func mustAppend(t *testing.T, db subject, tb store.Table, owner, target store.QueueKey, tasks ...store.TaskRow) {
	t.Helper()
	r, err := db.GetQueue(ctx, tb, owner)
	if errors.Is(err, store.ErrNotFound) {
		r = queueRow(owner, 1)
		mustCreate(t, db, tb, r)
	} else if err != nil {
		t.Fatal(err)
	}
	if err := db.AppendTasks(ctx, tb, owner, r.RangeID, target, tasks); err != nil {
		t.Fatalf("AppendTasks %s %s: %v", tb, target, err)
	}
}

// readAll returns the keys of every task of q, in key order.
func readAll(t *testing.T, st store.Store, tb store.Table, q store.QueueKey) []store.TaskKey {
	t.Helper()
	rows, err := st.ReadTasks(ctx, tb, q, nil, 1<<20)
	if err != nil {
		t.Fatalf("ReadTasks %s %s: %v", tb, q, err)
	}
	return keysOf(rows)
}

// Range hashes around the int32 and uint32 limits, and ids that share
// prefixes or differ only in a high byte, in primary-key order: the
// unsigned order of range_hash, then the bytewise order of task_queue_id
// (TestListKeysOrder checks the list against store.QueueKey.Less).
var listKeys = []store.QueueKey{
	qk(0, "a"),
	qk(1, "a"),
	qk(1, "a\x00"),
	qk(1, "a\x00\x00"),
	qk(1, "a\x01"),
	qk(1, "ab"),
	qk(1, "a\x7f"),
	qk(1, "a\x80"),
	qk(1, "a\xff"),
	qk(1, "b"),
	qk(math.MaxInt32-1, "x"),
	qk(math.MaxInt32, "x"),
	qk(math.MaxInt32+1, "x"),
	qk(math.MaxInt32+1, "x\x00"),
	qk(math.MaxInt32+2, "\x00"),
	qk(3_000_000_000, "q"),
	qk(4060367326, "\x32\x04\x9b\x68my-tq\x02"),
	qk(math.MaxUint32-1, "z"),
	qk(math.MaxUint32, "\xff"),
	qk(math.MaxUint32, "\xff\xff"),
	qk(math.MaxUint32, "\xff\xff\xff"),
}

// Keys of v2 tasks whose pass order differs from their task_id order, as
// with fairness keys.
var v2Keys = tks(1, 50, 1, 70, 2, 10, 3, 5, 3, 60, 3, 61, 7, 1)

// Keys of v1 tasks, ids far apart and past 32 bits.
var v1Keys = tks(0, 1, 0, 2, 0, 5, 0, 100, 0, 100001, 0, 1<<40)

// tks makes task keys from (pass, task_id) pairs.
func tks(passID ...int64) []store.TaskKey {
	out := make([]store.TaskKey, 0, len(passID)/2)
	for i := 0; i+1 < len(passID); i += 2 {
		out = append(out, store.TaskKey{Pass: passID[i], ID: passID[i+1]})
	}
	return out
}

// taskRows makes the task rows of keys.
func taskRows(keys []store.TaskKey) []store.TaskRow {
	out := make([]store.TaskRow, len(keys))
	for i, k := range keys {
		out[i] = task(k.Pass, k.ID)
	}
	return out
}

// tableKeys returns the fixture keys of tb.
func tableKeys(tb store.Table) []store.TaskKey {
	if tb == store.V2 {
		return v2Keys
	}
	return v1Keys
}

// setupTasks writes the fixture keys of tb in shuffled order to q, and
// decoys under keys that share q's range_hash or id prefix.
func setupTasks(t *testing.T, db subject, tb store.Table, q store.QueueKey) {
	t.Helper()
	rows := taskRows(tableKeys(tb))
	rand.New(rand.NewPCG(2, 3)).Shuffle(len(rows), func(i, j int) { rows[i], rows[j] = rows[j], rows[i] })
	mustAppend(t, db, tb, q, q, rows...)
	for _, decoy := range decoys(q) {
		mustAppend(t, db, tb, q, decoy, taskRows(tableKeys(tb))...)
	}
}

// decoys returns keys beside q that a call on q must not touch: q's id
// one byte longer and one shorter, and the range_hashes either side.
func decoys(q store.QueueKey) []store.QueueKey {
	return []store.QueueKey{
		{RangeHash: q.RangeHash, ID: append(slices.Clone(q.ID), 0)},
		{RangeHash: q.RangeHash, ID: q.ID[:len(q.ID)-1]},
		{RangeHash: q.RangeHash + 1, ID: q.ID},
		{RangeHash: q.RangeHash - 1, ID: q.ID},
	}
}

// checkDecoys checks that the decoys of q still hold every task
// setupTasks wrote.
func checkDecoys(t *testing.T, db store.Store, tb store.Table, q store.QueueKey) {
	t.Helper()
	for _, d := range decoys(q) {
		if got := readAll(t, db, tb, d); !slices.Equal(got, tableKeys(tb)) {
			t.Errorf("decoy queue %s was touched: %v", d, got)
		}
	}
}
