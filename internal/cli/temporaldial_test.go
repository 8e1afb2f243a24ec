//go:build !tqs_notemporal

package cli_test

// Issue 42's finding 3: a Temporal frontend that cannot be reached, by an
// address or TLS files from a temporal CLI profile or from flags, is said
// in an operator's words (the address, where it came from, what went
// wrong, what to check), never as gRPC's "no children to pick from"; the
// exit status stays 4 for the frontend, 2 for a file or address refused
// before any dial.

import (
	"crypto/tls"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/tqscavenger/tqscavenger/internal/cli"
	"github.com/tqscavenger/tqscavenger/internal/testdb"
)

// clearTemporal unsets the temporal CLI's variables and hides the user's
// profiles file, for the test.
func clearTemporal(t *testing.T) {
	t.Helper()
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	for _, v := range []string{"TEMPORAL_PROFILE", "TEMPORAL_CONFIG_FILE", "TEMPORAL_ADDRESS", "TEMPORAL_NAMESPACE", "TEMPORAL_API_KEY",
		"TEMPORAL_TLS", "TEMPORAL_TLS_CLIENT_CERT_PATH", "TEMPORAL_TLS_CERT", "TEMPORAL_TLS_CLIENT_KEY_PATH", "TEMPORAL_TLS_KEY",
		"TEMPORAL_TLS_SERVER_CA_CERT_PATH", "TEMPORAL_TLS_CA", "TEMPORAL_TLS_SERVER_NAME", "TEMPORAL_TLS_DISABLE_HOST_VERIFICATION"} {
		t.Setenv(v, "")
		os.Unsetenv(v)
	}
}

// listen serves on a local port until the test ends: each connection is
// given to serve, which closes it.
func listen(t *testing.T, l net.Listener, serve func(net.Conn)) string {
	t.Helper()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() { defer wg.Done(); serve(c) }()
		}
	}()
	t.Cleanup(func() { l.Close(); wg.Wait() })
	return l.Addr().String()
}

