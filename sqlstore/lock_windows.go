// This file owns the file lock on Windows: LockFileEx.

package sqlstore

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/windows"

	"github.com/tqscavenger/tqscavenger/store"
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

// tryLockFileShared takes a shared lock on f without waiting.
func tryLockFileShared(f *os.File) (busy bool, err error) {
	err = windows.LockFileEx(windows.Handle(f.Fd()), windows.LOCKFILE_FAIL_IMMEDIATELY,
		0, allBytes, allBytes, new(windows.Overlapped))
	return errors.Is(err, windows.ERROR_LOCK_VIOLATION), err
}

// tryLockRange takes an exclusive lock of the bytes [r.Lo, r.Hi] of f
// without waiting: LockFileEx locks byte ranges per handle.
func tryLockRange(f *os.File, r store.HashRange) (busy bool, release func() error, err error) {
	n := uint64(r.Hi) - uint64(r.Lo) + 1
	lenLow, lenHigh := uint32(n), uint32(n>>32)
	ov := func() *windows.Overlapped { return &windows.Overlapped{Offset: r.Lo} }
	h := windows.Handle(f.Fd())
	err = windows.LockFileEx(h, windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY, 0, lenLow, lenHigh, ov())
	if err != nil {
		return errors.Is(err, windows.ERROR_LOCK_VIOLATION), nil, err
	}
	return false, func() error {
		err := windows.UnlockFileEx(h, 0, lenLow, lenHigh, ov())
		return errors.Join(err, f.Close())
	}, nil
}

// unlockFile releases the lock and closes f. Closing alone would release it
// too, but Windows does so when it gets round to it, not at once.
func unlockFile(f *os.File) error {
	err := windows.UnlockFileEx(windows.Handle(f.Fd()), 0, allBytes, allBytes, new(windows.Overlapped))
	return errors.Join(err, f.Close())
}

// fileIdentity names the file at path (following symlinks) by its volume
// serial number and file index, which hard links share. The handle it
// opens asks for no access: on Windows a lock belongs to the handle that
// took it, so closing this one drops none of SQLite's.
func fileIdentity(path string) (string, error) {
	p, err := windows.UTF16PtrFromString(path)
	if err != nil {
		return "", err
	}
	h, err := windows.CreateFile(p, 0, windows.FILE_SHARE_READ|windows.FILE_SHARE_WRITE|windows.FILE_SHARE_DELETE,
		nil, windows.OPEN_EXISTING, windows.FILE_FLAG_BACKUP_SEMANTICS, 0)
	if err != nil {
		return "", err
	}
	defer windows.CloseHandle(h)
	var info windows.ByHandleFileInformation
	if err := windows.GetFileInformationByHandle(h, &info); err != nil {
		return "", err
	}
	return fmt.Sprintf("vol%08x-idx%08x%08x", info.VolumeSerialNumber, info.FileIndexHigh, info.FileIndexLow), nil
}
