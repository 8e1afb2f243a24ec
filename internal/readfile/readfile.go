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
)

// ErrNotRegular is wrapped by Regular's error for a path that is not a
// regular file.
var ErrNotRegular = errors.New("not a regular file")

// ErrTooLarge is wrapped by Regular's error for a file over its limit.
var ErrTooLarge = errors.New("file too large")

// Regular reads the regular file at path, of at most limit bytes. Its
// errors name the path, never the content. A missing file's error wraps
// os.ErrNotExist.
func Regular(path string, limit int64) ([]byte, error) {
	// Checked before the open, which would block on a FIFO, and after it
	// on the file opened, which may have been swapped in between.
	if fi, err := os.Stat(path); err != nil {
		return nil, err
	} else if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: %w (%s)", path, ErrNotRegular, kind(fi.Mode()))
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: %w (%s)", path, ErrNotRegular, kind(fi.Mode()))
	}
	if fi.Size() > limit {
		return nil, fmt.Errorf("%s: %w: %d bytes, more than the %d allowed", path, ErrTooLarge, fi.Size(), limit)
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
