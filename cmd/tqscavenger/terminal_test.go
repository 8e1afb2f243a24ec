package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/tqscavenger/tqscavenger/internal/cli"
)

// mainEnv makes the test binary run as tqscavenger itself, so the terminal
// test drives the command as built, under a real terminal.
const mainEnv = "TQS_TERMINAL_TEST_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(mainEnv) == "1" {
		main()
		return
	}
	goleak.VerifyTestMain(m)
}

// progressRE matches the progress line (internal/progress.Text).
var progressRE = regexp.MustCompile(`^(dry run: )?(\d+)/(\d+)\+? queues done\b.*tasks (deleted|deletable)`)

// tmux runs tmux on the test's own server, with a config that keeps a
// pane's screen after its command exits and shows no status line.
type tmux struct {
	t      *testing.T
	socket string
	conf   string
}

func newTmux(t *testing.T) *tmux {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("tmux is missing (CI=true: the terminal test must run; .ci/tmux installs it)")
		}
		t.Skip("terminal test skipped: tmux is missing (apt-get install tmux, or run .ci/tmux)")
	}
	dir := t.TempDir()
	x := &tmux{t: t, socket: filepath.Join(dir, "tmux.sock"), conf: filepath.Join(dir, "tmux.conf")}
	conf := "set -g remain-on-exit on\nset -g status off\nset -g history-limit 100000\n"
	if err := os.WriteFile(x.conf, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { exec.Command("tmux", "-S", x.socket, "kill-server").Run() })
	return x
}

