//go:build !tqs_notemporal

package cli_test

import (
	"strings"
	"testing"

	"github.com/tqscavenger/tqscavenger/internal/cli"
)

// TestTemporalClientInputs: issue 39's finding 8: a --temporal-address
// no client can dial and an API key a gRPC header cannot carry are bad
// input (exit 2), not a frontend to retry later (exit 4); neither is
// quoted.
func TestTemporalClientInputs(t *testing.T) {
	setEnv(t, nil)
	const secret = "Zq9-Temporal-39"
	for _, c := range []struct {
		name string
		args []string
		hint string
	}{
		{"too many colons", []string{"--temporal-address", "localhost:7233:99"}, "is not host:port"},
		{"a URL with credentials", []string{"--temporal-address", "http://u:" + secret + "@localhost:7233"}, "is not host:port"},
		{"a space in the host", []string{"--temporal-address", "local host:7233"}, "is not host:port"},
		{"a port out of range", []string{"--temporal-address", "localhost:99999"}, "is not host:port"},
		{"no port", []string{"--temporal-address", "localhost"}, "is not host:port"},
		{"a bad dns target", []string{"--temporal-address", "dns://localhost"}, "dns:///host:port"},
		{"a control character in the key", []string{"--temporal-address", "127.0.0.1:1", "--temporal-api-key", secret + "\x01"}, "a gRPC header cannot carry"},
		{"a newline in the key", []string{"--temporal-address", "127.0.0.1:1", "--temporal-api-key", secret + "\nx"}, "a gRPC header cannot carry"},
		{"non-ASCII in the key", []string{"--temporal-address", "127.0.0.1:1", "--temporal-api-key", secret + "é"}, "a gRPC header cannot carry"},
	} {
		for _, cmd := range [][]string{{"schedule", "describe"}, {"worker", "--db", "sqlite:/tmp/none.db"}} {
			t.Run(cmd[0]+"/"+c.name, func(t *testing.T) {
				code, out, errOut := tqs(append(append([]string{}, cmd...), c.args...)...)
				if code != cli.ExitUsage || !strings.Contains(errOut, c.hint) {
					t.Errorf("exit %d, stderr %q: want %d saying %q", code, errOut, cli.ExitUsage, c.hint)
				}
				if strings.Contains(out+errOut, secret) {
					t.Errorf("the value is in the output: %s%s", out, errOut)
				}
			})
		}
	}
}
