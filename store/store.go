// Package store defines what the scavenger needs from a task store, and
// nothing more: a narrow contract over Temporal's task tables that every SQL
// engine implements (see package sqlstore).
//
// A Store reads and deletes. A Writer does what a matching host does (create
// and lease queues, append tasks fenced by range_id, delete acknowledged
// tasks); the scavenger never uses it, tests, the demo and the seeder do.
// Locker and SchemaChecker are what a scheduler needs around a pass: the
// one-scavenger-at-a-time lock and the schema check.
//
// Rows are handed over raw (bytes and encoding); decoding blobs is the job of
// package wire, and deciding what to delete is the job of package scavenger.
//
// # Adding a method
//
// Every method of Store is one decision the scavenger takes with one
// statement (or one statement per chunk, for batches larger than an engine
// takes). A new method must say what it guarantees while matching hosts
// write the same rows. Every Middleware spells out every method, so a new
// one fails to compile until each wrapper has decided what to do with it.
package store

import "context"

// Store is the scavenger's view of a task store. Every method is safe for
// concurrent use.
//
// Reads are single statements that see committed rows only, with no lock
// held after they return: what they report may have changed by the time
// the caller acts on it (a queue leased, a task appended or dispatched).
// So no decision rests on a read alone: a queue row is deleted only if its
// range_id is still the one read (DeleteQueues), an orphan only if its
// parents are still absent in the delete itself (DeleteOrphanTasks), and a
// task only if it is expired, which no writer undoes.
//
// Each delete is one atomic statement per chunk, so a call cut short (a
// cancelled context, a lost connection) leaves every row either deleted or
// as it was; a call that fails after several chunks returns how many rows
// the finished chunks deleted.
type Store interface {
	// Tables reports which task tables exist.
	Tables(ctx context.Context) ([]Table, error)

	// ListQueues returns up to limit queue rows of table t in primary-key
	// order, starting after the key after (nil: from the first row). An
	// after with a nil ID starts before every row of its range_hash (see
	// HashRange.Start): how a partition's listing starts at its first hash.
	ListQueues(ctx context.Context, t Table, after *QueueKey, limit int) ([]QueueRow, error)

	// GetQueue reads one queue row, or returns an error wrapping
	// ErrNotFound. It is a point read, not a batch of one: the pass asks
	// for a row it does not have listed (the other table version's row of
	// a queue, the candidate parents of an orphan), a handful per queue.
	GetQueue(ctx context.Context, t Table, q QueueKey) (QueueRow, error)

	// ReadTasks returns up to limit tasks of the (sub)queue q in key
	// order, starting after the key after (nil: from the first task).
	ReadTasks(ctx context.Context, t Table, q QueueKey, after *TaskKey, limit int) ([]TaskRow, error)

	// ScanTasks returns up to limit tasks of table t across queues, in
	// primary-key order: those positioned after after, whose queue key is
	// at most through. It is how a pass reads many small queues in one
	// statement.
	ScanTasks(ctx context.Context, t Table, after TaskPos, through QueueKey, limit int) ([]ScannedTask, error)

	// ListTaskQueueIDs returns up to limit distinct (range_hash,
	// task_queue_id) pairs of the task table t in primary-key order,
	// starting after the key after (nil: from the first), each with
	// whether a queue row of exactly that key exists. It is how orphaned
	// tasks are found without holding every queue id in memory. An after
	// with a nil ID starts before every id of its range_hash, as in
	// ListQueues.
	ListTaskQueueIDs(ctx context.Context, t Table, after *QueueKey, limit int) ([]TaskQueueRef, error)

	// DeleteTaskSets deletes every task of each set and returns how many
	// it deleted, in one statement where the engine allows. A set is a
	// key range of one (sub)queue or a list of keys. A range is exact only
	// where matching appends above every key it has written (V1: task ids
	// grow); in V2 a new task may sort between old ones, so delete V2
	// tasks by their keys.
	DeleteTaskSets(ctx context.Context, t Table, sets []TaskSet) (int64, error)

	// DeleteTasks deletes the tasks of q inside r, lowest keys first, at
	// most limit of them, and returns how many it deleted: Temporal's
	// "task_id <= x LIMIT n" delete, which compat mode issues as Temporal
	// does, so that its batches are Temporal's. A limit <= 0 deletes all
	// of r, as a one-set DeleteTaskSets does.
	DeleteTasks(ctx context.Context, t Table, q QueueKey, r TaskRange, limit int) (int64, error)

	// DeleteOrphanTasks deletes exactly the tasks of q with the given keys,
	// in the same statement checking that none of the queue rows parents
	// exists; if one does (the queue was re-created) it deletes nothing.
	// The re-check is why it is not a DeleteTaskSets: a batch of orphans
	// of many queues would have to keep it per queue.
	DeleteOrphanTasks(ctx context.Context, t Table, q QueueKey, parents []QueueKey, keys []TaskKey) (int64, error)

	// DeleteQueues deletes each queue row whose range_id is still the one
	// its fence gives, and returns how many it deleted; the others changed
	// or are gone and stay as they are. A matching host that leased a
	// queue after it was listed has raised its range_id, so its row stays.
	// The fence does not protect a queue whose owner leased it before the
	// listing and has not written its row since: the grace period does.
	DeleteQueues(ctx context.Context, t Table, fences []QueueFence) (int64, error)
}

