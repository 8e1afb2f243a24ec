//go:build !tqs_notemporal

package cli_test

// The Temporal commands as an operator meets them: help on stdout in
// groups, and what a schedule cannot carry refused before Temporal is
// dialled.

import (
	"os"
	"strings"
	"testing"

	"github.com/tqscavenger/tqscavenger/internal/cli"
)

func TestTemporalHelp(t *testing.T) {
	for _, c := range []struct {
		args   []string
		groups []string
		says   []string
		hides  []string
	}{
		{[]string{"worker", "--help-all"}, []string{"Connection:", "Temporal:", "Pace and safety:", "Daemon:", "Output:"},
			[]string{"--temporal-address HOST:PORT", "--max-partitions INT", "--shutdown-timeout DURATION", "30s)", "TEMPORAL_* variables"}, nil},
		{[]string{"schedule", "-h"}, nil, []string{"create", "update", "describe", "trigger", "delete"}, nil},
		{[]string{"schedule", "create", "--help-all"}, []string{"Connection:", "Temporal:", "What to delete:", "Pace and safety:", "Schedule:", "Output:"},
			[]string{"--every DURATION", "(default 12h)", "--jitter DURATION", "--partitions INT", "--database-identity ID"},
			[]string{"--partition ", "--now", "--yield-to-load", "--statement-timeout", "DURATION|PCT"}},
		{[]string{"schedule", "describe", "-h"}, []string{"Temporal:", "Schedule:", "Output:"}, []string{"--schedule-id ID"}, []string{"--db"}},
	} {
		code, out, errOut := tqs(c.args...)
		if code != cli.ExitOK || errOut != "" || !strings.Contains(out, "Usage") {
			t.Errorf("%v: exit %d, stderr %q, stdout:\n%s", c.args, code, errOut, out)
			continue
		}
		at := 0
		for _, g := range c.groups {
			i := strings.Index(out[at:], "\n"+g+"\n")
			if i < 0 {
				t.Errorf("%v: group %q missing or out of order:\n%s", c.args, g, out)
				break
			}
			at += i + 1
		}
		for _, s := range c.says {
			if !strings.Contains(out, s) {
				t.Errorf("%v does not say %q:\n%s", c.args, s, out)
			}
		}
		for _, s := range c.hides {
			if strings.Contains(out, s) {
				t.Errorf("%v shows %q:\n%s", c.args, s, out)
			}
		}
	}
}

// TestScheduleRefuses: a setting a scheduled pass does not carry is bad
// input, from the command line or the environment, and so is a bad pass
// or an empty task queue, before any Temporal frontend is dialled (none
// listens at the address given).
func TestScheduleRefuses(t *testing.T) {
	setEnv(t, nil)
	base := []string{"schedule", "create", "--database-identity", "db-1", "--temporal-address", "127.0.0.1:1"}
	for _, c := range []struct {
		args []string
		env  map[string]string
		hint string
	}{
		{[]string{"--partition", "0/2"}, nil, "--partition has no place in a schedule: a scheduled pass covers the whole space: --partitions N"},
		{[]string{"--now", "2026-01-01T00:00:00Z"}, nil, "--now has no place in a schedule"},
		{[]string{"--statement-timeout", "5s"}, nil, "give it to `tqscavenger worker`"},
		{nil, map[string]string{"TQSCAVENGER_YIELD_TO_LOAD": "true"}, "TQSCAVENGER_YIELD_TO_LOAD has no place in a schedule"},
		{[]string{"--temporal-task-queue", " "}, nil, "--temporal-task-queue must not be empty"},
		{[]string{"--partitions", "5000"}, nil, "partitions 5000"},
		{[]string{"--orphans", "some"}, nil, `--orphans "some"`},
	} {
		for k, v := range c.env {
			t.Setenv(k, v)
		}
		checkUsageError(t, append(append([]string{}, base...), c.args...), c.hint, tqs)
		for k := range c.env {
			os.Unsetenv(k)
		}
	}
	// The same settings that are good: the frontend is then dialled, and
	// its absence is status 4.
	code, _, errOut := tqs(append(base, "--partitions", "2", "--past-live-head")...)
	if code != cli.ExitUnavailable || !strings.Contains(errOut, "Temporal frontend 127.0.0.1:1") {
		t.Errorf("no frontend: exit %d, %s", code, errOut)
	}
}

// TestWorkerListen: a --listen that is no host:port is refused before
// anything is opened; a good one serves /metrics while the worker starts,
// and is closed again when the worker cannot reach Temporal (status 4).
func TestWorkerListen(t *testing.T) {
	setEnv(t, nil)
	checkUsageError(t, []string{"worker", "--db", "sqlite:nowhere.db", "--listen", "9465"}, `--listen "9465"`, tqs)
	path := seedFile(t)
	code, _, errOut := tqs("worker", "--db", path, "--temporal-address", "127.0.0.1:1", "--listen", "127.0.0.1:0")
	if code != cli.ExitUnavailable || !strings.Contains(errOut, "worker metrics listening") || !strings.Contains(errOut, "Temporal frontend 127.0.0.1:1") {
		t.Errorf("worker --listen without a frontend: exit %d, want %d after the metrics endpoint started: %s", code, cli.ExitUnavailable, errOut)
	}
}
