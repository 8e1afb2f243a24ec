package connect_test

import (
	"net/url"
	"reflect"
	"strings"
	"testing"

	"github.com/tqscavenger/tqscavenger/internal/connect"
	"github.com/tqscavenger/tqscavenger/internal/temporalconfig"
	"github.com/tqscavenger/tqscavenger/sqlstore"
)

const secret = "p@ss/w:rd"

// TestTemporal: a Temporal SQL datastore connects as the Temporal server
// does.
func TestTemporal(t *testing.T) {
	pg := func(tls *temporalconfig.TLS, attrs map[string]string) *temporalconfig.SQL {
		return &temporalconfig.SQL{PluginName: "postgres12", DatabaseName: "temporal", ConnectAddr: "db:5433", ConnectProtocol: "tcp",
			User: "temporal", ConnectAttributes: attrs, MaxConns: 20, TLS: tls, Where: "here"}
	}
	my := func(tls *temporalconfig.TLS, attrs map[string]string) *temporalconfig.SQL {
		return &temporalconfig.SQL{PluginName: "mysql8", DatabaseName: "temporal", ConnectAddr: "db", ConnectProtocol: "tcp",
			User: "temporal", ConnectAttributes: attrs, TLS: tls, Where: "here"}
	}
	on := func(verify bool) *temporalconfig.TLS {
		return &temporalconfig.TLS{Enabled: true, CaFile: "/ca.pem", CertFile: "/c.pem", KeyFile: "/c.key", ServerName: "db.internal", EnableHostVerification: verify}
	}
	fromTLS := func(v sqlstore.TLSVerify) *sqlstore.TLS {
		return &sqlstore.TLS{CAFile: "/ca.pem", CertFile: "/c.pem", KeyFile: "/c.key", ServerName: "db.internal", Verify: v}
	}
	for _, c := range []struct {
		name string
		sql  *temporalconfig.SQL
		dsn  string // the URL, password included
		tls  *sqlstore.TLS
		warn string // in a warning; "" for none
		err  string
	}{
		{name: "postgres without TLS", sql: pg(nil, nil), dsn: "postgres://temporal:PW@db:5433/temporal?sslmode=disable"},
		{name: "postgres12_pgx", sql: func() *temporalconfig.SQL { s := pg(nil, nil); s.PluginName = "postgres12_pgx"; return s }(),
			dsn: "postgres://temporal:PW@db:5433/temporal?sslmode=disable"},
		{name: "postgres, TLS off, sslmode in the attributes", sql: pg(nil, map[string]string{"sslmode": "verify-full", " application_name ": " tqs "}),
			dsn: "postgres://temporal:PW@db:5433/temporal?application_name=tqs&sslmode=verify-full"},
		{name: "postgres with host verification", sql: pg(on(true), nil), dsn: "postgres://temporal:PW@db:5433/temporal", tls: fromTLS(sqlstore.VerifyFull)},
		{name: "postgres without host verification, a CA", sql: pg(on(false), nil), dsn: "postgres://temporal:PW@db:5433/temporal",
			tls: fromTLS(sqlstore.VerifyCA), warn: "checked against the CA, but not for the server's name"},
		{name: "postgres without host verification, no CA", sql: pg(&temporalconfig.TLS{Enabled: true}, nil), dsn: "postgres://temporal:PW@db:5433/temporal",
			tls: &sqlstore.TLS{Verify: sqlstore.VerifyNone}, warn: "not checked at all"},
		{name: "postgres, TLS and sslrootcert in the attributes", sql: pg(&temporalconfig.TLS{Enabled: true, CaFile: "/ca.pem", CertFile: "/c.pem", KeyFile: "/c.key"}, map[string]string{"sslrootcert": "/other.pem"}),
			dsn: "postgres://temporal:PW@db:5433/temporal?sslcert=%2Fc.pem&sslkey=%2Fc.key&sslmode=require&sslrootcert=%2Fother.pem", warn: "sslmode=require"},
		{name: "postgres, TLS and sslmode in the attributes", sql: pg(&temporalconfig.TLS{Enabled: true, CaFile: "/ca.pem"}, map[string]string{"sslmode": "verify-ca"}),
			dsn: "postgres://temporal:PW@db:5433/temporal?sslmode=verify-ca&sslrootcert=%2Fca.pem"},
		{name: "postgres, ssl attributes and caData", sql: pg(&temporalconfig.TLS{Enabled: true, CaData: "eA=="}, map[string]string{"sslmode": "verify-ca"}), err: "cannot express"},
		{name: "postgres, sslcert without sslkey", sql: pg(&temporalconfig.TLS{Enabled: true}, map[string]string{"sslcert": "/c.pem"}), err: "without the other"},
		{name: "postgres over a socket", sql: func() *temporalconfig.SQL { s := pg(nil, nil); s.ConnectProtocol = "unix"; return s }(), err: "connect over TCP"},
		{name: "postgres, no host", sql: func() *temporalconfig.SQL { s := pg(nil, nil); s.ConnectAddr = ":5432"; return s }(), err: "has no host"},
		{name: "mysql without TLS, default port, isolation quoted", sql: my(nil, map[string]string{"tx_isolation": "READ-COMMITTED"}),
			dsn: "mysql://temporal:PW@db:3306/temporal?tx_isolation=%27read-committed%27"},
		{name: "mysql with host verification", sql: my(on(true), nil), dsn: "mysql://temporal:PW@db:3306/temporal", tls: fromTLS(sqlstore.VerifyFull)},
		{name: "mysql without host verification", sql: my(on(false), nil), dsn: "mysql://temporal:PW@db:3306/temporal",
			tls: fromTLS(sqlstore.VerifyNone), warn: "not checked at all"},
		{name: "mysql, TLS and a tls attribute", sql: my(on(true), map[string]string{"tls": "skip-verify"}), dsn: "mysql://temporal:PW@db:3306/temporal?tls=skip-verify"},
		{name: "mysql over a socket", sql: func() *temporalconfig.SQL {
			s := my(nil, nil)
			s.ConnectProtocol, s.ConnectAddr = "unix", "/run/mysqld/mysqld.sock"
			return s
		}(), dsn: "mysql://temporal:PW@localhost/temporal?socket=%2Frun%2Fmysqld%2Fmysqld.sock"},
		{name: "sqlite", sql: &temporalconfig.SQL{PluginName: "sqlite", DatabaseName: "/data/temporal.db", ConnectAttributes: map[string]string{"journal_mode": "wal"}}, dsn: "sqlite:/data/temporal.db"},
		{name: "sqlite in memory", sql: &temporalconfig.SQL{PluginName: "sqlite", DatabaseName: "default", ConnectAttributes: map[string]string{"mode": "memory"}}, err: "nothing to scavenge"},
		{name: "an unknown plugin", sql: &temporalconfig.SQL{PluginName: "cockroach", DatabaseName: "t"}, err: `unknown SQL plugin "cockroach"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			tg, err := connect.Temporal(c.sql, secret)
			check(t, tg, err, c.dsn, c.tls, c.warn, c.err)
			if err == nil && c.sql.MaxConns != tg.MaxConns {
				t.Errorf("MaxConns %d, want %d", tg.MaxConns, c.sql.MaxConns)
			}
		})
	}
}

// check compares a target with the DSN (PW standing for the password),
// TLS and warning it should have, or its error with err.
func check(t *testing.T, tg connect.Target, err error, dsn string, tls *sqlstore.TLS, warn, wantErr string) {
	t.Helper()
	if wantErr != "" {
		if err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Fatalf("error %v, want one saying %q", err, wantErr)
		}
		if strings.Contains(err.Error(), secret) {
			t.Errorf("error shows the password: %v", err)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	got := "sqlite:" + tg.DSN.Path
	if tg.DSN.URL != nil {
		got = strings.Replace(tg.DSN.URL.String(), url.QueryEscape(secret), "PW", 1)
		if p, _ := tg.DSN.URL.User.Password(); p != secret && strings.Contains(dsn, "PW") {
			t.Errorf("password %q, want %q", p, secret)
		}
	}
	if got != dsn {
		t.Errorf("DSN %s, want %s", got, dsn)
	}
	if !reflect.DeepEqual(tg.TLS, tls) {
		t.Errorf("TLS %+v, want %+v", tg.TLS, tls)
	}
	warned := strings.Join(tg.Warnings, "\n")
	if (warn == "") != (warned == "") || !strings.Contains(warned, warn) {
		t.Errorf("warnings %q, want one saying %q", tg.Warnings, warn)
	}
	if strings.Contains(warned, secret) || strings.Contains(tg.DSN.String(), secret) {
		t.Errorf("a warning or the DSN's String shows the password")
	}
}

// TestSQLTool: temporal-sql-tool's settings connect as the tool does.
func TestSQLTool(t *testing.T) {
	tls := &sqlstore.TLS{CAFile: "/ca.pem"}
	for _, c := range []struct {
		name string
		s    connect.SQLTool
		dsn  string
		tls  *sqlstore.TLS
		err  string
	}{
		{name: "the tool's defaults", s: connect.SQLTool{User: "u", Password: secret}, dsn: "mysql://u:PW@127.0.0.1:3306/temporal"},
		{name: "postgres, its own default port", s: connect.SQLTool{Plugin: "postgres12", Endpoint: "db", User: "u", Password: secret, Database: "t"},
			dsn: "postgres://u:PW@db:5432/t?sslmode=disable"},
		{name: "postgres with TLS", s: connect.SQLTool{Plugin: "postgres12_pgx", Endpoint: "db", Port: 5433, User: "u", Password: secret, TLS: tls},
			dsn: "postgres://u:PW@db:5433/temporal", tls: tls},
		{name: "postgres with TLS twice", s: connect.SQLTool{Plugin: "postgres12", User: "u", ConnectAttributes: "sslmode=require", TLS: tls}, err: "keep one"},
		{name: "mysql with attributes", s: connect.SQLTool{Endpoint: "db", Port: 3307, User: "u", Password: secret, ConnectAttributes: "transaction_isolation=READ-COMMITTED&timeout=5s"},
			dsn: "mysql://u:PW@db:3307/temporal?timeout=5s&transaction_isolation=%27read-committed%27"},
		{name: "mysql with TLS twice", s: connect.SQLTool{User: "u", ConnectAttributes: "tls=true", TLS: tls}, err: "keep one"},
		{name: "an attribute twice", s: connect.SQLTool{User: "u", Password: secret, ConnectAttributes: "a=1&a=2"}, err: `"a" given 2 times`},
		{name: "a bad port", s: connect.SQLTool{Port: 70000}, err: "port 70000"},
		{name: "sqlite", s: connect.SQLTool{Plugin: "sqlite", Database: "/data/t.db"}, dsn: "sqlite:/data/t.db"},
	} {
		t.Run(c.name, func(t *testing.T) {
			tg, err := c.s.Target()
			check(t, tg, err, c.dsn, c.tls, "", c.err)
		})
	}
}

// TestTargetOptions: a target's TLS always, its connection cap only
// where the command set none.
func TestTargetOptions(t *testing.T) {
	tls := &sqlstore.TLS{}
	tg := connect.Target{TLS: tls, MaxConns: 20}
	if o := tg.Options(sqlstore.Options{}); o.TLS != tls || o.MaxConns != 20 {
		t.Errorf("%+v", o)
	}
	if o := tg.Options(sqlstore.Options{MaxConns: 4}); o.MaxConns != 4 {
		t.Errorf("MaxConns %d, want the command's 4", o.MaxConns)
	}
}
