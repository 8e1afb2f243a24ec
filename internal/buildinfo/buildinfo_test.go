package buildinfo

// Tests of the version and revision a release build stamps.

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestStamped: the linker's values win over the toolchain's record, and
// an unstamped build keeps the record.
func TestStamped(t *testing.T) {
	rec := Info{Version: "(devel)", Revision: "unknown", GoVersion: "go1.26.8"}
	if got := stamped(rec); got != rec {
		t.Errorf("unstamped: got %+v, want %+v", got, rec)
	}
	version, revision = "v0.1.0", "0123abcd"
	t.Cleanup(func() { version, revision = "", "" })
	want := Info{Version: "v0.1.0", Revision: "0123abcd", GoVersion: "go1.26.8"}
	if got := stamped(rec); got != want {
		t.Errorf("stamped: got %+v, want %+v", got, want)
	}
	if got := Read(); got.Version != "v0.1.0" || got.Revision != "0123abcd" {
		t.Errorf("Read: got %+v, want version v0.1.0, revision 0123abcd", got)
	}
}

// TestLinkerFlags builds a program with the release's -X flags and reads
// its version back: the variables' import path is the one scripts/release
// and the Dockerfile name, so a rename here fails this test, not a release.
func TestLinkerFlags(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a program")
	}
	bin := filepath.Join(t.TempDir(), "stamp")
	const pkg = "github.com/tqscavenger/tqscavenger/internal/buildinfo"
	build := exec.Command("go", "build", "-o", bin,
		"-ldflags", "-X "+pkg+".version=v9.8.7 -X "+pkg+".revision=feedface", "./testdata/stamp")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin).Output()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(out)); !strings.HasPrefix(got, "tqscavenger v9.8.7 (revision feedface, go") {
		t.Errorf("got %q, want tqscavenger v9.8.7 (revision feedface, go…)", got)
	}
}
