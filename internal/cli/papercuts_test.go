//go:build !tqs_notemporal

package cli

import (
	"bytes"
	"strings"
	"testing"
)

// TestPapercuts are issue 42's finding 8, each as the operator met it: a
// mistyped sub-command named as such (not as an unknown flag of what
// follows it), completion in bare tqscavenger's list, and --config on
// schedule describe, trigger and delete as on create and update.
func TestPapercuts(t *testing.T) {
	for _, c := range []struct {
		args []string
		code int
		want string // in its output
	}{
		{[]string{"schema", "chek", "--db", "/tmp/none.db"}, ExitUsage, `unknown command "chek" for schema (did you mean check?)`},
		{[]string{"schedule", "creat", "--every", "1h"}, ExitUsage, `unknown command "creat" for schedule (did you mean create?)`},
		{[]string{"schema"}, ExitUsage, "use one of: `setup` or `check`"},
		{nil, ExitUsage, "  completion print a shell completion script"},
		{[]string{"schedule", "describe", "-h"}, ExitOK, "--config FILE"},
		{[]string{"schedule", "trigger", "-h"}, ExitOK, "--config FILE"},
		{[]string{"schedule", "delete", "-h"}, ExitOK, "--config FILE"},
	} {
		var out, errOut bytes.Buffer
		code := Main(c.args, &out, &errOut)
		text := out.String() + errOut.String()
		if code != c.code || !strings.Contains(text, c.want) {
			t.Errorf("tqscavenger %s: exit %d, want %d and %q in:\n%s%s", strings.Join(c.args, " "), code, c.code, c.want, out.String(), errOut.String())
		}
	}
}
