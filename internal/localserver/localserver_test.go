package localserver

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

func TestFindBinary(t *testing.T) {
	dir := t.TempDir()
	for _, v := range []string{"14", "15"} {
		bin := filepath.Join(dir, v, "bin")
		if err := os.MkdirAll(bin, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(bin, "tqs-no-such-tool"), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "15", "bin", "tqs-not-executable"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		names []string
		want  string
	}{
		{[]string{"tqs-no-such-tool"}, filepath.Join(dir, "15", "bin", "tqs-no-such-tool")}, // the newest version first
		{[]string{"tqs-not-executable"}, ""},
		{[]string{"tqs-missing", "tqs-no-such-tool"}, filepath.Join(dir, "15", "bin", "tqs-no-such-tool")},
		{[]string{"tqs-missing"}, ""},
	} {
		if got := FindBinary(c.names, filepath.Join(dir, "*", "bin")); got != c.want {
			t.Errorf("FindBinary(%v) = %q, want %q", c.names, got, c.want)
		}
	}
}

func TestFreePort(t *testing.T) {
	p := FreePort()
	if p < 20000 || p >= 32768 {
		t.Fatalf("FreePort() = %d, want within [20000, 32768)", p)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
	if err != nil {
		t.Fatalf("port %d is not free: %v", p, err)
	}
	ln.Close()
}

// TestPostgres: where PostgreSQL is installed, initdb and postgres are one
// installation's, whatever link PATH holds.
func TestPostgres(t *testing.T) {
	initdb, postgres, err := Postgres()
	if err != nil {
		t.Skipf("no PostgreSQL here: %v", err)
	}
	if filepath.Dir(initdb) != filepath.Dir(postgres) || !IsExecutable(postgres) {
		t.Errorf("initdb %s, postgres %s: not one installation's", initdb, postgres)
	}
	if fi, err := os.Lstat(initdb); err != nil || fi.Mode()&os.ModeSymlink != 0 {
		t.Errorf("initdb %s is a link or unreadable (%v)", initdb, err)
	}
}
