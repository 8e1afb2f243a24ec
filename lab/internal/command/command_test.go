package command

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tqscavenger/tqscavenger/internal/cli"
)

// TestPassFlags: --live-extra takes the "What to delete" and "Pace and
// safety" flags of the binary's `run --help-all` only (here this build's),
// and never echoes a refused value: the table prints the flags, and a DSN
// or password must not reach it.
func TestPassFlags(t *testing.T) {
	var help bytes.Buffer
	if code := cli.Main([]string{"run", "--help-all"}, &help, &help); code != 0 {
		t.Fatalf("run --help-all: exit %d: %s", code, help.String())
	}
	allowed := parseRunHelp(help.String())
	for _, name := range []string{"workers", "task-batch-size", "pace", "past-live-head", "orphans", "max-deletes-per-second"} {
		if !allowed[name] {
			t.Errorf("--%s not read from run --help-all", name)
		}
	}
	for _, tc := range []struct {
		in      string
		want    []string
		refused string // in the error, if refused
	}{
		{in: "--task-batch-size 100 --pace full", want: []string{"--task-batch-size", "100", "--pace", "full"}},
		{in: "--workers=1 --max-deletes-per-second 500", want: []string{"--workers=1", "--max-deletes-per-second", "500"}},
		{in: "--past-live-head --orphans none", want: []string{"--past-live-head", "--orphans", "none"}},
		{in: "", refused: "no flags"},
		{in: "--db postgres://u:hunter2@h/db", refused: "--db: only"},
		{in: "--password=hunter2", refused: "--password: only"},
		{in: "--output json", refused: "--output: only"},
		{in: "workers 2", refused: `"workers" is not a flag`},
	} {
		got, err := passFlags(tc.in, allowed)
		switch {
		case tc.refused != "":
			if err == nil || !strings.Contains(err.Error(), tc.refused) || strings.Contains(err.Error(), "hunter2") {
				t.Errorf("%q: %v, want an error with %q and no password", tc.in, err, tc.refused)
			}
		case err != nil || !slices.Equal(got, tc.want):
			t.Errorf("%q: %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

// TestBinariesUnderTest: --binary takes PATH or LABEL=PATH, makes paths
// absolute, labels several by file name where unnamed, and refuses what
// cannot run or cannot be told apart.
func TestBinariesUnderTest(t *testing.T) {
	dir := t.TempDir()
	exe := func(name string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"), mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	a, b, text := exe("tqs-a", 0o755), exe("tqs-b", 0o755), exe("notes", 0o644)
	sub := filepath.Join(dir, "sub")
	os.Mkdir(sub, 0o755)
	os.WriteFile(filepath.Join(sub, "tqs-a"), []byte("#!/bin/sh\n"), 0o755)
	for _, tc := range []struct {
		name    string
		specs   []string
		want    string // labels=paths, comma-separated
		refused string
	}{
		{name: "one", specs: []string{a}, want: "=" + a},
		{name: "labelled", specs: []string{"old=" + a, "new=" + b}, want: "old=" + a + ",new=" + b},
		{name: "by file name", specs: []string{a, b}, want: "tqs-a=" + a + ",tqs-b=" + b},
		{name: "same file name", specs: []string{a, filepath.Join(sub, "tqs-a")}, refused: "two binaries labelled"},
		{name: "same label", specs: []string{"x=" + a, "x=" + b}, refused: "two binaries labelled"},
		{name: "missing", specs: []string{filepath.Join(dir, "nope")}, refused: "no such file"},
		{name: "not executable", specs: []string{text}, refused: "not an executable file"},
		{name: "directory", specs: []string{sub}, refused: "not an executable file"},
		{name: "label without path", specs: []string{"old="}, refused: "no path"},
	} {
		bins, cleanup, err := binariesUnderTest(context.Background(), tc.specs, "", nil)
		cleanup()
		if tc.refused != "" {
			var ue usageError
			if err == nil || !strings.Contains(err.Error(), tc.refused) || !asUsage(err, &ue) {
				t.Errorf("%s: %v, want a usage error with %q", tc.name, err, tc.refused)
			}
			continue
		}
		var got []string
		for _, b := range bins {
			got = append(got, b.Label+"="+b.Path)
		}
		if err != nil || strings.Join(got, ",") != tc.want {
			t.Errorf("%s: %q, %v; want %s", tc.name, got, err, tc.want)
		}
	}
}

func asUsage(err error, ue *usageError) bool {
	u, ok := err.(usageError)
	*ue = u
	return ok
}

// TestUsageErrors: bad input is exit 2 with a message, before anything
// is built or seeded.
func TestUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"nope"}, `unknown command "nope"`},
		{[]string{"--scale", "0"}, "--scale and --repeat must be at least 1"},
		{[]string{"--engines", "oracle"}, `unknown engine "oracle"`},
		{[]string{"--cases", "all-expired,nope"}, `unknown case "nope"`},
		{[]string{"--no-such-flag"}, "unknown flag: --no-such-flag"},
		{[]string{"--live-load", "--binary", "a=/x", "--binary", "b=/y"}, "one --binary at a time"},
		{[]string{"--live-load", "--live-share", "0"}, "--live-share must be within 0 < F ≤ 1, not 0"},
		{[]string{"--live-load", "--live-share", "1.5"}, "--live-share must be within 0 < F ≤ 1, not 1.5"},
		{[]string{"--live-load", "--live-share", "-0.5"}, "not -0.5"},
		{[]string{"--live-load", "--live-share", "NaN"}, "not NaN"},
		{[]string{"--live-load", "--live-share", "half"}, "invalid argument \"half\""},
		{[]string{"--live-load", "--live-workload", "pgbench"}, "runs on PostgreSQL only: give --engines postgres (not sqlite)"},
		{[]string{"--live-load", "--live-workload", "pgbench", "--engines", "postgres,mysql"}, "(not mysql)"},
		{[]string{"--live-load", "--live-workload", "pgbench", "--engines", "postgres", "--pgbench", "/nonexistent/pgbench"}, "--pgbench: exec: \"/nonexistent/pgbench\""},
		{[]string{"--live-load", "--live-workload", "sysbench"}, `unknown workload "sysbench": use lab, lab-writes, lab-reads or pgbench`},
		{[]string{"--live-load", "--live-topology", "cloud"}, `--live-topology: unknown topology "cloud"`},
		{[]string{"--live-load", "--postgres", "postgres://u@h/db"}, "--postgres names a server for --live-topology shared"},
		{[]string{"--live-load", "--live-topology", "production", "--mysql", "mysql://u@h/db"}, "--mysql names a server for --live-topology shared"},
		{[]string{"raw"}, "--db is required"},
		{[]string{"raw", "--db", "postgress://h/db"}, "scheme"},
		{[]string{"measure", "--", "true"}, "needs --result FILE"},
		{[]string{"partitions", "--setups", "2by2"}, "want PROCSxWORKERS"},
	} {
		var out, errb bytes.Buffer
		code := Main(tc.args, &out, &errb)
		if code != ExitUsage || !strings.Contains(errb.String(), tc.want) {
			t.Errorf("%q: exit %d, stderr %q; want exit 2 with %q", tc.args, code, errb.String(), tc.want)
		}
	}
}

// TestFindMainModule: the default binary is built from the main module
// found from the lab's directory upwards.
func TestFindMainModule(t *testing.T) {
	wd, _ := os.Getwd()
	dir, err := findMainModule(wd)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "cmd", "tqscavenger")); err != nil {
		t.Errorf("found %s, without cmd/tqscavenger: %v", dir, err)
	}
	if _, err := findMainModule(t.TempDir()); err == nil || !strings.Contains(err.Error(), "--binary") {
		t.Errorf("outside the repository: %v, want an error naming --binary", err)
	}
}

// TestHelpOnce: each command's --help prints its usage once, exit 0.
func TestHelpOnce(t *testing.T) {
	for _, c := range subcommands() {
		for _, h := range []string{"--help", "-h"} {
			var out, errb bytes.Buffer
			if code := Main([]string{c.name, h}, &out, &errb); code != ExitOK {
				t.Errorf("%s %s: exit %d: %s", c.name, h, code, errb.String())
			}
			if n := strings.Count(out.String(), "Usage: tqslab "+c.name); n != 1 {
				t.Errorf("%s %s: the usage printed %d times, want once:\n%s", c.name, h, n, out.String())
			}
		}
	}
}
