//go:build unix

package readfile_test

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/tqscavenger/tqscavenger/internal/readfile"
)

func TestRegular(t *testing.T) {
	dir := t.TempDir()
	small := filepath.Join(dir, "small")
	big := filepath.Join(dir, "big")
	os.WriteFile(small, []byte("abc"), 0o600)
	os.WriteFile(big, make([]byte, 2048), 0o600)
	// A FIFO nobody writes to: an open of it would block for ever.
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path string
		want error
	}{
		{small, nil},
		{big, readfile.ErrTooLarge},
		{dir, readfile.ErrNotRegular},
		{"/dev/full", readfile.ErrNotRegular},
		{"/dev/zero", readfile.ErrNotRegular},
		{fifo, readfile.ErrNotRegular},
		{filepath.Join(dir, "missing"), os.ErrNotExist},
	} {
		_, err := readfile.Regular(c.path, 1024)
		if (c.want == nil) != (err == nil) || (c.want != nil && !errors.Is(err, c.want)) {
			t.Errorf("Regular(%s) = %v, want %v", c.path, err, c.want)
		}
		if err := readfile.Check(c.path, 1024); (c.want == nil) != (err == nil) || (c.want != nil && !errors.Is(err, c.want)) {
			t.Errorf("Check(%s) = %v, want %v", c.path, err, c.want)
		}
	}
}
