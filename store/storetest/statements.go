package storetest

// The statement counts of the contract: one statement per decision.

import (
	"testing"

	"github.com/tqscavenger/tqscavenger/store"
)

// testStatements checks how many statements each method issues, on the
// store's own count: one for every Store method that is one decision (see
// package store) and for CreateQueue and UpdateQueue, and what the
// caller's options say for those that take a statement per chunk or, on
// some engines, two.
func testStatements(t *testing.T, db subject) {
	if db.statements == nil {
		t.Skip("Harness.Statements is nil: the store counts no statements")
	}
	o := db.opts
	limitedDelete := o.LimitedDeleteStatements
	if limitedDelete == 0 {
		limitedDelete = 1
	}
	const appended, manyKeys = 450, 1001
	// unchecked marks a count the options leave open: the call still runs,
	// as the calls after it need its rows.
	const unchecked = -1
	appends, keyDeletes, noKeyDeletes := int64(unchecked), int64(unchecked), int64(unchecked)
	if o.AppendStatements != nil {
		appends = o.AppendStatements(appended)
	}
	if o.DeleteKeysStatements != nil {
		keyDeletes, noKeyDeletes = o.DeleteKeysStatements(manyKeys), o.DeleteKeysStatements(0)
	}
	q := qk(99, "q")
	for _, c := range []struct {
		name string
		op   func() error
		want int64
	}{
		{"CreateQueue", func() error { return db.CreateQueue(ctx, store.V1, queueRow(q, 1)) }, 1},
		{"AppendTasks of 450", func() error {
			rows := make([]store.TaskRow, appended)
			for i := range rows {
				rows[i] = task(0, int64(i+1))
			}
			return db.AppendTasks(ctx, store.V1, q, 1, q, rows)
		}, appends},
		{"ListQueues", func() error { _, err := db.ListQueues(ctx, store.V1, nil, 10); return err }, 1},
		{"ReadTasks", func() error { _, err := db.ReadTasks(ctx, store.V1, q, nil, 10); return err }, 1},
		{"DeleteTasks", func() error {
			_, err := db.DeleteTasks(ctx, store.V1, q, store.TaskRange{Max: store.TaskKey{ID: 10}}, 0)
			return err
		}, 1},
		{"DeleteTasks limited", func() error {
			_, err := db.DeleteTasks(ctx, store.V1, q, store.TaskRange{Max: store.TaskKey{ID: 100}}, 5)
			return err
		}, limitedDelete},
		{"DeleteTaskSets of 1001 keys", func() error { _, err := deleteKeys(db, store.V1, q, make([]store.TaskKey, manyKeys)); return err }, keyDeletes},
		{"DeleteTaskSets of no keys", func() error { _, err := deleteKeys(db, store.V1, q, nil); return err }, noKeyDeletes},
		{"GetQueue", func() error { _, err := db.GetQueue(ctx, store.V1, q); return err }, 1},
		{"UpdateQueue", func() error { return db.UpdateQueue(ctx, store.V1, queueRow(q, 2), 1) }, 1},
		{"Tables", func() error { _, err := db.Tables(ctx); return err }, 1},
		{"DeleteQueues of one", func() error { return deleteQueue(ctx, db, store.V1, q, 2) }, 1},
	} {
		before := db.statements()
		if err := c.op(); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := db.statements() - before; c.want != unchecked && got != c.want {
			t.Errorf("%s issued %d statements, want %d", c.name, got, c.want)
		}
	}
}
