// This file owns group commit: on a SQLite file in a rollback journal,
// the writes of the store's concurrent calls share one write transaction,
// so that several deletes pay for one commit.

package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tqscavenger/tqscavenger/store"
)

// A commit in a rollback journal writes and syncs the journal, syncs the
// file and deletes the journal: four fsyncs, milliseconds on most disks,
// against none in WAL with synchronous=NORMAL. One statement per commit
// made a pass's deletes pay that each (301 commits, 1,204 fsyncs for 300
// queues of 1,000 tasks).
//
// groupCommit lets concurrent calls share a commit without changing what a
// call means: a call that writes still returns only once its statement has
// committed (or with an error, having changed nothing that stays), so the
// scavenger's counts and its stop on a lost lock hold as before. The first
// write that finds no open group begins one (BEGIN IMMEDIATE on the
// store's one connection); while it is open, the store's writes run on
// that connection, inside it, and its reads wait for it (see DB.query); it
// commits as soon as no statement of it is running, or, once it is budget
// old, as soon as those running end. The write lock is so held for at most the budget, plus the
// longest statement, plus the commit. A group takes only as many writes as
// there are calls at once (a caller waits for its commit before its next
// statement): with the scavenger's 4 workers, about 4 deletes per commit.
//
// It is off unless Options.WriteTxBudget is set. Beside a live Temporal
// 1.32 server on a rollback-journal file (the interop suite with
// TQS_INTEROP_SQLITE_JOURNAL=delete), the server's workflows took 1m50s
// with it where they took 1m5s without a scavenger and 1m6s with
// tqscavenger committing each statement, and matching's UpdateTaskQueue met
// SQLITE_BUSY 21 times against 2: Temporal's SQLite plugin begins deferred
// transactions, which fail at once, without waiting, when they try to
// write while another connection holds the write lock, and a shared
// transaction holds it for longer stretches than single statements do.
// On a copy of a file that no Temporal server uses, it makes a pass's
// commits as few as the raw bound's.
//
// A write that fails (an interrupted DELETE rolls SQLite's whole
// transaction back) fails the group: the writes after it do not run (they
// would commit on their own), the group rolls back, and every write in it
// fails with an error wrapping store.ErrTransient, to be retried.
type groupCommit struct {
	db      *sql.DB
	budget  time.Duration
	timeout time.Duration // bounds a commit's wait for the lock: the busy timeout and then some

	mu  sync.Mutex
	cur *txGroup // the group new statements join; nil when none is open

	// commits counts the groups committed, writes the writes they held.
	commits, writes atomic.Int64
	// statements is the store's count, which counts a commit as one.
	statements *atomic.Int64
}

// txGroup is one shared write transaction.
type txGroup struct {
	ready    chan struct{} // closed once BEGIN IMMEDIATE has returned
	conn     *sql.Conn     // set before ready is closed
	beginErr error         // set before ready is closed
	begun    time.Time     // set before ready is closed

	// Guarded by groupCommit.mu.
	inflight int  // statements that joined and have not left
	writes   int  // writes that joined
	closed   bool // takes no more statements

	// execMu runs one write at a time, so that a write that fails the
	// group does so before the next write runs.
	execMu sync.Mutex
	failed error // the first write's error (execMu)

	done chan struct{} // closed once committed or rolled back
	err  error         // set before done is closed: why its writes did not commit
}

func newGroupCommit(db *sql.DB, budget, busy time.Duration, statements *atomic.Int64) *groupCommit {
	return &groupCommit{db: db, budget: budget, timeout: busy + rollbackTimeout, statements: statements}
}

// SharesCommits implements store.CommitSharer: true on a SQLite file in a
// rollback journal opened with Options.WriteTxBudget, unless ShareCommits
// turned it off.
func (s *DB) SharesCommits() bool { return s.group != nil && !s.unshared.Load() }

// ShareCommits implements store.CommitSwitch: it turns group commit off
// (every write commits on its own, as without Options.WriteTxBudget) or on
// again, for the writes that start after it. A scavenger pass turns it on
// only at its full pace. Where the store cannot share commits it does
// nothing.
func (s *DB) ShareCommits(on bool) { s.unshared.Store(!on) }