// Middleware wraps a Store, to limit, observe, gate or break its calls. A
// middleware implements every method of Store itself, without embedding
// the Store it wraps, so that a method added to Store fails to compile in
// every wrapper instead of bypassing it.
//
// # Optional interfaces
//
// A scavenger pass (package scavenger, its Config.Middleware) also calls
// optional interfaces of its store: ExecutionReader (the closed-workflow
// rule) and OddHashFinder. Their calls take the same path as Store's,
// through every middleware, with one difference: a middleware sees them
// only if the store it returns implements the interface too. A middleware
// that wraps only Store does not hide them: the pass, which applied the
// middleware and so knows the store it gave it, sends those calls past it,
// to that store. A middleware that does implement one passes each call on
// to the same interface of the store it was given, which the pass makes
// implement every optional interface it uses; where no store below
// implements one, its methods fail with an error wrapping
// errors.ErrUnsupported, and the pass does not call them.
type Middleware func(Store) Store

// Chain applies mw to s so that mw[0] is the outermost wrapper: a call
// passes through mw[0], then mw[1], and so on, then reaches s. It composes
// Store's methods only: the store it returns implements an optional
// interface only if mw[0]'s does.
func Chain(s Store, mw ...Middleware) Store {
	for i := len(mw) - 1; i >= 0; i-- {
		if mw[i] != nil {
			s = mw[i](s)
		}
	}
	return s
}

// Writer is what a matching host does to a task store. The scavenger never
// uses it.
type Writer interface {
	// CreateQueue inserts a queue row. It returns an error wrapping
	// ErrConditionFailed if the row exists.
	CreateQueue(ctx context.Context, t Table, row QueueRow) error

	// UpdateQueue replaces the row's range_id and data if its range_id is
	// still prevRangeID (compare-and-set); otherwise it returns an error
	// wrapping ErrConditionFailed.
	UpdateQueue(ctx context.Context, t Table, row QueueRow, prevRangeID int64) error

	// AppendTasks inserts tasks under the (sub)queue key target in one
	// transaction that locks the queue row owner and checks that its
	// range_id is still rangeID (the lease fence); otherwise it inserts
	// nothing and returns an error wrapping ErrConditionFailed.
	AppendTasks(ctx context.Context, t Table, owner QueueKey, rangeID int64, target QueueKey, tasks []TaskRow) error

	// CompleteTasks deletes the tasks of the (sub)queue q at or below the
	// ack level through, as matching does once it has dispatched them, and
	// returns how many it deleted.
	CompleteTasks(ctx context.Context, t Table, q QueueKey, through TaskKey) (int64, error)
}

// A CommitSharer is a Store whose writes share a commit when they run at
// once, each still returning only once it has committed: sqlstore on a
// SQLite file in a rollback journal, where a commit costs several fsyncs.
// A pass then spreads a page's queues over several jobs, so that its
// writes run at once.
type CommitSharer interface {
	// SharesCommits reports whether concurrent writes share commits.
	SharesCommits() bool
}

// A CommitSwitch is a CommitSharer whose sharing can be turned off and on
// again: a scavenger pass shares commits only at its full pace.
type CommitSwitch interface {
	CommitSharer
	// ShareCommits turns sharing on or off for the writes that start
	// after it; a shared transaction already open commits as before.
	ShareCommits(on bool)
}

// A WholeDatabaseWriter is a Store whose writes lock the whole database
// while they run (SQLite): a gentle pass there paces itself by the share of
// time it holds it, and opens no probe.
type WholeDatabaseWriter interface {
	// WritesLockDatabase reports whether a write locks the database.
	WritesLockDatabase() bool
}

// An AloneProver is a WholeDatabaseWriter that can prove that no other
// process has its database open: a gentle pass that is alone has nobody to
// leave the writer lock to, and runs at full share.
type AloneProver interface {
	// Alone reports whether no other process has the database open, as
	// proven now; when it cannot be proven, alone is false and why says
	// what is missing. A connection of this process outside the store is
	// not seen.
	Alone(ctx context.Context) (alone bool, why string, err error)
}

// A Prober is a Store that can time what the cluster's own statements
// feel: OpenProbe opens a connection of its own, outside the store's pool,
// for read-only statements that take no locks.
type Prober interface {
	// OpenProbe returns a probe, or an error wrapping
	// errors.ErrUnsupported where the engine has none (SQLite).
	OpenProbe(ctx context.Context) (Probe, error)
}

// A Probe runs matching's most frequent reads on its own connection.
type Probe interface {
	// Probe runs one round: a primary-key read of a queue row and a range
	// read of a few tasks of that queue, one the pass touches last.
	Probe(ctx context.Context) error
	Close() error
}

// Locker takes the one-scavenger-at-a-time lock of a task store.
type Locker interface {
	// Lock takes the lock. With wait it blocks until the lock is free or
	// ctx ends; without, it returns an error wrapping ErrLocked at once if
	// another scavenger holds it. The caller checks the returned Lock
	// while it works and releases it when done.
	Lock(ctx context.Context, wait bool) (Lock, error)
}

// Lock is a held one-scavenger-at-a-time lock. A lock can be lost while
// held: a server lock lives in a database session, which an administrator
// or a restart can end. Whoever holds one checks it while it works (see
// scavenger.Config.Lock) and stops when it is lost.
type Lock interface {
	// Check returns nil if the lock is still held, and an error wrapping
	// ErrLockLost if it is not or cannot be told within ctx.
	Check(ctx context.Context) error
	// Unlock releases the lock.
	Unlock() error
}

// SchemaChecker inspects a task store's schema.
type SchemaChecker interface {
	// Check returns what it found, and an error wrapping ErrSchema if the
	// v1 task tables are missing or a present task table lacks a column
	// the scavenger uses.
	Check(ctx context.Context) (SchemaInfo, error)
}
