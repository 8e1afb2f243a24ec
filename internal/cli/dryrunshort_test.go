package cli

import (
	"bytes"
	"io"
	"path/filepath"
	"strings"
	"testing"
)

// TestDryRunShorthand is issue 42's finding 7: the docs say -n is
// --dry-run, as in make and rsync, and run -n was refused. It is a dry
// run: it counts, deletes nothing, and a real pass after it deletes what
// it counted.
func TestDryRunShorthand(t *testing.T) {
	path := filepath.Join(t.TempDir(), "n.db")
	if code := Main([]string{"seed", "--db", path, "--queues", "3", "--tasks", "10", "--expired", "1", "--no-expiry", "0"}, io.Discard, io.Discard); code != 0 {
		t.Fatalf("seed: exit %d", code)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "-n", "--db", path, "--progress", "never", "--log-level", "error"}, "would delete 30"},
		{[]string{"run", "--db", path, "--progress", "never", "--log-level", "error"}, "deleted 30"},
	} {
		var out, errOut bytes.Buffer
		if code := Main(c.args, &out, &errOut); code != ExitOK || !strings.Contains(out.String(), c.want) {
			t.Errorf("%v: exit %d, want %q in:\n%s%s", c.args, code, c.want, out.String(), errOut.String())
		}
	}
}
