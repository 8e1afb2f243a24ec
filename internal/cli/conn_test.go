package cli_test

// Naming the database as an operator who runs Temporal would: a Temporal
// server config, temporal-sql-tool's flags and SQL_* variables, and TLS
// through each of them, against real servers with certificates the test
// makes; and exactly one source of the database, whatever the layer.

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/tqscavenger/tqscavenger/internal/cli"
	"github.com/tqscavenger/tqscavenger/internal/testdb"
	"github.com/tqscavenger/tqscavenger/sqlstore"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testdb.StopTLSServers() // before the leak check: they have goroutines
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// connEnv are the variables of these tests, unset for each.
var connEnv = []string{
	"TQSCAVENGER_DB", "TQSCAVENGER_TEMPORAL_CONFIG", "TQSCAVENGER_TEMPORAL_STORE", "TQSCAVENGER_CONFIG",
	"TQSCAVENGER_PASSWORD", "TQSCAVENGER_USER",
	"SQL_HOST", "SQL_PORT", "SQL_USER", "SQL_PASSWORD", "SQL_DATABASE", "SQL_PLUGIN", "SQL_CONNECT_ATTRIBUTES",
	"SQL_TLS", "SQL_TLS_CA_FILE", "SQL_TLS_CERT_FILE", "SQL_TLS_KEY_FILE", "SQL_TLS_SERVER_NAME", "SQL_TLS_DISABLE_HOST_VERIFICATION",
}

// setEnv unsets connEnv and sets env, for the test.
func setEnv(t *testing.T, env map[string]string) {
	t.Helper()
	for _, k := range connEnv {
		t.Setenv(k, "") // restored after the test
		os.Unsetenv(k)
	}
	for k, v := range env {
		t.Setenv(k, v)
	}
}

