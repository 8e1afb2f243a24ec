package temporalconfig_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tqscavenger/tqscavenger/internal/temporalconfig"
)

// maskTemplate is a docker-style template whose settings come from the
// environment; the test puts a secret where another type is expected, or
// where no datastore or command has that name.
const maskTemplate = `# enable-template
persistence:
  defaultStore: {{ default .Env.TQS29_STORE_KEY "default" }}
  datastores:
    default:
      sql:
        pluginName: postgres12
        databaseName: temporal
        connectAddr: "db:5432"
        connectProtocol: tcp
        user: temporal
        maxConns: {{ default .Env.TQS29_CONNS "20" }}
        {{- if .Env.TQS29_CMD }}
        passwordCommand:
          command: {{ .Env.TQS29_CMD }}
        {{- else }}
        password: {{ index .Env "TQS29_PASSWORD" }}
        {{- end }}
`

// TestEnvValuesMasked: a value a template took from the environment never
// shows in an error about the file: not in YAML's type error (which quotes
// the value, or its start), not as a datastore's name, not as a password
// command; each shows as $NAME instead. A short value under a secret's
// name (…_KEY) is masked too.
func TestEnvValuesMasked(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config_template.yaml")
	if err := os.WriteFile(path, []byte(maskTemplate), 0o600); err != nil {
		t.Fatal(err)
	}
	const secret = "hunter2-very-secret-value"
	for _, tc := range []struct {
		name, secret string
		env          map[string]string
		step         func(*temporalconfig.Config) error
		want         string
	}{
		{"a secret where a number goes", secret, map[string]string{"TQS29_CONNS": secret, "TQS29_PASSWORD": "pw"}, nil, "$TQS29_CONNS"},
		{"a short value under a secret's name", `"k9"`, map[string]string{"TQS29_STORE_KEY": "k9", "TQS29_PASSWORD": "pw"},
			func(c *temporalconfig.Config) error { _, err := c.Store(""); return err }, "$TQS29_STORE_KEY"},
		{"the datastore's name", secret, map[string]string{"TQS29_STORE_KEY": secret, "TQS29_PASSWORD": "pw"},
			func(c *temporalconfig.Config) error { _, err := c.Store(""); return err }, "$TQS29_STORE_KEY"},
		{"the password command", secret, map[string]string{"TQS29_CMD": "/nonexistent/" + secret},
			func(c *temporalconfig.Config) error {
				s, err := c.Store("")
				if err == nil {
					_, err = s.ResolvePassword(context.Background())
					err = c.MaskError(err)
				}
				return err
			}, "$TQS29_CMD"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, v := range []string{"TQS29_STORE_KEY", "TQS29_CONNS", "TQS29_CMD", "TQS29_PASSWORD"} {
				t.Setenv(v, "")
				os.Unsetenv(v)
			}
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			c, err := temporalconfig.Load(path)
			if err == nil && tc.step != nil {
				err = tc.step(c)
			}
			if err == nil {
				t.Fatal("no error")
			}
			if msg := err.Error(); strings.Contains(msg, tc.secret) || strings.Contains(msg, tc.secret[:min(7, len(tc.secret))]) || !strings.Contains(msg, tc.want) {
				t.Errorf("error %q shows the environment's value, or does not name %s", msg, tc.want)
			}
		})
	}
}
