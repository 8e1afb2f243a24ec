package scavenger

// The one door every host (the CLI's run, the daemon, the Temporal
// activity) goes through to make a pass: Begin takes the lock of the
// pass's part of the range_hash space, checks the schema, fills in what
// the schema check decides and hands back a Pass that holds the lock; the
// host runs it and closes it. What stays with the host is its own: flags
// and output, schedule and metrics, heartbeats and retries. NewUnlocked is
// the side door, for the two hosts that run a pass without the lock on
// purpose (report's dry runs, demo).

import (
	"context"
	"sync"

	"github.com/tqscavenger/tqscavenger/store"
)

// PassDB is what a pass needs of a database: the task store it scavenges,
// the schema check before it, the lock of a range of the range_hash space
// (a whole pass locks store.FullRange) and the database's identity, which
// checkpoints carry so that one is never resumed against another
// database. *sqlstore.DB implements it.
type PassDB interface {
	store.Store
	store.SchemaChecker
	store.RangeLocker
	store.Identifier
}

// PassOptions are how Begin sets up a pass. The zero value is the
// default.
type PassOptions struct {
	// WaitLock makes Begin wait for the lock, until ctx ends, instead of
	// failing at once with an error wrapping store.ErrLocked.
	WaitLock bool
	// TablesAtRun leaves a nil Config.Tables nil, so the pass scavenges
	// the tables present when it starts, rather than the ones the schema
	// check found usable (the default): for a host whose checkpoints'
	// settings digests must carry the tables as it was told them (the
	// Temporal activity's pass descriptions).
	TablesAtRun bool
}

// SetupStep names the step of Begin that failed.
type SetupStep string

// The steps of Begin, in order.
const (
	StepLock       SetupStep = "lock"
	StepSchema     SetupStep = "schema check"
	StepNamespaces SetupStep = "namespace names"
	// StepResume: the database's identity could not be read, or
	// Config.Resume does not fit the pass (ErrCheckpointMismatch).
	StepResume SetupStep = "resume"
)

// SetupError is Begin's error: the step that failed and its error, which
// it wraps (store.ErrLocked, store.ErrSchema, ErrCheckpointMismatch, a
// connection's error...).
// Its message is the step's error's, unchanged.
type SetupError struct {
	Step SetupStep
	Err  error
}

func (e *SetupError) Error() string { return e.Err.Error() }
func (e *SetupError) Unwrap() error { return e.Err }

// Pass is a pass set up by Begin: it holds the lock of its part of the
// range_hash space until Close. Its Scavenger (Stats, Tune, Shutdown) may
// be used from any goroutine while Run runs.
type Pass struct {
	*Scavenger
	lock      store.Lock
	closeOnce sync.Once
	closeErr  error
}

