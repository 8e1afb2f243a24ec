package scavenger

// Trusting a checkpoint: its checksum, and its positions against the
// tables they are positions in.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/tqscavenger/tqscavenger/store"
)

// ErrCheckpointUnverified is wrapped by the error of a checkpoint whose
// checksum does not verify: it has none (removed, or written by a build
// before checksums), it is of a version that carries none, or the one it
// carries does not match its contents (ErrCheckpointCorrupt). A
// checkpoint is trusted only when it verifies: one without a checksum
// would let anyone who drops the field resume a pass past rows it never
// examined. It wraps ErrCheckpointMismatch, so a host that refuses (or
// starts afresh from) a checkpoint of another pass does the same with it.
var ErrCheckpointUnverified = fmt.Errorf("%w: its checksum does not verify", ErrCheckpointMismatch)

// ErrCheckpointCorrupt is wrapped by the error of a checkpoint whose
// checksum does not match its contents: a file damaged on disk, mixed up
// with another or edited by hand. It wraps ErrCheckpointUnverified.
var ErrCheckpointCorrupt = fmt.Errorf("%w: it does not match its contents (damaged, edited, or written by a newer build with fields this one does not know)", ErrCheckpointUnverified)

// Sum returns the checksum of cp's contents (everything but Checksum):
// "sha256:" and the hex of the SHA-256 of their JSON encoding. The
// encoding of a struct is fixed by its fields, so the sum of a
// checkpoint read back from its JSON is the one it was written with.
//
// The checksum finds damage and mix-ups (a file cut short, a byte
// flipped, a field changed by a tool that does not know it), not a
// deliberate edit: anyone who can write the file can compute it again.
// It is no signature, and needs none: a checkpoint holds positions only,
// so an edited one can make a pass skip work, never delete a live row.
func (cp Checkpoint) Sum() string {
	cp.Checksum = ""
	b, err := json.Marshal(cp)
	if err != nil {
		// Nothing in a Checkpoint fails to encode.
		panic(fmt.Sprintf("scavenger: encode a checkpoint: %v", err))
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// firstChecksumVersion is the first checkpoint version that carries a
// checksum (its builds since ae00dcf write one; version 0 was never
// written, so a checkpoint of version 0 or without one is not a pass's).
const firstChecksumVersion = 1

// Verify reports whether cp's checksum verifies: nil if it matches cp's
// contents; otherwise an error wrapping ErrCheckpointUnverified that says
// why: cp is of a version that carries no checksum, it has none, or it
// does not match (ErrCheckpointCorrupt). A checkpoint of a version newer
// than this build's is refused here too (ErrCheckpointMismatch alone):
// this build cannot tell what its checksum covers.
func (cp *Checkpoint) Verify() error {
	switch {
	case cp.Version < firstChecksumVersion:
		return fmt.Errorf("%w: it is of version %d, which carries no checksum (this build reads version %d)", ErrCheckpointUnverified, cp.Version, CheckpointVersion)
	case cp.Version > CheckpointVersion:
		return fmt.Errorf("%w: it is of version %d, this build reads version %d", ErrCheckpointMismatch, cp.Version, CheckpointVersion)
	case cp.Checksum == "":
		return fmt.Errorf("%w: it has none (removed, or written by a build before checksums): a checkpoint is trusted only when its checksum verifies", ErrCheckpointUnverified)
	}
	if got := cp.Sum(); got != cp.Checksum {
		return fmt.Errorf("%w (it says %s, its contents sum to %s)", ErrCheckpointCorrupt, cp.Checksum, got)
	}
	return nil
}

// FitsTables reports why the pass may not resume from cp's positions in
// the tables of st (an error wrapping ErrCheckpointMismatch), or nil: a
// row of each position's table lies at or after it (see checkPositions).
// Run asks it of Config.Resume before any work; a host that would rather
// start afresh than be refused (a worker's retried partition) asks it,
// with Fits, before it sets the pass up. An error not wrapping
// ErrCheckpointMismatch is the store's: the positions were not checked.
func (cp *Checkpoint) FitsTables(ctx context.Context, st store.Store) error {
	tables, err := st.Tables(ctx)
	if err != nil {
		return fmt.Errorf("find task tables: %w", err)
	}
	return checkPositions(ctx, st, cp, tables, func(_ string, f func(context.Context) error) error { return f(ctx) })
}

// checkPositions refuses (ErrCheckpointMismatch) a position of cp in one
// of tables that lies past the last row of its walk's table: a position
// is the key of a row the pass finished, so a row at or after it is in
// the table unless the table changed since (restored from a backup, its
// last rows deleted by another pass) or the position was not written by
// a pass. Resuming from it would examine nothing of the walk while the
// rows before it were perhaps never examined. A walk's mark is done once
// its last row is finished (walkMark.advance), so a pass that deletes its
// table's last row leaves a done walk, not a position past the end. retry
// runs each check (the pass's retries, or none).
func checkPositions(ctx context.Context, st store.Store, cp *Checkpoint, tables []store.Table, retry func(op string, f func(context.Context) error) error) error {
	if cp == nil {
		return nil
	}
	for _, t := range tables {
		for _, w := range []Walk{WalkQueues, WalkOrphans} {
			pos := cp.position(w, t)
			if pos.Done || pos.After == nil {
				continue
			}
			var past bool
			err := retry("check the checkpoint's positions", func(ctx context.Context) (err error) {
				past, err = pastLastRow(ctx, st, w, t, *pos.After)
				return err
			})
			if err != nil {
				return fmt.Errorf("check the checkpoint's position %s: %w", pos, err)
			}
			if past {
				table := t.QueueTable()
				if w == WalkOrphans {
					table = t.TaskTable()
				}
				return fmt.Errorf("%w: position %s lies past the last row of %s (no row at or after it): the table changed since the checkpoint was written, or the pass did not write it", ErrCheckpointMismatch, pos, table)
			}
		}
	}
	return nil
}

// pastLastRow reports whether no row of walk w's table of t lies at or
// after k: none after it, and none at it.
func pastLastRow(ctx context.Context, st store.Store, w Walk, t store.Table, k store.QueueKey) (bool, error) {
	if w == WalkOrphans {
		refs, err := st.ListTaskQueueIDs(ctx, t, &k, 1)
		if err != nil || len(refs) > 0 {
			return false, err
		}
		tasks, err := st.ReadTasks(ctx, t, k, nil, 1)
		return len(tasks) == 0, err
	}
	rows, err := st.ListQueues(ctx, t, &k, 1)
	if err != nil || len(rows) > 0 {
		return false, err
	}
	_, err = st.GetQueue(ctx, t, k)
	if errors.Is(err, store.ErrNotFound) {
		return true, nil
	}
	return false, err
}