// writeTemp writes a file named name in a temporary directory.
func writeTemp(t *testing.T, name, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// temporalYAML is a Temporal server config whose default store is sql
// (its lines, indented under sql:) and whose visibility store is a
// Cassandra one.
func temporalYAML(sql string) string {
	var b strings.Builder
	b.WriteString("log:\n  stdout: true\n  level: info\npersistence:\n  defaultStore: default\n  visibilityStore: cass\n  numHistoryShards: 4\n  datastores:\n    default:\n      sql:\n")
	for _, l := range strings.Split(strings.TrimSpace(sql), "\n") {
		b.WriteString("        " + l + "\n")
	}
	b.WriteString("    cass:\n      cassandra:\n        hosts: 127.0.0.1\n        keyspace: temporal\n")
	return b.String()
}

// TestOneSource: more than one source of the database, from any layer,
// exits 2 and names them, before any work and without a password.
func TestOneSource(t *testing.T) {
	db := filepath.Join(t.TempDir(), "tasks.db")
	tc := writeTemp(t, "temporal.yaml", temporalYAML("pluginName: sqlite\ndatabaseName: "+db))
	fileDB := writeTemp(t, "tqscavenger.yaml", "db: "+db+"\n")
	secretDSN := "postgres://u:" + dbSecret + "@127.0.0.1:1/db"
	for _, c := range []struct {
		name string
		env  map[string]string
		args []string
		says []string
	}{
		{"TQSCAVENGER_DB and --temporal-config", map[string]string{"TQSCAVENGER_DB": secretDSN}, []string{"--temporal-config", tc},
			[]string{"more than one database given", "a DSN (TQSCAVENGER_DB) and a Temporal config (--temporal-config)"}},
		{"--db and SQL_HOST", map[string]string{"SQL_HOST": "db", "SQL_PASSWORD": dbSecret}, []string{"--db", secretDSN},
			[]string{"a DSN (--db) and temporal-sql-tool's settings (SQL_HOST, SQL_PASSWORD)"}},
		{"db in the config file and TQSCAVENGER_TEMPORAL_CONFIG", map[string]string{"TQSCAVENGER_TEMPORAL_CONFIG": tc}, []string{"--config", fileDB},
			[]string{"a DSN (db in " + fileDB + ") and a Temporal config (TQSCAVENGER_TEMPORAL_CONFIG)"}},
		{"all three", map[string]string{"TQSCAVENGER_DB": secretDSN}, []string{"--temporal-config", tc, "--ep", "db", "--password", dbSecret},
			[]string{"a DSN (TQSCAVENGER_DB), a Temporal config (--temporal-config) and temporal-sql-tool's settings (--endpoint, --password)"}},
		{"TLS flags with a Temporal config", map[string]string{"SQL_TLS_CA_FILE": "/ca.pem"}, []string{"--temporal-config", tc},
			[]string{"SQL_TLS_CA_FILE given with a Temporal config", "tls: section"}},
		{"--temporal-store alone", nil, []string{"--temporal-store", "default"}, []string{"--temporal-store default without --temporal-config"}},
		{"--tls=false with a CA", nil, []string{"--db", db, "--tls=false", "--tls-ca-file", "/ca.pem"}, []string{"--tls set to false, and --tls-ca-file given"}},
		{"TQSCAVENGER_USER and SQL_USER differ", map[string]string{"TQSCAVENGER_USER": "a", "SQL_USER": "b"}, nil, []string{"TQSCAVENGER_USER and SQL_USER both set, to different values"}},
		{"none", nil, nil, []string{"no database: pass --db DSN or set TQSCAVENGER_DB", "--temporal-config FILE", "SQL_HOST"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			setEnv(t, c.env)
			for _, cmd := range [][]string{{"run"}, {"serve"}, {"config"}, {"report"}, {"schema", "check"}} {
				if slices := c.args; len(slices) > 0 && slices[0] == "--config" && cmd[0] != "run" && cmd[0] != "serve" && cmd[0] != "config" {
					continue // only run, serve and config read a config file
				}
				args := append(append([]string{}, cmd...), c.args...)
				for _, s := range c.says {
					checkUsageError(t, args, s, tqs)
				}
			}
		})
	}
}

// TestTemporalConfig: --temporal-config connects as Temporal does, to
// the shapes of config Temporal ships for each engine, templated or not,
// and scavenges.
func TestTemporalConfig(t *testing.T) {
	for _, e := range testdb.Engines {
		t.Run(string(e), func(t *testing.T) {
			setEnv(t, nil)
			dsn := testdb.DSN(t, e)
			seedExpired(t, dsn)
			var sql string
			switch e {
			case sqlstore.SQLite:
				d, _ := sqlstore.ParseDSN(dsn)
				sql = fmt.Sprintf("user: \"\"\npassword: \"\"\npluginName: sqlite\ndatabaseName: %q\nconnectAddr: localhost\nconnectProtocol: tcp\n"+
					"connectAttributes:\n  cache: private\n  setup: true\n  journal_mode: wal\n  synchronous: 2\nmaxConns: 1\ntls:\n  enabled: false", d.Path)
			case sqlstore.Postgres:
				u, _ := url.Parse(dsn)
				// search_path, the test's schema, as a connect attribute.
				sql = fmt.Sprintf("pluginName: postgres12_pgx\ndatabaseName: %s\nconnectAddr: %q\nconnectProtocol: tcp\nuser: %s\npassword: %q\n"+
					"connectAttributes:\n  search_path: %s\nmaxConns: 20\nmaxIdleConns: 20\nmaxConnLifetime: 1h",
					strings.TrimPrefix(u.Path, "/"), u.Host, u.User.Username(), dbSecret, u.Query().Get("search_path"))
			case sqlstore.MySQL:
				u, pw := testdb.MySQLUser(t)
				d, _ := url.Parse(dsn)
				sql = fmt.Sprintf("pluginName: mysql8\ndatabaseName: %s\nconnectAddr: %q\nconnectProtocol: tcp\nuser: %s\npassword: %q\n"+
					"connectAttributes:\n  tx_isolation: READ-COMMITTED\nmaxConns: 20",
					strings.TrimPrefix(d.Path, "/"), u.Host, u.User.Username(), pw)
			}
			file := writeTemp(t, "temporal.yaml", temporalYAML(sql))
			code, out, errOut := tqs("run", "--temporal-config", file, "--progress", "never")
			if code != cli.ExitOK || !strings.Contains(out, "deleted 20") {
				t.Fatalf("run: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
			}
			if strings.Contains(out+errOut, dbSecret) {
				t.Errorf("the password is in the output")
			}
			// The other store is Cassandra's.
			checkUsageError(t, []string{"run", "--temporal-config", file, "--temporal-store", "cass"},
				"is a Cassandra store: not supported: Temporal's task queue scanner only runs on SQL stores", tqs)
			if code, out, errOut := tqs("schema", "check", "--temporal-config", file); code != 0 {
				t.Errorf("schema check: exit %d: %s%s", code, out, errOut)
			}
		})
	}
}

// seedExpired writes 2 queues of 10 expired tasks, idle for days.
func seedExpired(t *testing.T, dsn string) {
	t.Helper()
	if code, out, errOut := tqs("seed", "--db", dsn, "--queues", "2", "--tasks", "10", "--expired", "1", "--no-expiry", "0"); code != 0 {
		t.Fatalf("seed: exit %d: %s%s", code, out, errOut)
	}
}

// TestTemporalTemplate: a templated Temporal config, as a docker image
// has, reads the environment; a wrong password from it stays out of the
// output.
func TestTemporalTemplate(t *testing.T) {
	dsn := testdb.DSN(t, sqlstore.MySQL)
	d, _ := url.Parse(dsn)
	u, pw := testdb.MySQLUser(t)
	file := writeTemp(t, "docker.yaml", "# enable-template\n"+temporalYAML(`
pluginName: "{{ default .Env.DB "mysql8" }}"
databaseName: "{{ default .Env.DBNAME "temporal" }}"
connectAddr: "{{ default .Env.MYSQL_SEEDS "" }}:{{ default .Env.DB_PORT "3306" }}"
connectProtocol: "tcp"
user: "{{ .Env.MYSQL_USER }}"
password: "{{ .Env.MYSQL_PWD }}"`))
	env := map[string]string{"DBNAME": strings.TrimPrefix(d.Path, "/"), "MYSQL_SEEDS": u.Hostname(), "DB_PORT": u.Port(), "MYSQL_USER": u.User.Username(), "MYSQL_PWD": pw}
	setEnv(t, env)
	for k := range env {
		connEnv = append(connEnv, k)
	}
	if code, out, errOut := tqs("run", "--temporal-config", file, "--dry-run", "--progress", "never"); code != 0 {
		t.Fatalf("run: exit %d: %s%s", code, out, errOut)
	}
	t.Setenv("MYSQL_PWD", dbSecret)
	checkUsageError(t, []string{"run", "--temporal-config", file}, "check the user and password", tqs)
	os.Unsetenv("MYSQL_USER")
	checkUsageError(t, []string{"run", "--temporal-config", file}, "user read an environment variable that is not set", tqs)
}

// TestSQLToolSettings: temporal-sql-tool's flags, and its SQL_*
// variables as a Kubernetes Job of the tool has them, name a database.
func TestSQLToolSettings(t *testing.T) {
	for _, e := range []sqlstore.Engine{sqlstore.Postgres, sqlstore.MySQL} {
		t.Run(string(e), func(t *testing.T) {
			setEnv(t, nil)
			dsn := testdb.DSN(t, e)
			seedExpired(t, dsn)
			d, _ := url.Parse(dsn)
			env := map[string]string{"SQL_HOST": d.Hostname(), "SQL_PORT": d.Port(), "SQL_USER": d.User.Username(), "SQL_DATABASE": strings.TrimPrefix(d.Path, "/"), "SQL_PLUGIN": "mysql8"}
			if e == sqlstore.Postgres {
				env["SQL_PLUGIN"] = "postgres12"
				env["SQL_CONNECT_ATTRIBUTES"] = "search_path=" + d.Query().Get("search_path")
			}
			flags := []string{"run", "--dry-run", "--progress", "never", "--ep", env["SQL_HOST"], "--port", env["SQL_PORT"], "--user", env["SQL_USER"],
				"--database", env["SQL_DATABASE"], "--plugin", env["SQL_PLUGIN"]}
			if e == sqlstore.Postgres {
				flags = append(flags, "--connect-attributes", env["SQL_CONNECT_ATTRIBUTES"])
			}
			if code, out, errOut := tqs(flags...); code != 0 || !strings.Contains(out, "would delete 20") {
				t.Fatalf("flags: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
			}
			setEnv(t, env)
			if code, out, errOut := tqs("run", "--progress", "never"); code != 0 || !strings.Contains(out, "deleted 20") {
				t.Fatalf("SQL_*: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
			}
		})
	}
}

// TestTLSSources: TLS to the private servers, through a DSN with TLS
// flags, temporal-sql-tool's SQL_TLS_* variables and a Temporal config;
// a failed verification exits 2 and says which.
func TestTLSSources(t *testing.T) {
	for _, e := range []sqlstore.Engine{sqlstore.Postgres, sqlstore.MySQL} {
		t.Run(string(e), func(t *testing.T) {
			srv := testdb.TLSPostgres
			plugin := "postgres12"
			if e == sqlstore.MySQL {
				srv, plugin = testdb.TLSMySQL, "mysql8"
			}
			s := srv(t)
			c := s.Certs
			mtls := s.DSN(testdb.MTLSUser, "127.0.0.1")
			port := fmt.Sprint(s.Port)
			type tc struct {
				name string
				env  map[string]string
				args []string
				want int
				says string
			}
			temporal := func(tls string) string {
				return writeTemp(t, "temporal.yaml", temporalYAML(fmt.Sprintf("pluginName: %s\ndatabaseName: %s\nconnectAddr: 127.0.0.1:%s\nconnectProtocol: tcp\nuser: %s\ntls:\n%s",
					plugin, s.Database, port, testdb.MTLSUser, tls)))
			}
			tlsSection := func(extra string) string {
				return fmt.Sprintf("  enabled: true\n  caFile: %s\n  certFile: %s\n  keyFile: %s\n%s", c.CA, c.ClientCert, c.ClientKey, extra)
			}
			noCert := "a client certificate"
			if e == sqlstore.MySQL {
				noCert = "requires a client certificate, and none was given" // MariaDB refuses the login
			}
			cases := []tc{
				{name: "mutual TLS, flags", args: []string{"--db", mtls, "--tls-ca-file", c.CA, "--tls-cert-file", c.ClientCert, "--tls-key-file", c.ClientKey}},
				{name: "mutual TLS, by name", args: []string{"--db", s.DSN(testdb.MTLSUser, "localhost"), "--tls-ca-file", c.CA, "--tls-cert-file", c.ClientCert, "--tls-key-file", c.ClientKey}},
				{name: "without a client certificate", args: []string{"--db", mtls, "--tls-ca-file", c.CA}, want: cli.ExitUsage, says: noCert},
				{name: "a wrong CA", args: []string{"--db", s.DSN(s.User, "127.0.0.1"), "--tls-ca-file", c.OtherCA}, want: cli.ExitUsage,
					says: "x509: certificate signed by unknown authority) (give the CA that signed the server's certificate: --tls-ca-file"},
				{name: "a wrong server name", args: []string{"--db", s.DSN(s.User, "127.0.0.1"), "--tls-ca-file", c.CA, "--tls-server-name", "db.example"}, want: cli.ExitUsage,
					says: "not valid for the server's name"},
				{name: "a wrong server name, host verification off", args: []string{"--db", s.DSN(s.User, "127.0.0.1"), "--tls-ca-file", c.CA, "--tls-server-name", "db.example", "--tls-disable-host-verification"}},
				{name: "the system's roots", args: []string{"--db", s.DSN(s.User, "127.0.0.1"), "--tls"}, want: cli.ExitUsage, says: "not signed by a trusted CA"},
				{name: "temporal-sql-tool's variables", env: map[string]string{"SQL_PLUGIN": plugin, "SQL_HOST": "127.0.0.1", "SQL_PORT": port,
					"SQL_USER": testdb.MTLSUser, "SQL_DATABASE": s.Database, "SQL_TLS": "true", "SQL_TLS_CA_FILE": c.CA, "SQL_TLS_CERT_FILE": c.ClientCert, "SQL_TLS_KEY_FILE": c.ClientKey}},
				{name: "temporal-sql-tool's variables, a wrong name", env: map[string]string{"SQL_PLUGIN": plugin, "SQL_HOST": "127.0.0.1", "SQL_PORT": port,
					"SQL_USER": s.User, "SQL_DATABASE": s.Database, "SQL_TLS": "true", "SQL_TLS_CA_FILE": c.CA, "SQL_TLS_SERVER_NAME": "db.example"}, want: cli.ExitUsage, says: "--tls-server-name"},
				{name: "a Temporal config, host verification on", args: []string{"--temporal-config", temporal(tlsSection("  enableHostVerification: true\n  serverName: localhost"))}},
				{name: "a Temporal config, a wrong server name", args: []string{"--temporal-config", temporal(tlsSection("  enableHostVerification: true\n  serverName: db.example"))},
					want: cli.ExitUsage, says: "not valid for the server's name"},
				{name: "a Temporal config, host verification off", args: []string{"--temporal-config", temporal(tlsSection("  serverName: db.example"))},
					says: "TLS without host verification, as Temporal does"},
				{name: "a Temporal config, no client certificate", args: []string{"--temporal-config", temporal("  enabled: true\n  enableHostVerification: true\n  caFile: " + c.CA)},
					want: cli.ExitUsage, says: noCert},
			}
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					setEnv(t, c.env)
					args := append([]string{"run", "--progress", "never"}, c.args...)
					if c.want != 0 {
						checkUsageError(t, args, c.says, tqs)
						return
					}
					code, out, errOut := tqs(args...)
					if code != 0 || !strings.Contains(out, "outcome: completed") || !strings.Contains(errOut, c.says) {
						t.Fatalf("exit %d, want 0 and %q said\nstdout: %s\nstderr: %s", code, c.says, out, errOut)
					}
				})
			}
		})
	}
}

// TestSecretsMasked: config shows neither a password from
// temporal-sql-tool's settings nor a private key, nor connect attributes
// with a password: it names where each came from, and does not write them
// as keys (a masked value read back would be a wrong password).
func TestSecretsMasked(t *testing.T) {
	setEnv(t, map[string]string{"SQL_PASSWORD": dbSecret})
	// A real key: config reads the TLS settings as serve does (issue 39).
	certs, err := testdb.NewCerts(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := os.ReadFile(certs.ClientCert)
	key, _ := os.ReadFile(certs.ClientKey)
	code, out, errOut := tqs("config", "--ep", "db", "--user", "u", "--tls-cert-data", string(cert), "--tls-key-data", string(key), "--connect-attributes", "password="+dbSecret+"&a=b")
	if code != 0 {
		t.Fatalf("config: exit %d: %s", code, errOut)
	}
	for _, want := range []string{"#   password is a secret, not written (from SQL_PASSWORD)", "#   tls-key-data is a secret, not written (from --tls-key-data)",
		"#   connect-attributes is a secret, not written (from --connect-attributes)", "endpoint: db  # flag --endpoint"} {
		if !strings.Contains(out, want) {
			t.Errorf("config output lacks %q:\n%s", want, out)
		}
	}
	if keyBody := strings.Split(string(key), "\n")[1]; strings.Contains(out+errOut, dbSecret) || strings.Contains(out+errOut, keyBody) {
		t.Errorf("config shows a secret:\n%s", out)
	}
}

// TestServeMasksSQLToolPassword: serve named its database by
// temporal-sql-tool's settings, the password in SQL_PASSWORD: neither the
// status page nor the log shows it (PostgreSQL here ignores it).
func TestServeMasksSQLToolPassword(t *testing.T) {
	d, err := url.Parse(testdb.DSN(t, sqlstore.Postgres))
	if err != nil {
		t.Fatal(err)
	}
	setEnv(t, map[string]string{"SQL_PASSWORD": dbSecret})
	p := startServe(t, "--plugin", "postgres12", "--ep", d.Hostname(), "--port", d.Port(), "--user", d.User.Username(),
		"--database", strings.TrimPrefix(d.Path, "/"), "--connect-attributes", "search_path="+d.Query().Get("search_path"), "--every", "1h")
	code, body := get(t, "http://"+p.addr()+"/")
	if code != 200 || strings.Contains(body, dbSecret) || !strings.Contains(body, "xxxxx") {
		t.Errorf("status page: %d, password shown or not masked:\n%s", code, body)
	}
	p.signal(syscall.SIGTERM)
	if code := p.wait(30 * time.Second); code != 0 {
		t.Errorf("exit status %d", code)
	}
	if strings.Contains(p.log(), dbSecret) {
		t.Errorf("the log shows the password:\n%s", p.log())
	}
}

// TestConfigChecksTheSource: config refuses the database settings serve
// would refuse, reading a Temporal config without running its
// passwordCommand.
func TestConfigChecksTheSource(t *testing.T) {
	setEnv(t, nil)
	ran := filepath.Join(t.TempDir(), "ran")
	good := writeTemp(t, "temporal.yaml", temporalYAML("pluginName: mysql8\ndatabaseName: temporal\nconnectAddr: db:3306\nconnectProtocol: tcp\nuser: temporal\n"+
		"passwordCommand:\n  command: touch\n  args: ["+ran+"]"))
	if code, _, errOut := tqs("config", "--temporal-config", good); code != 0 {
		t.Fatalf("config: exit %d: %s", code, errOut)
	}
	if _, err := os.Stat(ran); err == nil {
		t.Error("config ran the passwordCommand")
	}
	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"--temporal-config", good, "--temporal-store", "cass"}, "not supported: Temporal's task queue scanner only runs on SQL stores"},
		{[]string{"--temporal-config", filepath.Join(t.TempDir(), "missing.yaml")}, "read the Temporal config"},
		{[]string{"--plugin", "cockroach"}, `unknown SQL plugin "cockroach"`},
		{[]string{"--db", "oracle://u:" + dbSecret + "@h/db"}, "unknown scheme"},
	} {
		checkUsageError(t, append([]string{"config"}, c.args...), c.says, tqs)
	}
}

