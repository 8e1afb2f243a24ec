package sqlstore_test

// TLS against real servers with certificates the test makes: a private
// PostgreSQL cluster and a private MariaDB server (package testdb), each
// with a server certificate for localhost and 127.0.0.1 signed by the
// test's CA, and a user that logs in only with a client certificate.

import (
	"crypto/tls"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tqscavenger/tqscavenger/internal/testdb"
	"github.com/tqscavenger/tqscavenger/sqlstore"
)

// TestTLS: the right CA and name work, a wrong CA or name is refused with
// an error that says which, and mutual TLS works with a client
// certificate and is refused without one, on both servers.
func TestTLS(t *testing.T) {
	data := func(path string) string {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return base64.StdEncoding.EncodeToString(b)
	}
	type tc struct {
		name string
		host string // default 127.0.0.1
		mtls bool   // as testdb.MTLSUser
		tls  func(c *testdb.Certs) sqlstore.TLS
		// want is "" for a store that opens, else the reason of the
		// TLSError; refused is a login refused after the handshake
		// (MariaDB's REQUIRE X509), with this hint.
		want    sqlstore.TLSReason
		refused string
	}
	cases := []tc{
		{name: "the CA", tls: func(c *testdb.Certs) sqlstore.TLS { return sqlstore.TLS{CAFile: c.CA} }},
		{name: "the CA, by name", host: "localhost", tls: func(c *testdb.Certs) sqlstore.TLS { return sqlstore.TLS{CAFile: c.CA} }},
		{name: "the CA as data", tls: func(c *testdb.Certs) sqlstore.TLS { return sqlstore.TLS{CAData: data(c.CA)} }},
		{name: "the server name given", tls: func(c *testdb.Certs) sqlstore.TLS { return sqlstore.TLS{CAFile: c.CA, ServerName: "localhost"} }},
		{name: "another CA", want: sqlstore.TLSUnknownAuthority, tls: func(c *testdb.Certs) sqlstore.TLS { return sqlstore.TLS{CAFile: c.OtherCA} }},
		{name: "the system's roots", want: sqlstore.TLSUnknownAuthority, tls: func(c *testdb.Certs) sqlstore.TLS { return sqlstore.TLS{} }},
		{name: "a wrong server name", want: sqlstore.TLSWrongName, tls: func(c *testdb.Certs) sqlstore.TLS {
			return sqlstore.TLS{CAFile: c.CA, ServerName: "db.example"}
		}},
		{name: "a wrong server name, CA checked only", tls: func(c *testdb.Certs) sqlstore.TLS {
			return sqlstore.TLS{CAFile: c.CA, ServerName: "db.example", Verify: sqlstore.VerifyCA}
		}},
		{name: "another CA, CA checked only", want: sqlstore.TLSUnknownAuthority, tls: func(c *testdb.Certs) sqlstore.TLS {
			return sqlstore.TLS{CAFile: c.OtherCA, ServerName: "db.example", Verify: sqlstore.VerifyCA}
		}},
		{name: "another CA, nothing checked", tls: func(c *testdb.Certs) sqlstore.TLS {
			return sqlstore.TLS{CAFile: c.OtherCA, Verify: sqlstore.VerifyNone}
		}},
		{name: "mutual TLS", mtls: true, tls: func(c *testdb.Certs) sqlstore.TLS {
			return sqlstore.TLS{CAFile: c.CA, CertFile: c.ClientCert, KeyFile: c.ClientKey}
		}},
		{name: "mutual TLS, certificate as data", mtls: true, tls: func(c *testdb.Certs) sqlstore.TLS {
			return sqlstore.TLS{CAData: data(c.CA), CertData: data(c.ClientCert), KeyData: data(c.ClientKey)}
		}},
		{name: "mutual TLS without a client certificate", mtls: true, want: sqlstore.TLSClientCertRequired, tls: func(c *testdb.Certs) sqlstore.TLS {
			return sqlstore.TLS{CAFile: c.CA}
		}},
		{name: "a client certificate of another CA", mtls: true, want: sqlstore.TLSClientCertRefused, tls: func(c *testdb.Certs) sqlstore.TLS {
			return sqlstore.TLS{CAFile: c.CA, CertFile: c.StrangerCert, KeyFile: c.StrangerKey}
		}},
	}
	for _, e := range []sqlstore.Engine{sqlstore.Postgres, sqlstore.MySQL} {
		t.Run(string(e), func(t *testing.T) {
			srv := testdb.TLSPostgres
			if e == sqlstore.MySQL {
				srv = testdb.TLSMySQL
			}
			s := srv(t)
			for _, c := range cases {
				if e == sqlstore.MySQL && c.name == "mutual TLS without a client certificate" {
					// MariaDB's REQUIRE X509 refuses the login, not the
					// handshake: the error cannot tell it from a wrong
					// password, and says both.
					c.want, c.refused = "", "requires a client certificate"
				}
				t.Run(c.name, func(t *testing.T) {
					t.Parallel()
					user, host := s.User, "127.0.0.1"
					if c.mtls {
						user = testdb.MTLSUser
					}
					if c.host != "" {
						host = c.host
					}
					tls := c.tls(s.Certs)
					db, err := sqlstore.Open(ctx, s.DSN(user, host), sqlstore.Options{TLS: &tls})
					if c.want == "" && c.refused == "" {
						if err != nil {
							t.Fatalf("Open: %v", err)
						}
						defer db.Close()
						if _, err := db.Check(ctx); err != nil {
							t.Errorf("Check: %v", err)
						}
						return
					}
					if err == nil {
						db.Close()
						t.Fatal("Open succeeded")
					}
					t.Log(err)
					for _, want := range []error{sqlstore.ErrUnavailable, sqlstore.ErrRefused} {
						if !errors.Is(err, want) {
							t.Errorf("error does not wrap %v", want)
						}
					}
					if strings.Contains(err.Error(), "\n") {
						t.Errorf("error is not one line")
					}
					if c.refused != "" {
						if !strings.Contains(err.Error(), c.refused) {
							t.Errorf("error does not say %q", c.refused)
						}
						return
					}
					var te *sqlstore.TLSError
					if !errors.As(err, &te) || !errors.Is(err, sqlstore.ErrTLS) {
						t.Fatalf("error is no *TLSError wrapping ErrTLS")
					}
					if te.Reason != c.want || !strings.Contains(err.Error(), string(c.want)) {
						t.Errorf("reason %q, want %q said", te.Reason, c.want)
					}
				})
			}
		})
	}
}

