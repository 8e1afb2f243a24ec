package cli_test

// Issue 25's finding 3: no password in any output, whatever shape the
// input that carries it has, and no error quotes a file's content or the
// environment.

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tqscavenger/tqscavenger/internal/cli"
	"github.com/tqscavenger/tqscavenger/internal/testdb"
	"github.com/tqscavenger/tqscavenger/sqlstore"
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
	// Issue 39's finding 6: a password in a Temporal config's connectAddr,
	// a config file's bad values, a connect attribute's.
	tplAddr := writeTemp(t, "addr.yaml", temporalYAML("pluginName: postgres12\nconnectAddr: \"flt_pw:"+pw+"@127.0.0.1:5432\"\ndatabaseName: temporal\nuser: temporal\npassword: temporal"))
	fileWith := func(kv string) string { return writeTemp(t, "bad.yaml", "db: sqlite:/tmp/x.db\n"+kv+"\n") }
	forms := []struct {
		name string
		args []string
	}{
		{"password with @ then /", []string{"--db", "postgres://scav:Kq7@" + pw + "/9vLm2@db.internal:5432/temporal"}},
		{"mysql password with @ then /", []string{"--db", "mysql://scav:Kq7@" + pw + "/9vLm2@db.internal:3306/temporal"}},
		{"password with /", []string{"--db", "postgres://scav:123/" + pw + "@db.internal/temporal"}},
		{"password with #", []string{"--db", "mysql://scav:1#" + pw + "@db.internal/temporal"}},
		{"connectAddr with a password", []string{"--temporal-config", tplAddr}},
		{"connect attribute", []string{"--endpoint", "127.0.0.1", "--plugin", "postgres12", "--connect-attributes", "sslpassword=" + pw + "%zz"}},
		{"config bad workers", []string{"--config", fileWith("workers: " + pw)}},
		{"config bad grace", []string{"--config", fileWith("grace: " + pw)}},
		{"config bad pace", []string{"--config", fileWith("pace: " + pw)}},
		{"config bad orphans", []string{"--config", fileWith("orphans: " + pw)}},
		{"config bad metrics", []string{"--config", fileWith("temporal-metrics: " + pw)}},
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

// TestSecretsInEveryOutput: issue 39's finding 6 for settings that are
// good, so that every command runs with them: a --temporal-metrics URL
// with user info and token parameters (it was shown on serve's status
// page and by config), and a DSN whose query carries a password, on a
// real SQLite file and the local PostgreSQL. No output holds the secret:
// stdout and stderr of run, report, schema check and config; serve's log,
// status page and /metrics.
func TestSecretsInEveryOutput(t *testing.T) {
	const pw = "Zq9-Every-Out-39"
	setEnv(t, nil)
	metrics := []string{
		"--temporal-metrics", "http://u:" + pw + "@127.0.0.1:1/metrics?token=" + pw,
		"--temporal-metrics", "https://" + pw + "@127.0.0.1:1/m?access_token=" + pw + "&api_key=" + pw + "&sig=" + pw,
	}
	type tc struct {
		name string
		db   func(t *testing.T) []string
		more []string // pass flags: run, serve and config take them
	}
	cases := []tc{
		{"sqlite/metrics URLs", func(t *testing.T) []string { return []string{"--db", seedFile(t)} }, metrics},
		{"postgres/password in the query", func(t *testing.T) []string {
			return []string{"--db", testdb.DSN(t, sqlstore.Postgres) + "&password=" + pw + "&application_name=tqs39"}
		}, metrics},
	}
	check := func(t *testing.T, what, out string) {
		t.Helper()
		if strings.Contains(out, pw) {
			t.Errorf("%s shows the secret:\n%s", what, out)
		}
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			db := c.db(t)
			for _, cmd := range [][]string{{"run", "--progress", "never", "--log-format", "json"}, {"report"}, {"schema", "check"}, {"config"}} {
				args := append(append([]string{}, cmd...), db...)
				if cmd[0] == "run" || cmd[0] == "config" {
					args = append(args, c.more...)
				}
				code, stdout, stderr := tqs(args...)
				if code != cli.ExitOK {
					t.Errorf("%s: exit %d: %s", cmd[0], code, stderr)
				}
				check(t, cmd[0]+"'s output", stdout+stderr)
			}
			p := startServe(t, append(append([]string{"--run-at-start"}, db...), c.more...)...)
			addr := p.addr()
			p.waitLog("scavenger pass completed", 1)
			for _, page := range []string{"/", "/metrics", "/readyz"} {
				code, body := get(t, "http://"+addr+page)
				if code != 200 {
					t.Errorf("%s: %d", page, code)
				}
				check(t, "serve's "+page, body)
			}
			if _, body := get(t, "http://"+addr+"/"); !strings.Contains(body, "127.0.0.1:1/metrics") {
				t.Errorf("the status page does not list the metrics endpoint, masked:\n%s", body)
			}
			p.signal(syscall.SIGTERM)
			if code := p.wait(time.Minute); code != cli.ExitOK {
				t.Errorf("serve: exit %d", code)
			}
			check(t, "serve's log", p.log())
		})
	}
}
