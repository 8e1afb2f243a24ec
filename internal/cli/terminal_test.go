package cli

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// TestIsTerminal: /dev/null is a character device, not a terminal, so a
// run under a service manager with stderr on /dev/null prints no progress.
func TestIsTerminal(t *testing.T) {
	devNull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer devNull.Close()
	file, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	for _, c := range []struct {
		name string
		w    io.Writer
	}{
		{"/dev/null", devNull},
		{"a regular file", file},
		{"a buffer", &bytes.Buffer{}},
	} {
		if isTerminal(c.w) {
			t.Errorf("%s taken for a terminal", c.name)
		}
	}
}
