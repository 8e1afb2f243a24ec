//go:build unix

// This file owns the file lock on Unix: flock(2).

package sqlstore

import (
	"errors"
	"os"
	"syscall"
)

// tryLockFile takes an exclusive flock on f without waiting. busy reports
// that another open file holds it.
func tryLockFile(f *os.File) (busy bool, err error) {
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	return errors.Is(err, syscall.EWOULDBLOCK), err
}

// unlockFile releases the lock by closing f: the lock belongs to the open
// file.
func unlockFile(f *os.File) error { return f.Close() }
