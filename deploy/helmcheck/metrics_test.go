package helmcheck

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/promql/parser"
	"sigs.k8s.io/yaml"
)

const (
	serveRules   = "../helm/tqscavenger/files/tqscavenger-alerts.yaml"
	cronjobRules = "../helm/tqscavenger/files/tqscavenger-cronjob-alerts.yaml"
	dashboard    = "../helm/tqscavenger/files/tqscavenger-dashboard.json"
)

// ruleExprs returns the expressions of a rules file's rules.
func ruleExprs(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Groups []struct {
			Rules []struct{ Expr string } `json:"rules"`
		} `json:"groups"`
	}
	if err := yaml.UnmarshalStrict(b, &f, yaml.DisallowUnknownFields); err != nil {
		// Only the rules' expressions are read here: promtool check
		// rules checks the rest of the file.
		if err := yaml.Unmarshal(b, &f); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
	}
	var out []string
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			out = append(out, r.Expr)
		}
	}
	if len(out) == 0 {
		t.Fatalf("%s: no rules", path)
	}
	return out
}

// dashboardExprs returns the PromQL of every panel's targets and of the
// template variables' label_values() queries, with Grafana's interval
// variables replaced by a duration ($namespace and $job stand inside
// regular expressions, where they are plain text to PromQL).
func dashboardExprs(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(dashboard)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Type  string          `json:"type"`
				Query json.RawMessage `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s: %v", dashboard, err)
	}
	grafana := strings.NewReplacer("$__rate_interval", "5m", "$__interval", "1m", "$__range", "1d")
	var out []string
	for _, p := range d.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			out = append(out, grafana.Replace(tg.Expr))
		}
	}
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		var q struct{ Query string }
		if err := json.Unmarshal(v.Query, &q); err != nil {
			t.Fatal(err)
		}
		// label_values(SELECTOR, LABEL): Grafana's, around a selector.
		inner, ok := strings.CutPrefix(q.Query, "label_values(")
		i := strings.LastIndex(inner, ",")
		if !ok || i < 0 {
			t.Fatalf("template query %q is not label_values(selector, label)", q.Query)
		}
		out = append(out, inner[:i])
	}
	return out
}

// metricNames parses each expression with Prometheus's own parser and
// returns the metric names its selectors name.
func metricNames(t *testing.T, exprs []string) map[string]bool {
	t.Helper()
	p := parser.NewParser(parser.Options{})
	names := map[string]bool{}
	for _, e := range exprs {
		ast, err := p.ParseExpr(e)
		if err != nil {
			t.Errorf("PromQL %q: %v", e, err)
			continue
		}
		parser.Inspect(ast, func(n parser.Node, _ []parser.Node) error {
			if vs, ok := n.(*parser.VectorSelector); ok {
				if vs.Name == "" {
					t.Errorf("PromQL %q: a selector without a metric name", e)
				}
				names[vs.Name] = true
			}
			return nil
		})
	}
	return names
}

// TestPromQLParses: every rule's and every panel's PromQL parses, and the
// CronJob's rules read kube-state-metrics' series only.
func TestPromQLParses(t *testing.T) {
	metricNames(t, ruleExprs(t, serveRules))
	metricNames(t, dashboardExprs(t))
	for name := range metricNames(t, ruleExprs(t, cronjobRules)) {
		if !strings.HasPrefix(name, "kube_") {
			t.Errorf("%s reads %s, not a kube-state-metrics series", cronjobRules, name)
		}
	}
}

// TestServeExportsEveryMetric scrapes a real `tqscavenger serve` (built
// from the main module) on SQLite after a pass and fails on any metric
// name a serve alert or a dashboard panel uses that it does not export.
func TestServeExportsEveryMetric(t *testing.T) {
	want := metricNames(t, append(ruleExprs(t, serveRules), dashboardExprs(t)...))
	delete(want, "up") // Prometheus's own, per target
	exported := scrapeServe(t)
	var missing []string
	for name := range want {
		if !exported[name] {
			missing = append(missing, name)
		}
	}
	slices.Sort(missing)
	if len(missing) > 0 {
		t.Errorf("used by the alerts or the dashboard, not exported by serve: %s", strings.Join(missing, ", "))
	}
	if len(want) < 10 {
		t.Errorf("only %d metric names found in the alerts and dashboard: %v", len(want), want)
	}
}

// scrapeServe builds tqscavenger, seeds a SQLite database, runs serve
// until its first pass has completed (its log says so) and returns the
// names /metrics exports then.
func scrapeServe(t *testing.T) map[string]bool {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "tqscavenger")
	build := exec.Command("go", "build", "-o", bin, "./cmd/tqscavenger")
	build.Dir = filepath.Join("..", "..")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/tqscavenger: %v\n%s", err, out)
	}
	db := filepath.Join(dir, "tasks.db")
	if out, err := exec.Command(bin, "seed", "--db", db, "--queues", "5", "--expired", "0.5", "--layout", "live-first").CombinedOutput(); err != nil {
		t.Fatalf("seed: %v\n%s", err, out)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	serve := exec.CommandContext(ctx, bin, "serve", "--db", "sqlite:"+db, "--listen", "127.0.0.1:0",
		"--run-at-start", "--log-format", "json", "--max-deletes-per-second", "100000")
	serve.Cancel = func() error { return serve.Process.Signal(syscall.SIGTERM) }
	stderr, err := serve.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cancel()
		_ = serve.Wait()
	}()
	// The log is the signal: "serve started" names the address, "scavenger
	// pass completed" ends the first pass. serve exiting ends the scan.
	var addr string
	sc := bufio.NewScanner(stderr)
	completed := false
	for !completed && sc.Scan() {
		var line struct{ Msg, Listen string }
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("serve's log line %q: %v", sc.Text(), err)
		}
		switch line.Msg {
		case "serve started":
			addr = line.Listen
		case "scavenger pass completed":
			completed = true
		case "scavenger pass failed":
			t.Fatalf("serve's pass failed: %s", sc.Text())
		}
	}
	if !completed || addr == "" {
		t.Fatalf("serve ended before a pass completed (listen %q): %v", addr, sc.Err())
	}
	go func() { _, _ = io.Copy(io.Discard, stderr) }()
	resp, err := http.Get(fmt.Sprintf("http://%s/metrics", addr))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	tp := expfmt.NewTextParser(model.UTF8Validation)
	families, err := tp.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("/metrics: %v", err)
	}
	names := map[string]bool{}
	for name := range families {
		names[name] = true
	}
	return names
}
