//go:build unix

// This file owns the file lock on Unix: flock(2).

package sqlstore

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// tryLockFile takes an exclusive flock on f without waiting. busy reports
// that another open file holds it.
func tryLockFile(f *os.File) (busy bool, err error) {
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	return errors.Is(err, syscall.EWOULDBLOCK), err
}

// tryLockFileShared takes a shared flock on f without waiting.
func tryLockFileShared(f *os.File) (busy bool, err error) {
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB)
	return errors.Is(err, syscall.EWOULDBLOCK), err
}

// unlockFile releases the lock by closing f: the lock belongs to the open
// file.
func unlockFile(f *os.File) error { return f.Close() }

// fileIdentity names the file at path (following symlinks) by its device
// and inode, from a stat: it never opens the file (see lockSQLite).
func fileIdentity(path string) (string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return "", fmt.Errorf("no device and inode for %s", path)
	}
	return fmt.Sprintf("dev%x-ino%x", uint64(st.Dev), uint64(st.Ino)), nil
}