func (x *tmux) run(args ...string) string {
	x.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-S", x.socket, "-f", x.conf}, args...)...).CombinedOutput()
	if err != nil {
		x.t.Fatalf("tmux %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// screen returns the pane's lines, wrapped lines joined (-J): a line
// wider than the pane shows as one long line. With history, the lines
// that scrolled off come first.
func (x *tmux) screen(history bool) []string {
	args := []string{"capture-pane", "-p", "-J", "-t", "t"}
	if history {
		args = append(args, "-S", "-")
	}
	var lines []string
	for _, l := range strings.Split(x.run(args...), "\n") {
		if l = strings.TrimRight(l, " "); l != "" {
			lines = append(lines, l)
		}
	}
	return lines
}

// waitFor polls the pane until cond holds for its screen, failing the
// test after a deadline instead of hanging.
func (x *tmux) waitFor(what string, cond func() bool) {
	x.t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			x.t.Fatalf("timed out waiting for %s; the screen:\n%s", what, strings.Join(x.screen(false), "\n"))
		}
		<-tick.C
	}
}

// seedDB writes a SQLite database whose pass, slowed by a rate limit,
// takes several seconds: 1,000 queues of 20 expired tasks, deleted at
// 4,000 a second at most.
func seedDB(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tasks.db")
	if code := cli.Main([]string{"seed", "--db", path, "--queues", "1000", "--tasks", "20", "--expired", "1", "--no-expiry", "0"}, io.Discard, os.Stderr); code != 0 {
		t.Fatalf("seed exited %d", code)
	}
	return path
}

// TestProgressLineInTmux runs a pass in a real terminal (a tmux pane) at
// 70 and 120 columns, with debug logging so log lines keep coming while
// the progress line is shown, and reads the screen: mid-pass it shows
// non-zero done counts on one line no wider than the pane, below whole
// log lines; at the end no progress line is left (none stale, none with
// a log line glued to it). Ctrl-C mid-pass leaves the screen as clean.
func TestProgressLineInTmux(t *testing.T) {
	newTmux(t) // skip early without tmux
	bin, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		width     int
		interrupt bool
	}{{70, false}, {120, false}, {70, true}} {
		name := fmt.Sprintf("%d columns", c.width)
		if c.interrupt {
			name += ", Ctrl-C"
		}
		t.Run(name, func(t *testing.T) {
			db := seedDB(t)
			x := newTmux(t)
			cmd := fmt.Sprintf("%s=1 exec %s run --db sqlite:%s --max-deletes-per-second 4000 --log-level debug", mainEnv, bin, db)
			x.run("new-session", "-d", "-s", "t", "-x", strconv.Itoa(c.width), "-y", "40", cmd)
			if got := strings.TrimSpace(x.run("display-message", "-p", "-t", "t", "#{pane_width}")); got != strconv.Itoa(c.width) {
				t.Fatalf("pane is %s columns wide, want %d", got, c.width)
			}

			// Mid-pass: the last line is the progress line, with queues
			// and tasks done.
			var mid []string
			x.waitFor("a progress line with queues done", func() bool {
				mid = x.screen(false)
				if len(mid) == 0 {
					return false
				}
				m := progressRE.FindStringSubmatch(mid[len(mid)-1])
				return m != nil && m[2] != "0"
			})
			t.Logf("mid-pass, %d columns, the screen's last lines:\n%s", c.width, strings.Join(mid[max(0, len(mid)-4):], "\n"))
			last := mid[len(mid)-1]
			if len(last) > c.width {
				t.Errorf("progress line %d columns wide in a %d-column pane: %q", len(last), c.width, last)
			}
			if !regexp.MustCompile(`\b[1-9]\d* tasks deleted`).MatchString(last) {
				t.Errorf("progress line shows no tasks deleted: %q", last)
			}
			above := mid[:len(mid)-1]
			if len(above) > 0 && !strings.HasPrefix(above[0], "time=") {
				above = above[1:] // the rest of a log line that began above the screen
			}
			checkLines(t, above, "mid-pass")

			if c.interrupt {
				x.run("send-keys", "-t", "t", "C-c")
			}
			// tmux may see the pane's end (its terminal closed) before the
			// exit status: wait for both.
			var status string
			deadRE := regexp.MustCompile(`^1:(\d+)$`)
			x.waitFor("the pass to end", func() bool {
				m := deadRE.FindStringSubmatch(strings.TrimSpace(x.run("display-message", "-p", "-t", "t", "#{pane_dead}:#{pane_dead_status}")))
				if m != nil {
					status = m[1]
				}
				return m != nil
			})
			end := x.screen(true)
			if t.Failed() || testing.Verbose() {
				t.Logf("at the end, the last lines:\n%s", strings.Join(end[max(0, len(end)-12):], "\n"))
			}
			checkLines(t, end, "at the end")
			want, outcome := "0", "scavenger pass completed"
			if c.interrupt {
				want, outcome = "130", "scavenger pass interrupted"
			}
			if status != want {
				t.Errorf("exit status %s, want %s", status, want)
			}
			if !hasLine(end, "msg=\""+outcome+"\"") {
				t.Errorf("no %q log line at the end", outcome)
			}
			if !c.interrupt && !hasLine(end, "outcome: completed") {
				t.Error("no summary at the end")
			}
		})
	}
}

// summaryRE matches the lines run prints besides its log: the summary on
// stdout, the interrupt notice, and tmux's own note on a finished pane.
var summaryRE = regexp.MustCompile(`^(queues: |tasks:  |jobs:   |outcome: |time:   |tqscavenger run: interrupted|Pane is dead)`)

// checkLines fails the test for a line that is neither a whole log line
// nor the summary: a progress line left behind (stale), or a log line with
// the progress line glued before it, or cut by it.
func checkLines(t *testing.T, lines []string, when string) {
	t.Helper()
	for _, l := range lines {
		l = strings.TrimPrefix(l, "^C") // the terminal's echo of Ctrl-C
		switch {
		case progressRE.MatchString(l) || strings.Contains(l, "queues done"):
			t.Errorf("%s: a progress line left on the screen: %q", when, l)
		case strings.HasPrefix(l, "time="):
			if strings.Count(l, "time=") != 1 || !strings.Contains(l, " msg=") {
				t.Errorf("%s: log lines glued together: %q", when, l)
			}
		case summaryRE.MatchString(l):
		default:
			t.Errorf("%s: a line neither log nor summary (glued or cut): %q", when, l)
		}
	}
}

func hasLine(lines []string, sub string) bool {
	for _, l := range lines {
		if strings.Contains(l, sub) {
			return true
		}
	}
	return false
}
