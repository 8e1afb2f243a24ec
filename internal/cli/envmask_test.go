package cli

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEnvValuesNotShown: a value that came from the environment is never
// shown in a settings error, only its variable's name: a TQSCAVENGER_*
// variable of the wrong type, and a setting a Temporal config template
// took from the environment that the connection refuses.
func TestEnvValuesNotShown(t *testing.T) {
	const secret = "hunter2-very-secret-value"
	tpl := filepath.Join(t.TempDir(), "config_template.yaml")
	if err := os.WriteFile(tpl, []byte(`# enable-template
persistence:
  defaultStore: default
  datastores:
    default:
      sql:
        pluginName: postgres12
        databaseName: temporal
        connectAddr: "127.0.0.1:5432"
        connectProtocol: {{ .Env.TQS29_PROTOCOL }}
        user: temporal
        password: temporal
`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{"a variable of the wrong type", map[string]string{"TQSCAVENGER_WORKERS": secret}, []string{"run", "--db", "sqlite:" + filepath.Join(t.TempDir(), "x.db")}, "TQSCAVENGER_WORKERS"},
		// The key, not the value (issue 39: no value of a config file in
		// an error), so not the variable's name either.
		{"a template's setting", map[string]string{"TQS29_PROTOCOL": secret}, []string{"run", "--temporal-config", tpl}, "connectProtocol: use tcp or unix"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clearEnv(t)
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			var errOut bytes.Buffer
			code := Main(tc.args, io.Discard, &errOut)
			if msg := errOut.String(); code != ExitUsage || strings.Contains(msg, "hunter2") || !strings.Contains(msg, tc.want) {
				t.Errorf("exit %d, want %d naming %s without the value:\n%s", code, ExitUsage, tc.want, msg)
			}
		})
	}
}
