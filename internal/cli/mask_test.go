package cli_test

// Issue 25's finding 3: no password in any output, whatever shape the
// input that carries it has, and no error quotes a file's content or the
// environment.

import (
	"strings"
	"testing"

	"github.com/tqscavenger/tqscavenger/internal/cli"
)

func TestSecretsNeverEchoed(t *testing.T) {
	const pw = "Mask-Secret-9"
	setEnv(t, nil)
	t.Setenv("TQS_MASK_PASSWORD", pw)
	shadow := writeTemp(t, "shadow", "root:$6$"+pw+"$abc:20228:0:99999:7:::\ndaemon:*:20228:0:99999:7:::\n")
	passwd := writeTemp(t, "passwd", "root:x:0:0:"+pw+":/root:/bin/bash\n")
	alias := writeTemp(t, "alias.yaml", "db: &a postgres://u:"+pw+"@127.0.0.1:1/db\nworkers: *a\n")
	aliasList := writeTemp(t, "alias-list.yaml", "pw: &a "+pw+"\nprotect: [*a]\nworkers: [*a]\n")
	tplEnv := writeTemp(t, "temporal.yaml", "# enable-template\npersistence:\n  defaultStore: d\n  datastores:\n    d:\n      sql:\n        pluginName: mysql8\n        connectAddr: 127.0.0.1:1\n        databaseName: \"{{ .Env }}\"\n")
	forms := []struct {
		name string
		args []string
	}{
		{"scheme without colon", []string{"--db", "postgres//u:" + pw + "@h/db"}},
		{"mysql without colon", []string{"--db", "mysql//u:" + pw + "@h/db"}},
		{"no scheme", []string{"--db", "//u:" + pw + "@h/db"}},
		{"semicolon", []string{"--db", "postgres;//u:" + pw + "@h/db"}},
		{"sqlite with user", []string{"--db", "sqlite://u:" + pw + "@h/x.db"}},
		{"sqlite auth pass", []string{"--db", "sqlite:/tmp/x.db?_auth&_auth_user=u&_auth_pass=" + pw}},
		{"positional", []string{"--db", "sqlite:/tmp/x.db", "postgres://u:" + pw + "@h/db"}},
		{"config", []string{"--config", "postgres://u:" + pw + "@h/db"}},
		{"temporal-config", []string{"--temporal-config", "postgres://u:" + pw + "@h/db"}},
		{"endpoint", []string{"--endpoint", "postgres://u:" + pw + "@h/db"}},
		{"database", []string{"--database", "postgres://u:" + pw + "@h/db"}},
		{"user", []string{"--user", "postgres://u:" + pw + "@h/db"}},
		{"user without scheme", []string{"--user", "u:" + pw + "@h"}},
		{"workers", []string{"--db", "sqlite:/tmp/x.db", "--workers", "postgres://u:" + pw + "@h/db"}},
		{"config shadow", []string{"--config", shadow}},
		{"config passwd", []string{"--config", passwd}},
		{"config alias", []string{"--config", alias}},
		{"config alias in a list", []string{"--config", aliasList}},
		{"temporal env", []string{"--temporal-config", tplEnv}},
	}
	for _, cmd := range [][]string{{"run"}, {"report"}, {"serve", "--listen", "127.0.0.1:0"}, {"schema", "check"}, {"config"}} {
		for _, f := range forms {
			if cmd[0] == "schema" && (f.name == "config" || strings.HasPrefix(f.name, "config ")) {
				continue // schema check has no --config
			}
			if cmd[0] == "report" && strings.HasPrefix(f.name, "config") || cmd[0] == "report" && f.name == "workers" {
				continue
			}
			t.Run(cmd[0]+"/"+f.name, func(t *testing.T) {
				code, stdout, stderr := tqs(append(append([]string{}, cmd...), f.args...)...)
				if strings.Contains(stdout+stderr, pw) {
					t.Errorf("the secret is in the output:\n%s%s", stdout, stderr)
				}
				if strings.Contains(stdout+stderr, "TQS_MASK_PASSWORD") {
					t.Errorf("the environment is in the output:\n%s%s", stdout, stderr)
				}
				if code != cli.ExitUsage {
					t.Errorf("exit %d, want %d (bad input): %s", code, cli.ExitUsage, stderr)
				}
			})
		}
	}
}
