// This file owns the file lock on Windows: LockFileEx.

package sqlstore

import (
	"errors"
	"os"

	"golang.org/x/sys/windows"
)

// allBytes locks the whole file, as far as it may ever grow.
const allBytes = ^uint32(0)

// tryLockFile takes an exclusive lock on f without waiting. busy reports
// that another handle holds it.
func tryLockFile(f *os.File) (busy bool, err error) {
	err = windows.LockFileEx(windows.Handle(f.Fd()), windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY,
		0, allBytes, allBytes, new(windows.Overlapped))
	return errors.Is(err, windows.ERROR_LOCK_VIOLATION), err
}

// unlockFile releases the lock and closes f. Closing alone would release it
// too, but Windows does so when it gets round to it, not at once.
func unlockFile(f *os.File) error {
	err := windows.UnlockFileEx(windows.Handle(f.Fd()), 0, allBytes, allBytes, new(windows.Overlapped))
	return errors.Join(err, f.Close())
}