func TestTemporalDialErrors(t *testing.T) {
	setEnv(t, nil)
	clearTemporal(t)
	dir := t.TempDir()
	certs, err := testdb.NewCerts(dir)
	if err != nil {
		t.Fatal(err)
	}
	// A port nothing listens on: one just closed.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := l.Addr().String()
	l.Close()
	// A server that answers in plain text, and one that speaks TLS only.
	pl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	plain := listen(t, pl, func(c net.Conn) { c.Write([]byte("HTTP/1.1 400 Bad Request\r\n\r\n")); c.Close() })
	pair, err := tls.LoadX509KeyPair(certs.ServerCert, certs.ServerKey)
	if err != nil {
		t.Fatal(err)
	}
	tl, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{pair}})
	if err != nil {
		t.Fatal(err)
	}
	tlsOnly := listen(t, tl, func(c net.Conn) { _ = c.(*tls.Conn).Handshake(); c.Close() })

	profile := func(body string) string {
		p := filepath.Join(t.TempDir(), "temporal.toml")
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	refusedProfile := profile("[profile.default]\naddress = \"" + refused + "\"\n")
	nowhereProfile := profile("[profile.default]\naddress = \"no-such-host.invalid:7233\"\n")
	missingCA := filepath.Join(dir, "missing-ca.pem")
	caProfile := profile("[profile.prod]\naddress = \"" + refused + "\"\n[profile.prod.tls]\nserver_ca_cert_path = \"" + missingCA + "\"\n")
	db := "sqlite:" + filepath.Join(t.TempDir(), "none.db")

	for _, c := range []struct {
		name   string
		env    map[string]string
		args   []string
		status int
		says   []string
	}{
		{"profile: nothing listens", map[string]string{"TEMPORAL_CONFIG_FILE": refusedProfile}, nil, cli.ExitUnavailable,
			[]string{"cannot reach the Temporal frontend " + refused + " (address of profile default in " + refusedProfile + "): connection refused", "check the profile's address, or give --temporal-address"}},
		{"profile: a name that does not resolve", map[string]string{"TEMPORAL_CONFIG_FILE": nowhereProfile}, nil, cli.ExitUnavailable,
			[]string{"cannot reach the Temporal frontend no-such-host.invalid:7233 (address of profile default in " + nowhereProfile + "): the name no-such-host.invalid does not resolve"}},
		{"profile: a missing CA file", map[string]string{"TEMPORAL_CONFIG_FILE": caProfile, "TEMPORAL_PROFILE": "prod"}, nil, cli.ExitUsage,
			[]string{"tls.server_ca_cert_path of profile prod in " + caProfile + ": " + missingCA + ": no such file or directory", "--temporal-tls-ca-path"}},
		{"flag: a name that does not resolve", nil, []string{"--temporal-address", "dns:///no-such-host.invalid:7233"}, cli.ExitUnavailable,
			[]string{"(from --temporal-address): the name no-such-host.invalid does not resolve", "give another with --temporal-address"}},
		{"variable: nothing listens", map[string]string{"TEMPORAL_ADDRESS": refused}, nil, cli.ExitUnavailable,
			[]string{"(from TEMPORAL_ADDRESS): connection refused"}},
		{"TLS to a plain server", nil, []string{"--temporal-address", plain, "--temporal-tls"}, cli.ExitUnavailable,
			[]string{"the frontend does not speak TLS, and TLS is on (--temporal-tls)"}},
		{"an API key to a plain server", map[string]string{"TEMPORAL_API_KEY": "key-42"}, []string{"--temporal-address", plain}, cli.ExitUnavailable,
			[]string{"TLS is on (--temporal-api-key from TEMPORAL_API_KEY)"}},
		{"plain to a TLS server", nil, []string{"--temporal-address", tlsOnly}, cli.ExitUnavailable,
			[]string{"it closed the connection without answering gRPC; if the frontend takes TLS, turn it on with --temporal-tls"}},
		{"a CA not trusted", nil, []string{"--temporal-address", tlsOnly, "--temporal-tls-ca-path", certs.OtherCA}, cli.ExitUnavailable,
			[]string{"its TLS certificate is signed by a CA not trusted here; give the CA with --temporal-tls-ca-path"}},
		{"a name the certificate lacks", nil, []string{"--temporal-address", tlsOnly, "--temporal-tls-ca-path", certs.CA, "--temporal-tls-server-name", "fe.example"}, cli.ExitUnavailable,
			[]string{"its TLS certificate is valid for localhost", "not fe.example", "--temporal-tls-server-name"}},
	} {
		for _, cmd := range [][]string{{"schedule", "describe"}, {"worker", "--db", db}} {
			if cmd[0] == "worker" && c.status == cli.ExitUnavailable && !strings.HasPrefix(c.name, "profile") {
				continue // the same dial; worker's needs a database first
			}
			t.Run(cmd[0]+"/"+c.name, func(t *testing.T) {
				for k, v := range c.env {
					t.Setenv(k, v)
				}
				args := append(append([]string{}, cmd...), c.args...)
				if cmd[0] == "worker" && c.status == cli.ExitUnavailable {
					args[2] = "sqlite:" + seedFile(t)
				}
				code, _, errOut := tqs(args...)
				if code != c.status {
					t.Errorf("exit %d, want %d: %s", code, c.status, errOut)
				}
				for _, s := range c.says {
					if !strings.Contains(errOut, s) {
						t.Errorf("stderr does not say %q:\n%s", s, errOut)
					}
				}
				for _, s := range []string{"no children to pick from", "failed reaching server", "desc =", "key-42"} {
					if strings.Contains(errOut, s) {
						t.Errorf("stderr says %q:\n%s", s, errOut)
					}
				}
				if strings.Count(errOut, "\n") != 1 {
					t.Errorf("stderr is not one line:\n%s", errOut)
				}
			})
		}
	}
}