// Begin sets up a pass of cfg over db, in the order every host needs:
//
//  1. the lock of cfg.Partition's range (store.FullRange for a whole
//     pass), waiting for it only with opts.WaitLock; a dry run takes
//     none: its store refuses every write (dryRunStore), so it neither
//     waits for a real pass nor keeps one out;
//  2. the schema check, under the lock, so a database that cannot be
//     scavenged is refused before any statement of the pass; a
//     transient error (a connection killed while it runs) is retried,
//     at most SchemaCheckAttempts attempts within Pace.RetryFor, each
//     retry logged (MsgSchemaRetry);
//  3. cfg.NamespaceNames resolved into ids through the namespaces table
//     (ResolveNamespaces; db must then be a store.NamespaceLister, as
//     *sqlstore.DB is), once per pass;
//  4. the defaults: a nil cfg.Tables becomes the tables the check found
//     usable (unless opts.TablesAtRun), cfg.Lock the lock just taken (none
//     for a dry run), so the pass checks it as it goes and fails if it is
//     lost;
//  5. the checkpoints: with cfg.Resume or cfg.Checkpoint, the database's
//     identity, the one the pass's checkpoints carry, is read once, and
//     cfg.Resume must fit the pass (Checkpoint.Fits): a checkpoint of
//     another database, partition or rules is refused here, wrapping
//     ErrCheckpointMismatch, before any statement of the pass.
//
// A failed step returns a *SetupError, the lock released. The caller
// runs the Pass and then closes it:
//
//	p, err := scavenger.Begin(ctx, db, cfg, scavenger.PassOptions{})
//	if err != nil {
//		return err
//	}
//	defer p.Close()
//	st, err := p.Run(ctx)
//
// cfg itself is checked by Run, as for a Scavenger made by NewUnlocked.
func Begin(ctx context.Context, db PassDB, cfg Config, opts PassOptions) (*Pass, error) {
	var lock store.Lock = noLock{}
	if !cfg.DryRun {
		l, err := db.LockRange(ctx, cfg.Partition.Range(), opts.WaitLock)
		if err != nil {
			return nil, &SetupError{Step: StepLock, Err: err}
		}
		lock, cfg.Lock = l, l
	}
	info, err := checkSchema(ctx, db, cfg)
	if err != nil {
		lock.Unlock()
		return nil, &SetupError{Step: StepSchema, Err: err}
	}
	if cfg.Rules, err = ResolveNamespaces(ctx, namespaceLister(db), cfg.Rules); err != nil {
		lock.Unlock()
		return nil, &SetupError{Step: StepNamespaces, Err: err}
	}
	if cfg.Tables == nil && !opts.TablesAtRun {
		cfg.Tables = info.Tables
	}
	s := New(db, cfg)
	if err := s.identify(ctx, db); err != nil {
		lock.Unlock()
		return nil, &SetupError{Step: StepResume, Err: err}
	}
	return &Pass{Scavenger: s, lock: lock}, nil
}

// identify names the database of s's checkpoints, db's identity, read
// once here if the pass resumes or writes checkpoints (Run reads it no
// more), and refuses a Config.Resume that does not fit the pass
// (Checkpoint.Fits), before any statement of the pass.
func (s *Scavenger) identify(ctx context.Context, db store.Identifier) error {
	s.ident = db
	if s.cfg.Resume == nil && s.cfg.Checkpoint == nil {
		return nil
	}
	id, err := s.identity(ctx)
	if err != nil {
		return err
	}
	s.ident = knownIdentity(id)
	if s.cfg.Resume != nil {
		return s.cfg.Resume.Fits(s.cfg, id)
	}
	return nil
}

// knownIdentity is a database identity already read.
type knownIdentity string

func (k knownIdentity) Identity(context.Context) (string, error) { return string(k), nil }

// Close releases the pass's lock, once: later calls return the first's
// error. Close a pass only once its Run has returned.
func (p *Pass) Close() error {
	p.closeOnce.Do(func() { p.closeErr = p.lock.Unlock() })
	return p.closeErr
}

// noLock is the lock of a pass that takes none: a dry run's.
type noLock struct{}

func (noLock) Unlock() error               { return nil }
func (noLock) Check(context.Context) error { return nil }

// NewUnlocked returns a Scavenger for st that runs passes without any of
// Begin's steps. It takes no lock: a real pass (not a dry run) it runs
// may delete beside a pass of run, serve or the Temporal worker over the
// same rows. It checks no schema: a database Begin would refuse is not
// refused before the pass starts. Config.NamespaceNames must already be
// ids (ResolveNamespaces: Run refuses names with ErrUnresolvedNamespaces),
// and Config.Resume is checked by Run. An invalid cfg is reported by Run.
//
// It is for the two hosts that run a pass without the lock on purpose.
// report's dry runs read the plain store.Store that report.Take is given
// (the command checks the schema once, when it opens the database): they
// write nothing, and must never wait for the lock while serve's pass holds
// it. demo's pass runs over a SQLite file that demo has just created and
// that nothing else has open. Every other host, and every embedder, sets a
// pass up with Begin.
func NewUnlocked(st store.Store, cfg Config) *Scavenger {
	return New(st, cfg)
}
