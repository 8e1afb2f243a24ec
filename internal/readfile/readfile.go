// Package readfile reads the files that flags name with a bound: a
// regular file (not a device, a FIFO or a directory, which can be read
// without end or block forever) of at most a given size, so that no flag
// can make a command read without limit.
package readfile

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
)

// ErrNotRegular is wrapped by Regular's error for a path that is not a
// regular file.
var ErrNotRegular = errors.New("not a regular file")

// ErrTooLarge is wrapped by Regular's error for a file over its limit.
var ErrTooLarge = errors.New("file too large")

// Regular reads the regular file at path, of at most limit bytes. Its
// errors name the path, never the content. A missing file's error wraps
// os.ErrNotExist.
//
// It never blocks on what it is named: the mode is checked before the
// open (an open of a FIFO without a writer blocks until one comes, and a
// blocked open heeds no signal), the open itself does not block (a FIFO
// swapped in after the check is opened non-blocking, then refused), and
// a regular file of at most limit bytes is read at once.
func Regular(path string, limit int64) ([]byte, error) {
	if err := Check(path, limit); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// Checked again on the file opened, which may have been swapped in
	// since.
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if err := fits(path, fi, limit); err != nil {
		return nil, err
	}
	// The file may grow while it is read: the limit holds whatever Stat said.
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%s: %w: more than the %d bytes allowed", path, ErrTooLarge, limit)
	}
	return b, nil
}

// Check refuses, without opening it, a path that is no regular file or is
// larger than limit: what Regular would refuse before reading it. It is
// for a file that another package reads itself, checked first.
func Check(path string, limit int64) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	return fits(path, fi, limit)
}

// fits refuses fi, the file of path, if it is no regular file or is
// larger than limit.
func fits(path string, fi os.FileInfo, limit int64) error {
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s: %w (%s)", path, ErrNotRegular, kind(fi.Mode()))
	}
	if fi.Size() > limit {
		return fmt.Errorf("%s: %w: %d bytes, more than the %d allowed", path, ErrTooLarge, fi.Size(), limit)
	}
	return nil
}

// kind names what a non-regular file is.
func kind(m os.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&os.ModeDevice != 0:
		return "a device"
	case m&os.ModeNamedPipe != 0:
		return "a named pipe"
	case m&os.ModeSocket != 0:
		return "a socket"
	}
	return "mode " + m.String()
}
