// Package storetest is the conformance suite of package store: it checks
// what every method of a store.Store and its store.Writer returns and
// leaves behind (order, paging, fences, limits, which rows a delete may
// touch), with the same expectations on every engine. It does not check
// behaviour under concurrent writers or failures. sqlstore runs it on
// SQLite, PostgreSQL and MariaDB; an embedder with a store of its own runs
// it from a test of their own:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) storetest.Harness {
//			s := openMyStore(t) // fresh, empty tables; closed by t.Cleanup
//			return storetest.Harness{Store: s, Writer: s}
//		}, storetest.Options{})
//	}
//
// The suite uses nothing but the two interfaces and the standard library:
// what a store issues, and how, is the store's own business, except for
// the statement counts that Harness.Statements and Options let a caller
// check.
package storetest

import (
	"context"
	"slices"
	"testing"

	"github.com/tqscavenger/tqscavenger/store"
)

// A Harness is one store under test, fresh and empty, with what the suite
// needs besides it.
type Harness struct {
	// Store is the store under test.
	Store store.Store
	// Writer writes the rows the tests read and delete, into the same
	// tables; usually the same value as Store.
	Writer store.Writer

	// Statements returns how many statements the store has sent its
	// database so far, a commit counting as one. If it is nil, the
	// Statements test skips.
	Statements func() int64
	// DropTable drops one of Temporal's task tables by name ("tasks",
	// "tasks_v2", "task_queues_v2") behind the store's back. If it is
	// nil, the Tables test skips.
	DropTable func(ctx context.Context, table string) error
}

// Options says how a store may legitimately differ from the suite's
// defaults, and which tests to run. The zero Options runs every test and
// checks only the statement counts that every store shares.
type Options struct {
	// LimitedDeleteStatements is how many statements DeleteTasks with a
	// limit issues: 1 where the engine deletes "LIMIT n" in one statement,
	// 2 where it first finds the limit-th key (sqlstore on SQLite). Zero
	// means 1.
	LimitedDeleteStatements int64

	// AppendStatements returns how many statements AppendTasks of n tasks
	// issues, its fence and commit included. If it is nil, that count is
	// not checked.
	AppendStatements func(n int) int64

	// DeleteKeysStatements returns how many statements DeleteTaskSets of
	// one set of n keys issues (n may be 0). If it is nil, that count is
	// not checked.
	DeleteKeysStatements func(n int) int64

	// Only, if not empty, names the tests to run (as Run names its
	// subtests: "QueueRows", "Statements", ...); the others do not. It is
	// for a second kind of store that differs from one that passed the
	// whole suite in one respect only.
	Only []string
}

// A test is one test of the suite, run on a store of its own.
type test struct {
	name string
	run  func(t *testing.T, db subject)
}

// tests is the suite, in the order Run runs it.
var tests = []test{
	{"ListQueues", testListQueues},
	{"ReadTasks", testReadTasks},
	{"DeleteTasks", testDeleteTasks},
	{"DeleteTaskSetOfKeys", testDeleteTaskSetOfKeys},
	{"QueueRows", testQueueRows},
	{"AppendTasks", testAppendTasks},
	{"CompleteTasks", testCompleteTasks},
	{"Tables", testTables},
	{"Statements", testStatements},
	{"ListTaskQueueIDs", testListTaskQueueIDs},
	{"DeleteOrphanTasks", testDeleteOrphanTasks},
	{"ScanTasks", testScanTasks},
	{"DeleteTaskSets", testDeleteTaskSets},
	{"DeleteQueues", testDeleteQueues},
}

// subject is the store under test as the tests use it: the methods of
// Store and Writer on one value, with the rest of its Harness and the
// caller's Options.
type subject struct {
	store.Store
	store.Writer
	statements func() int64
	dropTable  func(ctx context.Context, table string) error
	opts       Options
}

// Run runs the suite as subtests of t, one after another, each on the
// store that open makes for it. open is called once per test, with the
// subtest's t: it returns a fresh, empty store whose schema is in place
// (Temporal's task tables tasks, task_queues, tasks_v2 and
// task_queues_v2, nothing in them), closes it when t ends (t.Cleanup),
// and may skip or fail t where no store can be had. opts says where the
// store legitimately differs; Options{} runs every test.
func Run(t *testing.T, open func(t *testing.T) Harness, opts Options) {
	t.Helper()
	for _, name := range opts.Only {
		if !slices.ContainsFunc(tests, func(c test) bool { return c.name == name }) {
			t.Fatalf("storetest: Options.Only names %q, which is not a test of the suite", name)
		}
	}
	for _, c := range tests {
		if len(opts.Only) > 0 && !slices.Contains(opts.Only, c.name) {
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			h := open(t)
			if h.Store == nil || h.Writer == nil {
				t.Fatal("storetest: the Harness has no Store or no Writer")
			}
			c.run(t, subject{Store: h.Store, Writer: h.Writer, statements: h.Statements, dropTable: h.DropTable, opts: opts})
		})
	}
}
