package daemon_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/tqscavenger/tqscavenger/daemon"
	"github.com/tqscavenger/tqscavenger/seed"
)

// TestStatusPageSettingsFolded: the settings table shows what was set;
// the defaults are folded away under a summary that counts them.
func TestStatusPageSettingsFolded(t *testing.T) {
	db := seeded(t, seed.Spec{Queues: 1})
	d := newDaemon(t, daemon.Config{DB: db, Clock: newFakeClock(), Settings: []daemon.Setting{
		{Name: "db", Value: "/data/tasks.db", Source: "flag"},
		{Name: "workers", Value: "4", Source: "default"},
		{Name: "max-deletes-per-second", Value: "unlimited", Source: "default"},
		{Name: "every", Value: "1h", Source: "file"},
	}})
	srv := httptest.NewServer(d.Handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	page := string(b)
	set := regexp.MustCompile(`(?s)<table id="settings-set">.*?</table>`).FindString(page)
	folded := regexp.MustCompile(`(?s)<details id="settings-default">.*?</details>`).FindString(page)
	if set == "" || folded == "" {
		t.Fatalf("no settings table, or no folded defaults:\n%s", page)
	}
	for _, name := range []string{"db", "every"} {
		if !strings.Contains(set, "<code>"+name+"</code>") || strings.Contains(folded, "<code>"+name+"</code>") {
			t.Errorf("%s (set) is not in the table, or is folded", name)
		}
	}
	for _, name := range []string{"workers", "max-deletes-per-second"} {
		if strings.Contains(set, "<code>"+name+"</code>") || !strings.Contains(folded, "<code>"+name+"</code>") {
			t.Errorf("%s (a default) is in the table, or not folded", name)
		}
	}
	if !strings.Contains(folded, "2 settings at their defaults") || !strings.Contains(folded, "<code>unlimited</code>") {
		t.Errorf("the folded defaults do not count 2 or show unlimited:\n%s", folded)
	}
}