// TestSQLToolCommandLinePastes: the connection part of temporal-sql-tool
// command lines as Temporal's docs and docker auto-setup.sh write them,
// pasted as they are (its aliases -p, -u, --pl, --ca, -ep and --db as the
// database's name), names the right database: the pass finds the seeded
// queues there.
func TestSQLToolCommandLinePastes(t *testing.T) {
	for _, e := range []sqlstore.Engine{sqlstore.Postgres, sqlstore.MySQL} {
		t.Run(string(e), func(t *testing.T) {
			setEnv(t, nil)
			dsn := testdb.DSN(t, e)
			seedExpired(t, dsn)
			d, _ := url.Parse(dsn)
			name := strings.TrimPrefix(d.Path, "/")
			plugin, extra := "mysql8", []string{"--pw", ""}
			if e == sqlstore.Postgres {
				plugin, extra = "postgres12", []string{"--ca", "search_path=" + d.Query().Get("search_path")}
			}
			for _, line := range [][]string{
				// docs.temporal.io: --plugin … --ep … -p … -u … --pw … --db …
				append([]string{"--plugin", plugin, "--ep", d.Hostname(), "-p", d.Port(), "-u", d.User.Username(), "--db", name}, extra...),
				// the Go flag package's single dash, as the tool took it
				append([]string{"-pl", plugin, "-ep", d.Hostname(), "-p", d.Port(), "-u", d.User.Username(), "-db", name}, extra...),
			} {
				args := append([]string{"run", "--dry-run", "--progress", "never"}, line...)
				if code, out, errOut := tqs(args...); code != 0 || !strings.Contains(out, "would delete 20") {
					t.Fatalf("%q: exit %d\nstdout: %s\nstderr: %s", line, code, out, errOut)
				}
			}
		})
	}
}

// TestSQLToolDBClash: where temporal-sql-tool's --db (a database name)
// cannot be read as one, the error names --database.
func TestSQLToolDBClash(t *testing.T) {
	secretDSN := "postgres://u:" + dbSecret + "@127.0.0.1:1/db"
	for _, c := range []struct {
		name string
		env  map[string]string
		args []string
		says string
	}{
		{"a DSN with the tool's flags", nil, []string{"--plugin", "postgres12", "--ep", "127.0.0.1", "--db", secretDSN},
			"here --db is a DSN, not temporal-sql-tool's database name: use --database NAME"},
		{"a name with the tool's settings only in the environment", map[string]string{"SQL_HOST": "127.0.0.1"}, []string{"--db", "temporal"},
			"use --database temporal"},
		{"a name and --database", nil, []string{"--plugin", "postgres12", "--user", "postgres", "--db", "temporal", "--database", "other"},
			"--db temporal and --database both given"},
		{"a file path", nil, []string{"--ep", "127.0.0.1", "--db", "./temporal.db"}, "use --database NAME"},
	} {
		t.Run(c.name, func(t *testing.T) {
			setEnv(t, c.env)
			checkUsageError(t, append([]string{"config"}, c.args...), c.says, tqs)
		})
	}
}
