//go:build unix && !linux

// This file owns the range lock on Unix systems without open file
// description locks: the whole range file, exclusively.

package sqlstore

import (
	"os"

	"github.com/tqscavenger/tqscavenger/store"
)

// tryLockRange locks all of f exclusively (flock), whatever r: ranges of
// one database then exclude each other even when disjoint, which is safe
// (POSIX record locks would be per process, and dropped by closing any
// descriptor of the file).
func tryLockRange(f *os.File, _ store.HashRange) (busy bool, release func() error, err error) {
	busy, err = tryLockFile(f)
	return busy, f.Close, err
}
