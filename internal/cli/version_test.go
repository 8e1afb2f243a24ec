package cli_test

import (
	"runtime"
	"strings"
	"testing"
)

// TestVersion: `version` and `--version` print the build on stdout.
func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}} {
		code, out, errOut := tqs(args...)
		if code != 0 || !strings.HasPrefix(out, "tqscavenger ") || !strings.Contains(out, runtime.Version()) || errOut != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, out, errOut)
		}
	}
}