var _ store.CommitSwitch = (*DB)(nil)

// errGroupFailed is what the writes of a group that rolled back return
// when their own statement did not fail.
var errGroupFailed = errors.New("rolled back with its shared write transaction, in which another statement failed")

// join returns the open group for a write, or begins one where none is
// open. The caller must call leave once its statement is done.
func (gc *groupCommit) join(ctx context.Context) (*txGroup, error) {
	gc.mu.Lock()
	g := gc.cur
	if g != nil && !g.begun.IsZero() && time.Since(g.begun) >= gc.budget {
		g.closed, gc.cur, g = true, nil, nil // past its budget: it ends when its statements do
	}
	if g == nil {
		g = &txGroup{ready: make(chan struct{}), done: make(chan struct{}), inflight: 1, writes: 1}
		gc.cur = g
		gc.mu.Unlock()
		gc.begin(ctx, g)
	} else {
		g.inflight++
		g.writes++
		gc.mu.Unlock()
		select {
		case <-g.ready:
		case <-ctx.Done():
			gc.leave(g)
			return nil, ctx.Err()
		}
	}
	if g.beginErr != nil {
		gc.leave(g)
		return nil, g.beginErr
	}
	return g, nil
}

// begin takes the store's connection (waiting, as every statement does,
// for the group before to commit) and begins the group's transaction.
func (gc *groupCommit) begin(ctx context.Context, g *txGroup) {
	conn, err := gc.db.Conn(ctx)
	if err == nil {
		if _, err = conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
			discard(conn)
		}
	}
	gc.mu.Lock()
	if err != nil {
		g.beginErr = err
		g.closed = true
		if gc.cur == g {
			gc.cur = nil
		}
	} else {
		g.conn = conn
	}
	g.begun = time.Now()
	gc.mu.Unlock()
	close(g.ready)
}

// leave ends a statement's part in g; the last to leave a group ends it.
func (gc *groupCommit) leave(g *txGroup) {
	gc.mu.Lock()
	g.inflight--
	last := g.inflight == 0
	if last {
		g.closed = true
		if gc.cur == g {
			gc.cur = nil
		}
	}
	gc.mu.Unlock()
	if last {
		gc.end(g)
	}
}

// end commits g, or rolls it back if a write in it failed, and returns
// its connection to the pool.
func (gc *groupCommit) end(g *txGroup) {
	defer close(g.done)
	if g.conn == nil {
		g.err = g.beginErr
		return
	}
	// The commit must run whatever became of the calls whose writes it
	// holds: they are waiting for it.
	ctx, cancel := context.WithTimeout(context.Background(), gc.timeout)
	defer cancel()
	if g.failed == nil {
		gc.statements.Add(1)
		_, err := g.conn.ExecContext(ctx, "COMMIT")
		if err == nil {
			gc.commits.Add(1)
			gc.writes.Add(int64(g.writes))
			g.conn.Close()
			return
		}
		g.err = fmt.Errorf("commit: %w", err)
	} else {
		g.err = mark(fmt.Errorf("%w: %v", errGroupFailed, g.failed), store.ErrTransient)
	}
	// After a failed statement SQLite may have rolled back already; a
	// connection whose rollback fails is closed, not reused.
	if _, err := g.conn.ExecContext(ctx, "ROLLBACK"); err != nil && g.failed == nil {
		discard(g.conn)
		return
	}
	g.conn.Close()
}

// exec runs a write in a group and returns its rows affected once the
// group has committed.
func (gc *groupCommit) exec(ctx context.Context, q string, args []any) (int64, error) {
	g, err := gc.join(ctx)
	if err != nil {
		return 0, err
	}
	var n int64
	g.execMu.Lock()
	if g.failed != nil {
		err = errGroupFailed
	} else {
		var res sql.Result
		if res, err = g.conn.ExecContext(ctx, q, args...); err == nil {
			n, err = res.RowsAffected()
		}
		if err != nil {
			g.failed = err
		}
	}
	g.execMu.Unlock()
	gc.leave(g)
	<-g.done
	switch {
	case err != nil && !errors.Is(err, errGroupFailed):
		return 0, err // the statement's own error, as without a group
	case g.err != nil:
		return 0, g.err
	}
	return n, nil
}
