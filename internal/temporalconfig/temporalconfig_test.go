package temporalconfig_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/tqscavenger/tqscavenger/internal/temporalconfig"
)

// TestShippedShapes reads configs of the shapes Temporal ships for
// PostgreSQL, MySQL and SQLite, and one of its docker image's templates.
func TestShippedShapes(t *testing.T) {
	for _, c := range []struct {
		file, store string
		env         map[string]string
		want        temporalconfig.SQL
	}{
		{"postgres12.yaml", "", nil, temporalconfig.SQL{
			PluginName: "postgres12", DatabaseName: "temporal", ConnectAddr: "127.0.0.1:5432", ConnectProtocol: "tcp",
			User: "temporal", Password: "temporal", MaxConns: 20,
			Where: "persistence.datastores.postgres-default.sql in testdata/postgres12.yaml",
		}},
		{"postgres12.yaml", "postgres-visibility", nil, temporalconfig.SQL{
			PluginName: "postgres12", DatabaseName: "temporal_visibility", ConnectAddr: "127.0.0.1:5432", ConnectProtocol: "tcp",
			User: "temporal", Password: "temporal", MaxConns: 2,
			Where: "persistence.datastores.postgres-visibility.sql in testdata/postgres12.yaml",
		}},
		{"mysql8.yaml", "", nil, temporalconfig.SQL{
			PluginName: "mysql8", DatabaseName: "temporal", ConnectAddr: "127.0.0.1:3306", ConnectProtocol: "tcp",
			User: "temporal", Password: "temporal", MaxConns: 20,
			ConnectAttributes: map[string]string{"tx_isolation": "READ-COMMITTED"},
			TLS: &temporalconfig.TLS{Enabled: true, CaFile: "/etc/temporal/tls/ca.pem", CertFile: "/etc/temporal/tls/client.pem",
				KeyFile: "/etc/temporal/tls/client.key", EnableHostVerification: true, ServerName: "mysql.internal"},
			Where: "persistence.datastores.mysql-default.sql in testdata/mysql8.yaml",
		}},
		{"sqlite.yaml", "", nil, temporalconfig.SQL{
			PluginName: "sqlite", DatabaseName: "default", ConnectAddr: "localhost", ConnectProtocol: "tcp", MaxConns: 1,
			// Plain YAML values of any type, as strings.
			ConnectAttributes: map[string]string{"cache": "private", "setup": "true", "journal_mode": "wal", "synchronous": "2"},
			TLS:               &temporalconfig.TLS{},
			Where:             "persistence.datastores.sqlite-default.sql in testdata/sqlite.yaml",
		}},
		{"docker.yaml", "", map[string]string{"TQS_TC_SEEDS": "db.internal", "TQS_TC_USER": "temporal", "TQS_TC_PWD": "pw", "TQS_TC_TLS": "true", "TQS_TC_CA": "/ca.pem"},
			temporalconfig.SQL{
				PluginName: "postgres12", DatabaseName: "temporal", ConnectAddr: "db.internal:5432", ConnectProtocol: "tcp",
				User: "temporal", Password: "pw", MaxConns: 20,
				TLS:   &temporalconfig.TLS{Enabled: true, CaFile: "/ca.pem"},
				Where: "persistence.datastores.default.sql in testdata/docker.yaml",
			}},
		// A variable set to "" is set: default keeps "", as dockerize's.
		{"docker.yaml", "", map[string]string{"TQS_TC_USER": "u", "TQS_TC_DB": "mysql8", "TQS_TC_PORT": "3307", "TQS_TC_DBNAME": ""},
			temporalconfig.SQL{
				PluginName: "mysql8", DatabaseName: "", ConnectAddr: ":3307", ConnectProtocol: "tcp", User: "u", MaxConns: 20,
				Where: "persistence.datastores.default.sql in testdata/docker.yaml",
			}},
	} {
		t.Run(c.file+"/"+c.store, func(t *testing.T) {
			for _, k := range []string{"TQS_TC_SEEDS", "TQS_TC_USER", "TQS_TC_PWD", "TQS_TC_TLS", "TQS_TC_CA", "TQS_TC_DB", "TQS_TC_PORT", "TQS_TC_DBNAME"} {
				unsetenv(t, k)
			}
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			cfg, err := temporalconfig.Load(filepath.Join("testdata", c.file))
			if err != nil {
				t.Fatal(err)
			}
			got, err := cfg.Store(c.store)
			if c.want.DatabaseName == "" {
				// databaseName "" is refused, as Temporal's validation does.
				if err == nil || !strings.Contains(err.Error(), "has no databaseName") {
					t.Errorf("Store: %v, want no databaseName", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(*got, c.want) {
				t.Errorf("got  %+v\nwant %+v", *got, c.want)
			}
		})
	}
}

func unsetenv(t *testing.T, k string) {
	t.Setenv(k, "") // restored after the test
	os.Unsetenv(k)
}

// TestRefused: configs tqscavenger cannot connect with say why, without a
// password.
func TestRefused(t *testing.T) {
	const secret, short = "sekret-Temporal-pw", "pw-x9"
	for _, c := range []struct {
		name, yaml, store string
		says              []string
		is                error
	}{
		{"a Cassandra default store", "@cassandra.yaml", "", []string{"persistence.datastores.cass-default", "is a Cassandra store", "not supported: Temporal's task queue scanner only runs on SQL stores"}, temporalconfig.ErrNotSQL},
		{"an Elasticsearch store", "@cassandra.yaml", "es-visibility", []string{"is an Elasticsearch store"}, temporalconfig.ErrNotSQL},
		{"a missing store", "@postgres12.yaml", "nope", []string{`no datastore "nope"`, "postgres-default, postgres-visibility"}, nil},
		{"no default store", "persistence:\n  datastores: {}\n", "", []string{"no persistence.defaultStore"}, nil},
		{"sprig's env", "# enable-template\npersistence:\n  defaultStore: {{ env \"X\" }}\n", "", []string{`:3: template function "env" is not supported`, "default .Env.NAME"}, nil},
		{"a store a template left out", "# enable-template\npersistence:\n  defaultStore: default\n  datastores:\n    {{- if eq (default .Env.TQS_TC_UNSET \"x\") \"postgres\" }}\n    default:\n      sql:\n        pluginName: postgres12\n    {{- end }}\n    other:\n      sql:\n        pluginName: mysql8\n",
			"", []string{`no datastore "default"`, "(it has: other)", "the template reads environment variables that are not set: TQS_TC_UNSET"}, nil},
		{"sprig's env, alone", "# enable-template\n{{ env \"X\" }}\n", "", []string{`template function "env" is not supported`}, nil},
		{"lower of an unset variable", "# enable-template\n{{ lower .Env.TQS_TC_UNSET }}\n", "", []string{`the environment variable TQS_TC_UNSET is not set`}, nil},
		{"an unset variable", "# enable-template\npersistence:\n  defaultStore: d\n  datastores:\n    d:\n      sql:\n        pluginName: mysql8\n        databaseName: t\n        password: \"{{ .Env.TQS_TC_UNSET }}\"\n",
			"", []string{"persistence.datastores.d.sql", "password read an environment variable that is not set"}, nil},
		{"a password and a password command", "persistence:\n  defaultStore: d\n  datastores:\n    d:\n      sql:\n        pluginName: mysql8\n        databaseName: t\n        password: " + secret + "\n        passwordCommand:\n          command: echo\n",
			"", []string{"both password and passwordCommand"}, nil},
		{"no plugin", "persistence:\n  defaultStore: d\n  datastores:\n    d:\n      sql:\n        databaseName: t\n", "", []string{"has no pluginName"}, nil},
		{"a type error beside the password", "persistence:\n  defaultStore: d\n  datastores:\n    d:\n      sql:\n        password: " + secret + "\n        maxConns: " + secret + "\n",
			"", []string{"not a Temporal server config"}, nil},
		{"a type error beside a short password", "persistence:\n  defaultStore: d\n  datastores:\n    d:\n      sql:\n        password: " + short + "\n        maxConns: " + short + "\n",
			"", []string{"not a Temporal server config", "cannot unmarshal"}, nil},
		{"not YAML", "persistence: [\n", "", []string{"not a Temporal server config"}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			unsetenv(t, "TQS_TC_UNSET")
			path := filepath.Join("testdata", strings.TrimPrefix(c.yaml, "@"))
			if !strings.HasPrefix(c.yaml, "@") {
				path = filepath.Join(t.TempDir(), "temporal.yaml")
				if err := os.WriteFile(path, []byte(c.yaml), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			cfg, err := temporalconfig.Load(path)
			if err == nil {
				_, err = cfg.Store(c.store)
			}
			if err == nil {
				t.Fatal("no error")
			}
			t.Log(err)
			for _, s := range c.says {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error does not say %q", s)
				}
			}
			if c.is != nil && !errors.Is(err, c.is) {
				t.Errorf("error does not wrap %v", c.is)
			}
			if strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), secret[:7]) || strings.Contains(err.Error(), short) {
				t.Error("error shows the password")
			}
		})
	}
}

// TestTemplating: a file is a template only with "enable-template" in a
// comment within its first 1 KB, as in Temporal's loader.
func TestTemplating(t *testing.T) {
	t.Setenv("TQS_TC_NAME", "from-env")
	body := "persistence:\n  defaultStore: d\n  datastores:\n    d:\n      sql:\n        pluginName: mysql8\n        databaseName: \"{{ .Env.TQS_TC_NAME }}\"\n"
	for _, c := range []struct {
		name, head, want string
	}{
		{"a comment", "# enable-template\n", "from-env"},
		{"within a comment", "  # this file: enable-template, please\n", "from-env"},
		{"not a comment", "enable-template: true\n", "{{ .Env.TQS_TC_NAME }}"},
		{"after the first 1 KB", "#" + strings.Repeat(" ", 1100) + "\n# enable-template\n", "{{ .Env.TQS_TC_NAME }}"},
		{"none", "", "{{ .Env.TQS_TC_NAME }}"},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "temporal.yaml")
			if err := os.WriteFile(path, []byte(c.head+body), 0o600); err != nil {
				t.Fatal(err)
			}
			cfg, err := temporalconfig.Load(path)
			if err != nil {
				t.Fatal(err)
			}
			s, err := cfg.Store("")
			if err != nil {
				t.Fatal(err)
			}
			if s.DatabaseName != c.want {
				t.Errorf("databaseName %q, want %q", s.DatabaseName, c.want)
			}
		})
	}
}

