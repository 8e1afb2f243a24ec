package check

// The systemd unit deploy/tqscavenger.service: what its [Service] section
// must say for serve's exit statuses.

import (
	"bufio"
	"bytes"
	"os"
	"slices"
	"strings"
	"testing"
)

// unitSection returns the settings of one section of a systemd unit file,
// each key's values in order (a key may be given more than once).
func unitSection(t *testing.T, path, section string) map[string][]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	var in bool
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		switch {
		case l == "" || l[0] == '#' || l[0] == ';':
		case l[0] == '[':
			in = l == "["+section+"]"
		case in:
			k, v, ok := strings.Cut(l, "=")
			if !ok {
				t.Fatalf("%s: [%s]: %q is not KEY=VALUE", path, section, l)
			}
			out[strings.TrimSpace(k)] = append(out[strings.TrimSpace(k)], strings.TrimSpace(v))
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(out) == 0 {
		t.Fatalf("%s: no [%s] section", path, section)
	}
	return out
}

// TestSystemdRestart: serve is restarted after a failure (exit 4, a
// database that cannot be reached, may pass), but not after exit 2, bad
// settings or credentials, which a restart every RestartSec would only
// repeat forever.
func TestSystemdRestart(t *testing.T) {
	s := unitSection(t, "../tqscavenger.service", "Service")
	if r := s["Restart"]; !slices.Equal(r, []string{"on-failure"}) {
		t.Errorf("Restart=%v, want on-failure", r)
	}
	var prevent []string
	for _, v := range s["RestartPreventExitStatus"] {
		prevent = append(prevent, strings.Fields(v)...)
	}
	if !slices.Contains(prevent, "2") {
		t.Errorf("RestartPreventExitStatus %v lacks 2: bad settings or credentials restart forever", prevent)
	}
	if slices.Contains(prevent, "4") {
		t.Errorf("RestartPreventExitStatus %v holds 4: an unreachable database would never be tried again", prevent)
	}
}
