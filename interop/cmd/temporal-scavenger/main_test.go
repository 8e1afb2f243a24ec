package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/tqscavenger/tqscavenger/sqlstore"
)

// TestTemporalKnobs holds the knob values the summary states to the
// scavenger's source in the module Temporal is built from: they are
// unexported, so a new Temporal version could change them unseen.
func TestTemporalKnobs(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "go.temporal.io/server").Output()
	if err != nil {
		t.Fatalf("go list -m go.temporal.io/server: %v", err)
	}
	file := filepath.Join(strings.TrimSpace(string(out)), "service/worker/scanner/taskqueue/scavenger.go")
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, want string
	}{
		{"taskQueueBatchSize", strconv.Itoa(temporalKnobs.TaskQueueBatchSize)},
		{"taskBatchSize", strconv.Itoa(temporalKnobs.TaskBatchSize)},
		{"maxTasksPerJob", strconv.Itoa(temporalKnobs.MaxTasksPerJob)},
		{"taskQueueGracePeriod", "48 * time.Hour"},
		{"executorPollInterval", "time.Minute"},
		{"executorMaxDeferredTasks", strconv.Itoa(temporalKnobs.ExecutorMaxDeferredTasks)},
	} {
		m := regexp.MustCompile(`(?m)^\s*` + c.name + `\s*=\s*([^/\n]+?)\s*(//|$)`).FindSubmatch(src)
		if m == nil {
			t.Errorf("%s: not found in %s", c.name, file)
			continue
		}
		if got := string(m[1]); got != c.want {
			t.Errorf("%s = %s in %s, the summary says %s", c.name, got, file, c.want)
		}
	}
	if temporalKnobs.TaskQueueGracePeriod != "48h0m0s" || temporalKnobs.ExecutorPollInterval != "1m0s" {
		t.Errorf("durations stated as %s and %s", temporalKnobs.TaskQueueGracePeriod, temporalKnobs.ExecutorPollInterval)
	}
}

// TestSQLConfig: each DSN becomes Temporal's SQL configuration.
func TestSQLConfig(t *testing.T) {
	for _, c := range []struct {
		dsn, plugin   string
		attrs         map[string]string
		addr, db      string
		user, pass    string
		wantAttrs     map[string]string
		wantPartition int
	}{
		{dsn: "sqlite:/tmp/x.db", plugin: "sqlite", addr: "localhost", db: "/tmp/x.db",
			wantAttrs: map[string]string{"mode": "rw", "cache": "private"}, wantPartition: 1},
		{dsn: "/tmp/y.db", plugin: "sqlite", attrs: map[string]string{"mode": "rwc", "setup": "true"}, addr: "localhost", db: "/tmp/y.db",
			wantAttrs: map[string]string{"mode": "rwc", "cache": "private", "setup": "true"}, wantPartition: 1},
		{dsn: "postgres://u:p%40ss@db.example:6543/temporal?sslmode=require&search_path=s1", plugin: "postgres12", addr: "db.example:6543", db: "temporal", user: "u", pass: "p@ss",
			wantAttrs: map[string]string{"sslmode": "require", "search_path": "s1"}, wantPartition: 1},
		{dsn: "postgres://u@db.example/temporal", plugin: "postgres12_pgx", addr: "db.example:5432", db: "temporal", user: "u",
			wantAttrs: map[string]string{}, wantPartition: 1},
		{dsn: "mysql://root@127.0.0.1/t", plugin: "mysql8", attrs: map[string]string{"tx_isolation": "READ-COMMITTED"}, addr: "127.0.0.1:3306", db: "t", user: "root",
			wantAttrs: map[string]string{"tx_isolation": "READ-COMMITTED"}, wantPartition: 1},
	} {
		d, err := sqlstore.ParseDSN(c.dsn)
		if err != nil {
			t.Fatal(err)
		}
		got, err := storeConfig{dsn: d, plugin: c.plugin, attrs: c.attrs}.sqlConfig()
		if err != nil {
			t.Errorf("%s: %v", c.dsn, err)
			continue
		}
		if got.PluginName != c.plugin || got.ConnectAddr != c.addr || got.DatabaseName != c.db || got.User != c.user || got.Password != c.pass || got.TaskScanPartitions != c.wantPartition {
			t.Errorf("%s: plugin %s addr %s db %s user %s partitions %d", c.dsn, got.PluginName, got.ConnectAddr, got.DatabaseName, got.User, got.TaskScanPartitions)
		}
		if len(got.ConnectAttributes) != len(c.wantAttrs) {
			t.Errorf("%s: attributes %v, want %v", c.dsn, got.ConnectAttributes, c.wantAttrs)
		}
		for k, v := range c.wantAttrs {
			if got.ConnectAttributes[k] != v {
				t.Errorf("%s: attributes %v, want %v", c.dsn, got.ConnectAttributes, c.wantAttrs)
			}
		}
	}
}

// TestBadInput: bad input is a usage error (exit status 2) naming what is
// wrong, and no password is echoed.
func TestBadInput(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing.db")
	for _, c := range []struct {
		args  []string
		usage bool
		want  string
	}{
		{nil, true, "--db is required"},
		{[]string{"--db", "postgress://u:secret@h/db"}, true, "misspelt scheme"},
		{[]string{"--db", "sqlite:/x.db", "--plugin", "mysql8"}, true, `--plugin "mysql8" does not serve a sqlite DSN`},
		{[]string{"--db", "sqlite:/x.db", "--log-level", "loud"}, true, "--log-level"},
		{[]string{"--db", "sqlite:/x.db", "--persistence-max-qps", "-1"}, true, "must not be negative"},
		{[]string{"--db", "sqlite:/x.db", "--connect-attr", "novalue"}, true, "KEY=VALUE"},
		{[]string{"--db", "sqlite:/x.db", "extra"}, true, `unexpected argument "extra"`},
		{[]string{"--db", missing}, false, "no such file"},
	} {
		var stdout, stderr bytes.Buffer
		err := run(context.Background(), c.args, &stdout, &stderr)
		if err == nil || errors.Is(err, errUsage) != c.usage || !strings.Contains(err.Error()+stderr.String(), c.want) {
			t.Errorf("%v: %v (usage %t), want %q (usage %t)", c.args, err, errors.Is(err, errUsage), c.want, c.usage)
		}
		if err != nil && strings.Contains(err.Error()+stderr.String(), "secret") {
			t.Errorf("%v: the password is echoed: %v", c.args, err)
		}
	}
}