// TestPasswordCommand: the password is the command's output without its
// trailing newlines; a failing command's error does not show its output.
func TestPasswordCommand(t *testing.T) {
	const secret = "sekret-from-command"
	for _, c := range []struct {
		name string
		cmd  temporalconfig.PasswordCommand
		want string
		says string
	}{
		{"printf", temporalconfig.PasswordCommand{Command: "printf", Args: []string{secret + "\n\n"}}, secret, ""},
		{"a failing command", temporalconfig.PasswordCommand{Command: "sh", Args: []string{"-c", "echo " + secret + "; echo no token >&2; exit 3"}}, "", "exit status 3 (stderr: no token)"},
		{"a missing command", temporalconfig.PasswordCommand{Command: "tqs-no-such-command"}, "", "tqs-no-such-command"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := &temporalconfig.SQL{PasswordCommand: &c.cmd, Where: "here"}
			got, err := s.ResolvePassword(context.Background())
			if c.says == "" {
				if err != nil || got != c.want {
					t.Errorf("%q, %v; want %q", got, err, c.want)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.says) || strings.Contains(err.Error(), secret) {
				t.Errorf("error %v: want one that says %q and not the output", err, c.says)
			}
		})
	}
}

// TestTemplateEnvBudget is issue 25's findings 1 and 3: a template that
// prints the whole environment ({{ .Env }}, with a password variable in
// it) had it quoted in an error, and one with nested ranges ran out of
// memory. A template may read variables by name only, has no range, and
// its output is capped.
func TestTemplateEnvBudget(t *testing.T) {
	const pw = "env-Secret-Pw0rd"
	t.Setenv("TQS_TC_PASSWORD", pw)
	t.Setenv("TQS_TC_NAME", "from-env")
	head := "# enable-template\npersistence:\n  defaultStore: d\n  datastores:\n    d:\n      sql:\n        pluginName: mysql8\n"
	nested := "{{ range .Env }}{{ range $.Env }}{{ range $.Env }}{{ range $.Env }}{{ range $.Env }}x{{ end }}{{ end }}{{ end }}{{ end }}{{ end }}"
	for _, c := range []struct{ name, db string }{
		{"env whole", `"{{ .Env }}"`},
		{"dot whole", `"{{ . }}"`},
		{"dollar env", `"{{ $.Env }}"`},
		{"printf env", `"{{ printf "%v" .Env }}"`},
		{"variable of env", `"{{ $e := .Env }}{{ $e }}"`},
		{"with env", `"{{ with .Env }}{{ . }}{{ end }}"`},
		{"range env", `"{{ range $k, $v := .Env }}{{ $k }}={{ $v }} {{ end }}"`},
		{"nested range", `"` + nested + `"`},
		{"range numbers", `"{{ range 1000000000 }}{{ range 1000000000 }}{{ end }}{{ end }}"`},
		{"index env without a key", `"{{ index .Env }}"`},
		{"index env without a key, piped", `"{{ index .Env | printf "%v" }}"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "temporal.yaml")
			if err := os.WriteFile(path, []byte(head+"        databaseName: "+c.db+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			cfg, err := temporalconfig.Load(path)
			if err == nil {
				s, serr := cfg.Store("")
				t.Fatalf("accepted: database %.80q (%v)", s.DatabaseName, serr)
			}
			if strings.Contains(err.Error(), pw) || strings.Contains(err.Error(), "TQS_TC_PASSWORD") {
				t.Errorf("error shows the environment: %.300s", err)
			}
		})
	}
	// What a template may do stays allowed.
	for _, db := range []string{`"{{ .Env.TQS_TC_NAME }}"`, `"{{ index .Env "TQS_TC_NAME" }}"`, `"{{ default .Env.TQS_TC_NAME "x" }}"`,
		`"{{ with .Env.TQS_TC_NAME }}{{ . }}{{ end }}"`, `"{{ if .Env.TQS_TC_NAME }}{{ $.Env.TQS_TC_NAME }}{{ end }}"`} {
		path := filepath.Join(t.TempDir(), "temporal.yaml")
		os.WriteFile(path, []byte(head+"        databaseName: "+db+"\n"), 0o600)
		cfg, err := temporalconfig.Load(path)
		if err != nil {
			t.Errorf("%s: %v", db, err)
			continue
		}
		if s, err := cfg.Store(""); err != nil || s.DatabaseName != "from-env" {
			t.Errorf("%s: database %q, %v", db, s.DatabaseName, err)
		}
	}
	// Output is capped: a template that repeats a variable past the cap.
	big := strings.Repeat("{{ .Env.TQS_TC_BIG }}", 100)
	t.Setenv("TQS_TC_BIG", strings.Repeat("y", 100<<10))
	path := filepath.Join(t.TempDir(), "temporal.yaml")
	os.WriteFile(path, []byte(head+"        databaseName: \""+big+"\"\n"), 0o600)
	if _, err := temporalconfig.Load(path); err == nil || !strings.Contains(err.Error(), "more than") {
		t.Errorf("a template expanding to 10 MB: %v", err)
	}
}

// TestDockerConfigTemplate: the persistence section of Temporal's docker
// config_template.yaml as it ships ($db := default .Env.DB "cassandra" |
// lower, print), loaded with its environment, names the PostgreSQL
// store the variables say.
func TestDockerConfigTemplate(t *testing.T) {
	tpl := `# enable-template
log:
    stdout: true
    level: {{ default .Env.LOG_LEVEL "info" }}
persistence:
    numHistoryShards: {{ default .Env.NUM_HISTORY_SHARDS "4" }}
    defaultStore: default
    visibilityStore: visibility
    {{- $es := default .Env.ENABLE_ES "false" | lower -}}
    {{- if eq $es "true" }}
    advancedVisibilityStore: es-visibility
    {{- end }}
    datastores:
        {{- $db := default .Env.DB "cassandra" | lower -}}
        {{- if eq $db "cassandra" }}
        default:
            cassandra:
                hosts: {{ default .Env.CASSANDRA_SEEDS "" }}
                keyspace: {{ default .Env.KEYSPACE "temporal" }}
        {{- else if eq $db "postgres" }}
        default:
            sql:
                pluginName: "postgres"
                databaseName: {{ default .Env.DBNAME "temporal" }}
                connectAddr: "{{ default .Env.POSTGRES_SEEDS "" }}:{{ default .Env.DB_PORT "5432" }}"
                connectProtocol: "tcp"
                user: {{ default .Env.POSTGRES_USER "" }}
                password: {{ default .Env.POSTGRES_PWD "" }}
                maxConns: {{ default .Env.SQL_MAX_CONNS "20" }}
        {{- end }}
{{ $publicIp := default .Env.BIND_ON_IP "127.0.0.1" -}}
{{- $defaultPublicHostPost := (print $publicIp ":7233") -}}
publicClient:
    hostPort: {{ default .Env.PUBLIC_FRONTEND_ADDRESS $defaultPublicHostPost }}
`
	for _, k := range []string{"LOG_LEVEL", "NUM_HISTORY_SHARDS", "ENABLE_ES", "CASSANDRA_SEEDS", "KEYSPACE", "DBNAME", "DB_PORT", "SQL_MAX_CONNS", "BIND_ON_IP", "PUBLIC_FRONTEND_ADDRESS"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	t.Setenv("DB", "PostgreSQL"[:8]) // "Postgres": lower makes it postgres
	t.Setenv("POSTGRES_SEEDS", "db.internal")
	t.Setenv("POSTGRES_USER", "temporal")
	t.Setenv("POSTGRES_PWD", "s3cret-pw")
	path := filepath.Join(t.TempDir(), "config_template.yaml")
	if err := os.WriteFile(path, []byte(tpl), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := temporalconfig.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	s, err := cfg.Store("")
	if err != nil {
		t.Fatal(err)
	}
	if s.PluginName != "postgres" || s.ConnectAddr != "db.internal:5432" || s.DatabaseName != "temporal" || s.User != "temporal" {
		t.Errorf("store %+v, want postgres at db.internal:5432, database temporal, user temporal", s)
	}
}
