// This file owns the range lock on Linux: open file description locks.

package sqlstore

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"

	"github.com/tqscavenger/tqscavenger/store"
)

// tryLockRange takes an exclusive lock of the bytes [r.Lo, r.Hi] of f
// without waiting (F_OFD_SETLK: owned by the open file, dropped when it is
// closed or the process dies). busy reports that another open file holds
// an overlapping lock.
func tryLockRange(f *os.File, r store.HashRange) (busy bool, release func() error, err error) {
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: 0, Start: int64(r.Lo), Len: int64(r.Hi) - int64(r.Lo) + 1}
	err = unix.FcntlFlock(f.Fd(), unix.F_OFD_SETLK, &lk)
	if err != nil {
		return errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EACCES), nil, err
	}
	return false, f.Close, nil
}
