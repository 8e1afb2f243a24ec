package localserver

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// TestLookupUser: as root a server's user is the named one, and a name
// that does not exist is refused; otherwise it is this process's own.
func TestLookupUser(t *testing.T) {
	u, err := LookupUser("tqs-no-such-user")
	if os.Geteuid() != 0 {
		if err != nil || u.cred != nil {
			t.Fatalf("not root: %+v, %v; want this process's own user", u, err)
		}
		t.Skip("not root: the named user is looked up only by root")
	}
	if err == nil || !strings.Contains(err.Error(), `no user "tqs-no-such-user"`) {
		t.Errorf("a user that does not exist: %v", err)
	}
	nobody, err := LookupUser("nobody")
	if err != nil {
		t.Skip(err)
	}
	if nobody.cred == nil || nobody.cred.Uid == 0 {
		t.Fatalf("nobody: %+v", nobody.cred)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "f"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := nobody.Chown(dir); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{dir, filepath.Join(dir, "f")} {
		var st syscall.Stat_t
		if err := syscall.Stat(p, &st); err != nil || st.Uid != nobody.cred.Uid {
			t.Errorf("%s: owner %d, %v; want %d", p, st.Uid, err, nobody.cred.Uid)
		}
	}
	// The child runs as the user.
	cmd := exec.Command("id", "-u")
	nobody.RunAs(cmd)
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(out)); got != strings.TrimSpace(itoa(nobody.cred.Uid)) {
		t.Errorf("id -u as nobody: %s, want %d", got, nobody.cred.Uid)
	}
}

func itoa(n uint32) string { return strconv.FormatUint(uint64(n), 10) }
