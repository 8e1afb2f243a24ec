package cli

// The checkpoint file of run --checkpoint, and the flags that name it.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/pflag"
	"github.com/tqscavenger/tqscavenger/internal/readfile"
	"github.com/tqscavenger/tqscavenger/scavenger"
)

// loadCheckpoint reads the checkpoint at path: nil if there is none, or
// with fresh (whose positions are ignored). A file that is not a
// checkpoint, or whose checksum does not verify (none, a wrong one, a
// version that carries none), is bad input.
func loadCheckpoint(path string, fresh bool) (*scavenger.Checkpoint, error) {
	b, err := readfile.Regular(path, maxCheckpointBytes)
	if errors.Is(err, os.ErrNotExist) || (err == nil && fresh) {
		return nil, nil
	}
	if err != nil {
		return nil, usagef("--checkpoint: %w", err)
	}
	var cp scavenger.Checkpoint
	if err := json.Unmarshal(b, &cp); err != nil {
		return nil, usagef("--checkpoint %s is not a checkpoint (%v): remove it, or pass --fresh", path, err)
	}
	// A damaged, mixed-up or edited file is refused here, before the
	// database is opened. One without a checksum is refused too, though
	// a build before checksums wrote it: accepting it would make deleting
	// the field a way past the check, and --fresh costs only redone work.
	if err := cp.Verify(); err != nil {
		return nil, usagef("--checkpoint %s: %v: remove it, or pass --fresh to start over", path, err)
	}
	return &cp, nil
}

// maxCheckpointBytes bounds a checkpoint file: it holds a position per
// table walk, a few kilobytes.
const maxCheckpointBytes = 16 << 20

// checkCheckpointPath refuses, before any work, a --checkpoint the pass
// could not read or keep up to date: a path that is not a regular file
// (a directory, a device such as /dev/full, which reads without end) or
// is too large, and one whose directory is missing or cannot be written
// (tested by creating and removing a file there, as saveCheckpoint will).
func checkCheckpointPath(path string) error {
	if fi, err := os.Stat(path); err == nil {
		if !fi.Mode().IsRegular() {
			return usagef("--checkpoint %s: %v: name a file", path, readfile.ErrNotRegular)
		}
		if fi.Size() > maxCheckpointBytes {
			return usagef("--checkpoint %s: %d bytes: not a checkpoint (at most %d): remove it, or point --checkpoint at another file", path, fi.Size(), maxCheckpointBytes)
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return usagef("--checkpoint: %v", err)
	}
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, filepath.Base(path)+".probe*")
	if err != nil {
		return usagef("--checkpoint %s: its directory cannot hold it (%v): the pass could not save its progress", path, err)
	}
	f.Close()
	os.Remove(f.Name())
	return nil
}

// saveCheckpoint writes cp to path atomically: a temporary file beside it,
// synced, renamed over it, and the directory synced, so that a crash
// leaves the old checkpoint or the new one, never a part of one.
func saveCheckpoint(path string, cp scavenger.Checkpoint) error {
	b, err := json.MarshalIndent(cp, "", "  ")
	if err != nil {
		return err
	}
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	tmp := f.Name()
	_, err = f.Write(append(b, '\n'))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("checkpoint: %w", err)
	}
	if d, err := os.Open(dir); err == nil {
		// Some systems cannot sync a directory; the rename is then as
		// durable as they make it.
		d.Sync()
		d.Close()
	}
	return nil
}

// checkpointFlags are run's --checkpoint, --fresh and --checkpoint-interval.
type checkpointFlags struct {
	file  string
	fresh bool
	every time.Duration
}

func (f *checkpointFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.file, "checkpoint", "", "resume from this checkpoint file if it exists, and keep it up to date while the pass runs; a completed pass removes it")
	fs.BoolVar(&f.fresh, "fresh", false, "with --checkpoint: ignore the file's positions and start from the first row")
	durationVar(fs, &f.every, "checkpoint-interval", 0, "with --checkpoint: write it at most this often while the positions advance (default "+shortDuration(defaults.CheckpointInterval)+")")
}

// check refuses --fresh and --checkpoint-interval without a file.
func (f *checkpointFlags) check() error {
	if (f.fresh || f.every != 0) && f.file == "" {
		return usagef("--fresh and --checkpoint-interval need --checkpoint FILE")
	}
	if f.every < 0 {
		return usagef("--checkpoint-interval %s: must not be negative", f.every)
	}
	if f.file != "" {
		return checkCheckpointPath(f.file)
	}
	return nil
}

// apply makes the pass of cfg resume from the checkpoint file, if any, and
// keep it up to date.
func (f *checkpointFlags) apply(cfg *scavenger.Config) error {
	if f.file == "" {
		return nil
	}
	var err error
	if cfg.Resume, err = loadCheckpoint(f.file, f.fresh); err != nil {
		return err
	}
	cfg.Checkpoint = func(_ context.Context, c scavenger.Checkpoint) error { return saveCheckpoint(f.file, c) }
	cfg.CheckpointInterval = f.every
	return nil
}

// refused returns the error of a pass scavenger.Begin or Run refused
// before any work: a checkpoint of another pass (scavenger.Checkpoint.Fits,
// at Begin) or whose positions lie past its tables' last rows (at Run) is
// a usage error.
func (f *checkpointFlags) refused(err error) error {
	if errors.Is(err, scavenger.ErrCheckpointMismatch) {
		return usagef("--checkpoint %s: %v (pass --fresh to start over, or point --checkpoint at another file)", f.file, err)
	}
	return err
}

// finish returns the error of a pass that ended with st and err: a
// checkpoint refused is a usage error, and a completed pass's checkpoint
// file is removed, as nothing is left to resume.
func (f *checkpointFlags) finish(st scavenger.Stats, err error) error {
	if errors.Is(err, scavenger.ErrCheckpointMismatch) {
		return f.refused(err)
	}
	if err == nil && f.file != "" && (st.Outcome == scavenger.Completed || st.Outcome == scavenger.CompletedBadRows) {
		if rerr := os.Remove(f.file); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
			err = fmt.Errorf("remove the completed pass's checkpoint: %w", rerr)
		}
	}
	return err
}
