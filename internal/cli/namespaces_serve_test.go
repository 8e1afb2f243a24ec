package cli_test

import (
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tqscavenger/tqscavenger/internal/fixture"
)

// TestServeNamespaceNames: serve refuses a namespace name the database
// does not have, at start (exit status 2) and at a SIGHUP reload (the
// reload is refused, naming the names present, and the settings stay);
// a name that is there reloads.
func TestServeNamespaceNames(t *testing.T) {
	setEnv(t, nil)
	db := fixture.Path(t, "temporal-1.32-aged72h")
	file := writeTemp(t, "tqscavenger.yaml", "")
	write := func(ns string) {
		t.Helper()
		if err := os.WriteFile(file, []byte("db: "+db+"\nnamespace: "+ns+"\ndry-run: true\nserve:\n  every: 1h\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("nope")
	if code := startServe(t, "--config", file).wait(30 * time.Second); code != 2 {
		t.Fatalf("serve with an unknown namespace name: exit %d, want 2", code)
	}
	write("default")
	p := startServe(t, "--config", file, "--run-at-start")
	p.waitLog("scavenger pass completed", 1)
	write("nope")
	p.signal(syscall.SIGHUP)
	refused := p.waitLog("configuration reload refused, the settings in effect are kept", 1)
	if msg, _ := refused["err"].(string); !strings.Contains(msg, `"nope"`) || !strings.Contains(msg, "default, temporal-system") {
		t.Errorf("refused reload: %v", refused)
	}
	write("temporal-system")
	p.signal(syscall.SIGHUP)
	p.waitLog("configuration reloaded", 1)
	p.signal(syscall.SIGTERM)
	if code := p.wait(30 * time.Second); code != 0 {
		t.Errorf("exit status %d", code)
	}
}
