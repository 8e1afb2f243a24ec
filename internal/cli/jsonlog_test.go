package cli_test

import (
	"encoding/json"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tqscavenger/tqscavenger/daemon"
)

// untyped matches a string value that is a duration or a list in Go's
// print form: what a typed JSON log writes as a number or an array.
var untyped = regexp.MustCompile(`^(\[.*\]|-?[0-9.]+(ns|µs|us|ms|s|m|h)([0-9.]+(ns|µs|us|ms|s|m|h))*)$`)

// checkTyped fails the test for a string value of line (a decoded log
// line), at any depth, that holds an untyped duration or list.
func checkTyped(t *testing.T, line map[string]any) {
	t.Helper()
	var walk func(key string, v any)
	walk = func(key string, v any) {
		switch x := v.(type) {
		case string:
			if untyped.MatchString(x) {
				t.Errorf("%q: %s = %q, a duration or list as a string", line["msg"], key, x)
			}
		case map[string]any:
			for k, e := range x {
				walk(key+"."+k, e)
			}
		case []any:
			for _, e := range x {
				walk(key+"[]", e)
			}
		}
	}
	for k, v := range line {
		walk(k, v)
	}
}

// decodeLog decodes JSON log lines, failing the test for any other line.
func decodeLog(t *testing.T, s string) map[string][]map[string]any {
	t.Helper()
	byMsg := map[string][]map[string]any{}
	for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("not a JSON log line: %q: %v", l, err)
		}
		msg, _ := m["msg"].(string)
		byMsg[msg] = append(byMsg[msg], m)
		checkTyped(t, m)
	}
	return byMsg
}

// seconds returns the number at key, failing the test unless it is one
// within [lo, hi].
func seconds(t *testing.T, line map[string]any, key string, lo, hi float64) float64 {
	t.Helper()
	v, ok := line[key].(float64)
	if !ok || v < lo || v > hi {
		t.Errorf("%q: %s = %#v, want a number of seconds in [%g, %g]", line["msg"], key, line[key], lo, hi)
	}
	return v
}

// TestJSONLogRun decodes a real run's JSON log: durations are seconds,
// lists are arrays, and the messages are the text log's.
func TestJSONLogRun(t *testing.T) {
	path := seedFile(t)
	start := time.Now()
	code, out, errOut := runMain("run", "--db", path, "--log-format", "json", "--log-level", "debug", "--progress", "never")
	took := time.Since(start).Seconds()
	if code != 0 {
		t.Fatalf("run exit %d\n%s\n%s", code, out, errOut)
	}
	log := decodeLog(t, errOut)
	for _, msg := range []string{"scavenging", "scavenger pass started", "queue processed", "scavenger pass completed"} {
		if len(log[msg]) == 0 {
			t.Errorf("no %q line in the log:\n%s", msg, errOut)
		}
	}
	if t.Failed() {
		return
	}
	tables, ok := log["scavenging"][0]["tables"].([]any)
	if !ok || len(tables) != 2 || tables[0] != "v2" && tables[0] != "v1" {
		t.Errorf("scavenging: tables = %#v, want an array of table names", log["scavenging"][0]["tables"])
	}
	done := log["scavenger pass completed"][0]
	if e := seconds(t, done, "elapsed", 1e-6, took); e > 0 {
		t.Logf(`"elapsed":%v`, e)
	}
	for _, k := range []string{"queues_processed", "tasks_deleted"} {
		if n, ok := done[k].(float64); !ok || n <= 0 {
			t.Errorf("%s = %#v, want a positive number", k, done[k])
		}
	}
	if q := log["queue processed"][0]; q["table"] != "v1" {
		t.Errorf("queue processed: table = %#v, want \"v1\"", q["table"])
	}
}

// TestJSONLogServe: serve's own durations (the jitter, the time to the
// next pass) are seconds too.
func TestJSONLogServe(t *testing.T) {
	path := seedFile(t)
	p := startServe(t, "--db", path, "--every", "1h", "--run-at-start")
	started := p.waitLog("serve started", 1)
	seconds(t, started, "jitter", 0, 0)
	seconds(t, p.waitLog("scavenger pass completed", 1), "elapsed", 1e-6, 60)
	seconds(t, p.waitLog(daemon.MsgNextPass, 2), "in", 3500, 3600) // the first is the pass at start
	p.signal(syscall.SIGTERM)
	if code := p.wait(30 * time.Second); code != 0 {
		t.Errorf("exit status %d after SIGTERM, want 0", code)
	}
	decodeLog(t, p.log())
}

// TestTextLogRun: the text log keeps Go's forms, read by people.
func TestTextLogRun(t *testing.T) {
	path := seedFile(t)
	code, out, errOut := runMain("run", "--db", path, "--progress", "never")
	if code != 0 {
		t.Fatalf("run exit %d\n%s\n%s", code, out, errOut)
	}
	for _, re := range []string{`msg=scavenging .*tables="\[v\d v\d\]"`, `msg="scavenger pass completed" .* elapsed=[0-9.]+(µs|ms|s)\n`} {
		if !regexp.MustCompile(re).MatchString(errOut) {
			t.Errorf("text log does not match %s:\n%s", re, errOut)
		}
	}
}
