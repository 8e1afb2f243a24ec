package scavenger

// The optional interfaces of a pass's store: store.ExecutionReader (the
// closed-workflow rule's reads) and store.OddHashFinder. Their calls go
// through the pass's middleware as Store's do (see stack and
// store.Middleware): the shutdown gate, the rate limits and the pace's
// controller implement them; a middleware of the caller's sees them if its
// store implements them, and is gone past if it does not.
//
// The pass's other optional interfaces stay off the stack on purpose:
// store.Prober's probe runs on a connection of its own to measure what the
// cluster's statements feel, a signal of the pace's controller that its
// own waits and the rate limits must not shape; store.Identifier is read
// before the pass's first statement (a checkpoint's fit), as Begin's lock
// and schema check are; store.CommitSharer, store.CommitSwitch and
// store.WholeDatabaseWriter send no statement.

import (
	"context"
	"errors"
	"fmt"

	"github.com/tqscavenger/tqscavenger/store"
)

// errNotImplemented is the error of an optional interface's method where
// no store of the stack implements the interface. The pass does not call
// it then (passStore's field is nil); a caller's middleware that does gets
// this error.
var errNotImplemented = fmt.Errorf("the store does not implement this optional interface: %w", errors.ErrUnsupported)

// passStore is a pass's store: the top of its middleware stack, and its
// optional interfaces through the same stack, each nil where no store of
// the stack implements it.
type passStore struct {
	store.Store
	exec store.ExecutionReader
	odd  store.OddHashFinder
}

// optional says which of the optional interfaces a pass uses a store
// implements.
type optional struct {
	exec, odd bool
}

func optionalOf(s store.Store) optional {
	_, exec := s.(store.ExecutionReader)
	_, odd := s.(store.OddHashFinder)
	return optional{exec: exec, odd: odd}
}

func (o optional) or(p optional) optional {
	return optional{exec: o.exec || p.exec, odd: o.odd || p.odd}
}

// executions returns s's store.ExecutionReader, or one whose every method
// fails with errNotImplemented.
func executions(s store.Store) store.ExecutionReader {
	if er, ok := s.(store.ExecutionReader); ok {
		return er
	}
	return notImplemented{}
}

// oddHashes returns s's store.OddHashFinder, or one whose method fails
// with errNotImplemented.
func oddHashes(s store.Store) store.OddHashFinder {
	if f, ok := s.(store.OddHashFinder); ok {
		return f
	}
	return notImplemented{}
}

// notImplemented is the optional interfaces of a store that has none.
type notImplemented struct{}

var (
	_ store.ExecutionReader = notImplemented{}
	_ store.OddHashFinder   = notImplemented{}
)

func (notImplemented) ClusterMetadata(context.Context) ([]store.ClusterMetadataRow, error) {
	return nil, errNotImplemented
}

func (notImplemented) ShardIDs(context.Context) ([]int32, error) { return nil, errNotImplemented }

func (notImplemented) MaxExecutionShard(context.Context) (int32, bool, error) {
	return 0, false, errNotImplemented
}

func (notImplemented) NextWorkflow(context.Context, *store.ExecutionKey) (store.ExecutionKey, bool, error) {
	return store.ExecutionKey{}, false, errNotImplemented
}

func (notImplemented) GetExecutions(context.Context, []store.ExecutionKey) ([]store.ExecutionRow, error) {
	return nil, errNotImplemented
}

func (notImplemented) GetCurrentExecutions(context.Context, []store.ExecutionKey) ([]store.CurrentExecutionRow, error) {
	return nil, errNotImplemented
}

func (notImplemented) Namespaces(context.Context) ([]store.NamespaceRow, error) {
	return nil, errNotImplemented
}

func (notImplemented) OddHashes(context.Context, store.Table, int) (store.OddHashes, error) {
	return store.OddHashes{}, errNotImplemented
}

// layer is the store a middleware below the pass's own returned (out), over
// the store it was given (in). Store's methods go to out. An optional
// interface goes to out if out implements it, and past the middleware to
// in if not: a middleware that wraps only store.Store neither sees nor
// hides those calls. It adds nothing to Store's calls, so it embeds out:
// a method added to store.Store has nothing to decide here.
type layer struct {
	store.Store // out
	in          store.Store
}

var (
	_ store.ExecutionReader = (*layer)(nil)
	_ store.OddHashFinder   = (*layer)(nil)
)

// executions is the ExecutionReader a call of l's goes to.
func (l *layer) executions() store.ExecutionReader {
	if er, ok := l.Store.(store.ExecutionReader); ok {
		return er
	}
	return executions(l.in)
}

func (l *layer) ClusterMetadata(ctx context.Context) ([]store.ClusterMetadataRow, error) {
	return l.executions().ClusterMetadata(ctx)
}

func (l *layer) ShardIDs(ctx context.Context) ([]int32, error) { return l.executions().ShardIDs(ctx) }

func (l *layer) MaxExecutionShard(ctx context.Context) (int32, bool, error) {
	return l.executions().MaxExecutionShard(ctx)
}

func (l *layer) NextWorkflow(ctx context.Context, after *store.ExecutionKey) (store.ExecutionKey, bool, error) {
	return l.executions().NextWorkflow(ctx, after)
}

func (l *layer) GetExecutions(ctx context.Context, keys []store.ExecutionKey) ([]store.ExecutionRow, error) {
	return l.executions().GetExecutions(ctx, keys)
}

func (l *layer) GetCurrentExecutions(ctx context.Context, keys []store.ExecutionKey) ([]store.CurrentExecutionRow, error) {
	return l.executions().GetCurrentExecutions(ctx, keys)
}

func (l *layer) Namespaces(ctx context.Context) ([]store.NamespaceRow, error) {
	return l.executions().Namespaces(ctx)
}

func (l *layer) OddHashes(ctx context.Context, t store.Table, limit int) (store.OddHashes, error) {
	if f, ok := l.Store.(store.OddHashFinder); ok {
		return f.OddHashes(ctx, t, limit)
	}
	return oddHashes(l.in).OddHashes(ctx, t, limit)
}
