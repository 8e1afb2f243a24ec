package cli_test

import (
	"html"
	"os"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestServeSIGHUP: a real serve process re-reads its config file on
// SIGHUP. A rate limit lifted in the file frees the pass it held; a flag
// given on the command line (--protect) keeps its value whatever the file
// says; a bad file, and a file that changes the database, are refused
// with a log line and the settings in effect stay; the status page and
// /metrics show the settings and when they were loaded.
func TestServeSIGHUP(t *testing.T) {
	setEnv(t, nil)
	db := seedFile(t)
	file := writeTemp(t, "tqscavenger.yaml", "")
	write := func(text string) {
		t.Helper()
		if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// One statement per 1000 s: the pass holds at its second statement.
	write("db: " + db + "\nmax-statements-per-second: 0.001\nprotect: from-file-\nserve:\n  every: 1h\n")
	p := startServe(t, "--config", file, "--protect", "from-flag-", "--run-at-start")
	addr := p.addr()
	p.waitLog("scavenger pass started", 1)
	if n := p.count("scavenger pass completed"); n != 0 {
		t.Fatalf("the pass completed under a limit of 1 statement per 1000 s")
	}
	m := scrape(t, addr)
	loaded := m["tqscavenger_config_loaded_timestamp_seconds"]
	if loaded == 0 || m[`tqscavenger_config_reloads_total{result="applied"}`] != 0 {
		t.Fatalf("before the reload: loaded %v, reloads %v", loaded, m[`tqscavenger_config_reloads_total{result="applied"}`])
	}

	// Lift the limit, change what the flag already set, and the schedule.
	write("db: " + db + "\nmax-statements-per-second: 0\nprotect: from-file-again-\nstatement-timeout: 7s\nlog-level: info\nserve:\n  every: 30m\n")
	p.signal(syscall.SIGHUP)
	re := p.waitLog("configuration reloaded", 1)
	p.waitLog("scavenger pass completed", 1)
	changed, _ := re["changed"].(string)
	for _, want := range []string{"max-statements-per-second=unlimited (file, was 0.001)", "every=30m (file, was 1h)", "statement-timeout=7s (file, was none)"} {
		if !strings.Contains(changed, want) {
			t.Errorf("the reload's log line does not say %q: %v", want, re)
		}
	}
	if strings.Contains(changed, "protect") {
		t.Errorf("the reload changed --protect, given as a flag: %v", re)
	}
	_, page := get(t, "http://"+addr+"/")
	for _, want := range []string{"<code>protect</code></td><td><code>from-flag-</code></td><td class=\"muted\">flag", "<code>every</code></td><td><code>30m</code></td><td class=\"muted\">file",
		"<code>max-statements-per-second</code></td><td><code>unlimited</code>", "reload-applied"} {
		if !strings.Contains(page, want) {
			t.Errorf("status page lacks %q", want)
		}
	}
	m = scrape(t, addr)
	if m[`tqscavenger_config_reloads_total{result="applied"}`] != 1 || m["tqscavenger_config_loaded_timestamp_seconds"] <= loaded {
		t.Errorf("after the reload: reloads %v, loaded %v (was %v)", m[`tqscavenger_config_reloads_total{result="applied"}`], m["tqscavenger_config_loaded_timestamp_seconds"], loaded)
	}

	// A bad file: refused, logged, the settings stay.
	write("db: " + db + "\nworkers: many\nserve:\n  every: 5m\n")
	p.signal(syscall.SIGHUP)
	bad := p.waitLog("configuration reload refused, the settings in effect are kept", 1)
	if !strings.Contains(bad["err"].(string), `workers: not a valid int`) || strings.Contains(bad["err"].(string), "many") || bad["result"] != "invalid" {
		t.Errorf("refusal: %v", bad)
	}
	// The grace floor is checked again, as at start.
	write("db: " + db + "\ngrace: 1h\n")
	p.signal(syscall.SIGHUP)
	short := p.waitLog("configuration reload refused, the settings in effect are kept", 2)
	if !strings.Contains(short["err"].(string), "grace") {
		t.Errorf("refusal of a short grace: %v", short)
	}
	// Another database needs a restart.
	write("db: " + seedFile(t) + "\n")
	p.signal(syscall.SIGHUP)
	restart := p.waitLog("configuration reload refused, the settings in effect are kept", 3)
	if restart["result"] != "needs_restart" || !strings.Contains(restart["err"].(string), "db changed: a restart applies it") {
		t.Errorf("refusal of a new database: %v", restart)
	}
	m = scrape(t, addr)
	if m[`tqscavenger_config_reloads_total{result="invalid"}`] != 2 || m[`tqscavenger_config_reloads_total{result="needs_restart"}`] != 1 || m[`tqscavenger_config_reloads_total{result="applied"}`] != 1 {
		t.Errorf("reload counts: %v", m)
	}
	_, page = get(t, "http://"+addr+"/")
	if !strings.Contains(page, "<code>every</code></td><td><code>30m</code>") || !strings.Contains(page, "reload-needs_restart") {
		t.Errorf("after refused reloads the status page does not show the settings in effect")
	}
	// The log level applies at once: at warn, a reload logs only what
	// went wrong.
	write("db: " + db + "\nlog-level: warn\nserve:\n  every: 30m\n")
	p.signal(syscall.SIGHUP)
	p.waitLog("configuration reloaded", 2)
	write("db: " + db + "\nlog-level: warn\nworkers: -1\n")
	p.signal(syscall.SIGHUP)
	p.waitLog("configuration reload refused, the settings in effect are kept", 4)
	if n := p.count("SIGHUP: reloading the configuration"); n != 5 {
		t.Errorf("%d reloads logged at info, want 5: the 6th is under log-level warn", n)
	}
	p.signal(syscall.SIGTERM)
	if code := p.wait(30 * time.Second); code != 0 {
		t.Errorf("exit status %d", code)
	}
	t.Logf("serve's log:\n%s", p.log())
}

// TestConfigOutputStartsServe: config's output, every default uncommented,
// given to a real serve as its --config, starts it with the settings
// config printed: the status page shows each with the same value.
func TestConfigOutputStartsServe(t *testing.T) {
	setEnv(t, nil)
	db := seedFile(t)
	first := writeTemp(t, "first.yaml", "db: "+db+"\nworkers: 7\nprotect: [a-, b-]\nmax-deletes-per-second: 250.5\nserve:\n  every: 6h\n  jitter: 5m\n")
	code, out, errOut := tqs("config", "--config", first, "--grace", "72h", "--listen", "127.0.0.1:0")
	if code != 0 {
		t.Fatalf("config: exit %d: %s", code, errOut)
	}
	want := map[string]string{}
	var file strings.Builder
	for _, l := range strings.Split(out, "\n") {
		if v, ok := strings.CutSuffix(l, "  (default)"); ok && strings.HasPrefix(v, "# ") {
			l = strings.TrimPrefix(v, "# ")
		}
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		kv, note, _ := strings.Cut(l, "  #")
		k, v, _ := strings.Cut(kv, ": ")
		if uq, err := strconv.Unquote(v); err == nil {
			v = uq
		}
		if w := strings.TrimSpace(note); w == "unlimited" || w == "none" {
			v = w // a 0 that means no bound: the page shows it as help says it
		}
		want[k] = v
		file.WriteString(l + "\n")
	}
	if len(want) < 40 || want["workers"] != "7" || want["grace"] != "72h" || want["jitter"] != "5m" {
		t.Fatalf("config printed %d settings: %v", len(want), want)
	}
	p := startServe(t, "--config", writeTemp(t, "second.yaml", file.String()))
	_, page := get(t, "http://"+p.addr()+"/")
	rows := regexp.MustCompile(`<tr><td><code>([^<]+)</code></td><td><code>([^<]*)</code></td>`).FindAllStringSubmatch(page, -1)
	got := map[string]string{}
	for _, r := range rows {
		got[r[1]] = html.UnescapeString(r[2])
	}
	for k, v := range want {
		if k == "listen" || k == "log-format" || k == "jitter" || k == "unsafe-short-interval" {
			continue // startServe gives these on its command line
		}
		if got[k] != v {
			t.Errorf("serve runs with %s = %q, config printed %q", k, got[k], v)
		}
	}
	p.signal(syscall.SIGTERM)
	if code := p.wait(30 * time.Second); code != 0 {
		t.Errorf("exit status %d", code)
	}
}
