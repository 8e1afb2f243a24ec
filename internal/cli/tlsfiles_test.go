//go:build unix

package cli_test

import (
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/tqscavenger/tqscavenger/internal/cli"
	"github.com/tqscavenger/tqscavenger/internal/testdb"
	"github.com/tqscavenger/tqscavenger/sqlstore"
)

// TestTLSFilesBounded: a file named as a TLS CA, certificate or key (by
// flag or by a PostgreSQL DSN's sslrootcert) that is huge, a device, a
// FIFO, a directory or no PEM is refused with a clear error naming it,
// exit 2, before it is read whole (/dev/zero would be read without end, a
// FIFO without a writer would block the open for ever); the file's
// content is never quoted.
//
// Invariant: exit 2, an error naming the file and why, no byte of it.
func TestTLSFilesBounded(t *testing.T) {
	setEnv(t, nil)
	dsn := testdb.DSN(t, sqlstore.Postgres)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Del("sslmode") // the TLS flags' own
	u.RawQuery = q.Encode()
	flagDSN := u.String()
	q.Set("sslmode", "verify-full")
	dir := t.TempDir()
	big := filepath.Join(dir, "big.pem")
	os.WriteFile(big, nil, 0o600)
	os.Truncate(big, sqlstore.MaxTLSFileBytes+1)
	fifo := filepath.Join(dir, "fifo.pem")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(dir, "secret.pem")
	os.WriteFile(secret, []byte("SECRET-LINE-OF-A-WRONG-FILE\n"), 0o600)
	cases := []struct {
		name, path, why string
	}{
		{"too large", big, "allowed"},
		{"device", "/dev/zero", "not a regular file"},
		{"fifo", fifo, "not a regular file"},
		{"directory", dir, "not a regular file"},
		{"no PEM", secret, "no PEM"},
	}
	for _, c := range cases {
		for _, flag := range []string{"--tls-ca-file", "sslrootcert"} {
			t.Run(c.name+"/"+flag, func(t *testing.T) {
				args := []string{"run", "--dry-run", "--db", flagDSN, "--tls", "--tls-ca-file", c.path}
				if flag == "sslrootcert" {
					if c.why == "no PEM" {
						t.Skip("pgx reads a file that is no PEM itself, bounded")
					}
					q.Set("sslrootcert", c.path)
					u.RawQuery = q.Encode()
					args = []string{"run", "--dry-run", "--db", u.String()}
				}
				code, _, stderr := tqs(args...)
				if code != cli.ExitUsage || !strings.Contains(stderr, c.path) || !strings.Contains(stderr, c.why) {
					t.Errorf("exit %d, want %d naming %s and %q: %s", code, cli.ExitUsage, c.path, c.why, stderr)
				}
				if strings.Contains(stderr, "SECRET-LINE") {
					t.Errorf("the error quotes the file: %s", stderr)
				}
			})
		}
	}
	for _, flag := range []string{"--tls-cert-file", "--tls-key-file"} {
		code, _, stderr := tqs("run", "--dry-run", "--db", flagDSN, "--tls", flag, "/dev/zero")
		if code != cli.ExitUsage || !strings.Contains(stderr, "not a regular file") {
			t.Errorf("%s /dev/zero: exit %d: %s", flag, code, stderr)
		}
	}
}
