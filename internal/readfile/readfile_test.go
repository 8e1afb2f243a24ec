package readfile_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/tqscavenger/tqscavenger/internal/readfile"
)

func TestRegular(t *testing.T) {
	dir := t.TempDir()
	small := filepath.Join(dir, "small")
	big := filepath.Join(dir, "big")
	os.WriteFile(small, []byte("abc"), 0o600)
	os.WriteFile(big, make([]byte, 2048), 0o600)
	for _, c := range []struct {
		path string
		want error
	}{
		{small, nil},
		{big, readfile.ErrTooLarge},
		{dir, readfile.ErrNotRegular},
		{"/dev/full", readfile.ErrNotRegular},
		{"/dev/zero", readfile.ErrNotRegular},
		{filepath.Join(dir, "missing"), os.ErrNotExist},
	} {
		_, err := readfile.Regular(c.path, 1024)
		if (c.want == nil) != (err == nil) || (c.want != nil && !errors.Is(err, c.want)) {
			t.Errorf("Regular(%s) = %v, want %v", c.path, err, c.want)
		}
	}
}