// TestTLSNeverPlainText: with TLS settings, a server that does not offer
// TLS is refused, and no plain-text connection is tried instead (pgx's
// default sslmode=prefer, MySQL's tls=preferred would).
func TestTLSNeverPlainText(t *testing.T) {
	t.Run("postgres", func(t *testing.T) {
		// A server that answers PostgreSQL's SSLRequest with "N" (no TLS)
		// and tells whether a client went on without TLS, on the same
		// connection or on another one.
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		plain := make(chan bool, 1)
		go func() {
			sawPlain := false
			defer func() { plain <- sawPlain }()
			for {
				conn, err := ln.Accept()
				if err != nil {
					return // the listener is closed: the client is done
				}
				msg := make([]byte, 8)
				if _, err := io.ReadFull(conn, msg); err == nil {
					if binary.BigEndian.Uint32(msg[4:]) != 80877103 { // not an SSLRequest: a startup message
						sawPlain = true
					} else {
						conn.Write([]byte("N"))
						n, _ := conn.Read(make([]byte, 1)) // a startup message, or the client's close
						sawPlain = sawPlain || n > 0
					}
				}
				conn.Close()
			}
		}()
		_, err = sqlstore.Open(ctx, "postgres://u:"+secret+"@"+ln.Addr().String()+"/db", sqlstore.Options{TLS: &sqlstore.TLS{}})
		ln.Close()
		var te *sqlstore.TLSError
		if !errors.As(err, &te) || te.Reason != sqlstore.TLSNotOffered {
			t.Errorf("error %v, want a TLSError %q", err, sqlstore.TLSNotOffered)
		}
		if <-plain {
			t.Error("the client went on in plain text")
		}
	})
	t.Run("mysql", func(t *testing.T) {
		// The shared test server has no TLS (have_ssl DISABLED).
		_, err := sqlstore.Open(ctx, testdb.Server(t, sqlstore.MySQL), sqlstore.Options{TLS: &sqlstore.TLS{}})
		var te *sqlstore.TLSError
		if !errors.As(err, &te) || te.Reason != sqlstore.TLSNotOffered || !errors.Is(err, sqlstore.ErrRefused) {
			t.Errorf("error %v, want a TLSError %q", err, sqlstore.TLSNotOffered)
		}
	})
}

