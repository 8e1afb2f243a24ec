package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDemoHint: the demo suggests `go run` only when go run built it, and
// sqlite3 only where it is installed.
func TestDemoHint(t *testing.T) {
	saved := os.Args[0]
	defer func() { os.Args[0] = saved }()
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "sqlite3"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		arg0, path     string
		goRun, sqlite3 bool
	}{
		{"/usr/local/bin/tqscavenger", bin, false, true},
		{"/tmp/go-build1234/b001/exe/tqscavenger", bin, true, true},
		{"./tqscavenger", t.TempDir(), false, false},
	} {
		os.Args[0] = c.arg0
		t.Setenv("PATH", c.path)
		h := demoHint("demo.db")
		if strings.Contains(h, "go run") != c.goRun || strings.Contains(h, "sqlite3") != c.sqlite3 {
			t.Errorf("run as %s, PATH %s: %q: want go run %v, sqlite3 %v", c.arg0, c.path, h, c.goRun, c.sqlite3)
		}
		if !c.goRun && !strings.Contains(h, c.arg0+" run --db demo.db --dry-run") {
			t.Errorf("run as %s: the rerun does not name it: %q", c.arg0, h)
		}
	}
}

// TestDemoQuiet: the demo prints no INFO lines between its tables (its
// log level is warn unless --log-level says otherwise).
func TestDemoQuiet(t *testing.T) {
	path := filepath.Join(t.TempDir(), "d.db")
	var out, errOut bytes.Buffer
	if code := Main([]string{"demo", "--db", path}, &out, &errOut); code != 0 {
		t.Fatalf("demo: exit %d: %s", code, errOut.String())
	}
	if strings.Contains(errOut.String(), "INFO") || !strings.Contains(out.String(), "After:") {
		t.Errorf("demo logged INFO lines, or printed no tables:\nstderr: %s\nstdout: %s", errOut.String(), out.String())
	}
}

// TestCompletionNeedsBashCompletion: help says bash's completion needs
// the bash-completion package.
func TestCompletionNeedsBashCompletion(t *testing.T) {
	var out bytes.Buffer
	Main([]string{"-h"}, &out, &out)
	if !strings.Contains(out.String(), "bash-completion package") {
		t.Errorf("help does not say bash completion needs the bash-completion package:\n%s", out.String())
	}
}