// TestTLSSettingsErrors: TLS settings that cannot work are refused before
// any connection, with ErrTLS, never showing a key.
func TestTLSSettingsErrors(t *testing.T) {
	dir := t.TempDir()
	certs, err := testdb.NewCerts(dir)
	if err != nil {
		t.Fatal(err)
	}
	const keyData = "not-base64-" + secret
	for _, c := range []struct {
		name, dsn string
		tls       sqlstore.TLS
		says      string
	}{
		{"a missing CA file", "postgres://u@h/db", sqlstore.TLS{CAFile: filepath.Join(dir, "nope.crt")}, "read the CA"},
		{"a CA file without a certificate", "mysql://u@h/db", sqlstore.TLS{CAFile: certs.ClientKey}, "holds no PEM certificate"},
		{"a CA as file and data", "postgres://u@h/db", sqlstore.TLS{CAFile: certs.CA, CAData: "eA=="}, "both as a file and as data"},
		{"a certificate without its key", "postgres://u@h/db", sqlstore.TLS{CertFile: certs.ClientCert}, "without its key"},
		{"a key without its certificate", "mysql://u@h/db", sqlstore.TLS{KeyFile: certs.ClientKey}, "without its certificate"},
		{"a key of another certificate", "mysql://u@h/db", sqlstore.TLS{CertFile: certs.ClientCert, KeyFile: certs.StrangerKey}, "client certificate"},
		{"key data that is not base64", "postgres://u@h/db", sqlstore.TLS{CertFile: certs.ClientCert, KeyData: keyData}, "neither base64 nor PEM"},
		{"sslmode in the DSN too", "postgres://u:" + secret + "@h/db?sslmode=verify-full", sqlstore.TLS{}, "sslmode"},
		{"tls in the DSN too", "mysql://u:" + secret + "@h/db?tls=true", sqlstore.TLS{}, "tls="},
		{"a Unix socket", "mysql://u@h/db?socket=/run/mysqld.sock", sqlstore.TLS{}, "Unix socket"},
		{"SQLite", filepath.Join(dir, "x.db"), sqlstore.TLS{}, "no TLS"},
	} {
		t.Run(c.name, func(t *testing.T) {
			d, err := sqlstore.ParseDSN(c.dsn)
			if err != nil {
				t.Fatal(err)
			}
			_, err = sqlstore.Connector(d, sqlstore.Options{TLS: &c.tls, Create: true})
			if !errors.Is(err, sqlstore.ErrTLS) || !strings.Contains(err.Error(), c.says) {
				t.Errorf("error %v, want ErrTLS saying %q", err, c.says)
			}
			if err != nil && strings.Contains(err.Error(), secret) {
				t.Errorf("error shows a secret: %v", err)
			}
		})
	}
}

// TestTLSClosedAfterClientCert: under TLS 1.3 a server refuses a client
// certificate after the client's side of the handshake is done, and its
// connection may close before its alert is read. A connection closed
// once the server asked for the client certificate and got it is
// reported as a refused certificate; one closed without that is not a
// TLS failure at all.
func TestTLSClosedAfterClientCert(t *testing.T) {
	certs, err := testdb.NewCerts(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.LoadX509KeyPair(certs.ServerCert, certs.ServerKey)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name     string
		askCert  bool
		sendCert bool
		want     sqlstore.TLSReason // "" for no TLSError
	}{
		{"a client certificate asked for and sent", true, true, sqlstore.TLSClientCertRefused},
		{"no client certificate asked for", false, true, ""},
		{"no client certificate to send", true, false, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			// A PostgreSQL server that says yes to TLS, completes the
			// handshake, and closes the connection without a word.
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			cfg := &tls.Config{Certificates: []tls.Certificate{pair}, ClientAuth: tls.NoClientCert}
			if c.askCert {
				cfg.ClientAuth = tls.RequestClientCert
			}
			done := make(chan struct{})
			go func() {
				defer close(done)
				for {
					conn, err := ln.Accept()
					if err != nil {
						return
					}
					if _, err := io.ReadFull(conn, make([]byte, 8)); err == nil {
						conn.Write([]byte("S"))
						tls.Server(conn, cfg).Handshake()
					}
					conn.Close()
				}
			}()
			st := &sqlstore.TLS{CAFile: certs.CA}
			if c.sendCert {
				st.CertFile, st.KeyFile = certs.ClientCert, certs.ClientKey
			}
			_, err = sqlstore.Open(ctx, "postgres://u@"+ln.Addr().String()+"/db", sqlstore.Options{TLS: st})
			ln.Close()
			<-done
			t.Log(err)
			var te *sqlstore.TLSError
			switch {
			case err == nil:
				t.Fatal("Open succeeded")
			case c.want == "" && (errors.As(err, &te) || errors.Is(err, sqlstore.ErrRefused)):
				t.Errorf("a closed connection is reported as refused TLS: %v", err)
			case c.want != "" && (!errors.As(err, &te) || te.Reason != c.want || !errors.Is(err, sqlstore.ErrRefused)):
				t.Errorf("error %v, want a TLSError %q", err, c.want)
			}
		})
	}
}
