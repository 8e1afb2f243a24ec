package helmcheck

// The alert rules' annotations and severities: a runbook_url on every
// alert, absolute, to an entry docs/running.md has, on the chart's base
// URL in its PrometheusRule; TqscavengerAbsent a warning unless the chart
// knows it deploys serve where the Prometheus scrapes.

import (
	"bufio"
	"os"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// defaultRunbookBase is the runbook page the plain rules files link to,
// and metrics.prometheusRule.runbookBaseURL's default.
const defaultRunbookBase = "https://github.com/tqscavenger/tqscavenger/blob/main/docs/running.md"

// alertRule is a rule of a rules file or of a PrometheusRule's spec.
type alertRule struct {
	Alert       string            `json:"alert"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
}

// ruleGroups is a rules file, or a PrometheusRule's spec.
type ruleGroups struct {
	Groups []struct {
		Rules []alertRule `json:"rules"`
	} `json:"groups"`
}

func (g ruleGroups) alerts() map[string]alertRule {
	out := map[string]alertRule{}
	for _, gr := range g.Groups {
		for _, r := range gr.Rules {
			if r.Alert != "" {
				out[r.Alert] = r
			}
		}
	}
	return out
}

// fileAlerts returns the alerting rules of a plain rules file by name.
func fileAlerts(t *testing.T, path string) map[string]alertRule {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var g ruleGroups
	if err := yaml.Unmarshal(b, &g); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	a := g.alerts()
	if len(a) == 0 {
		t.Fatalf("%s: no alerts", path)
	}
	return a
}

// renderedAlerts renders the chart with vals and returns its
// PrometheusRule's alerting rules by name.
func renderedAlerts(t *testing.T, vals map[string]any) map[string]alertRule {
	t.Helper()
	manifest, err := render(t, vals)
	if err != nil {
		t.Fatalf("helm template: %v", err)
	}
	for _, doc := range strings.Split(manifest, "\n---\n") {
		var obj struct {
			Kind string     `json:"kind"`
			Spec ruleGroups `json:"spec"`
		}
		if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
			t.Fatalf("a rendered document: %v\n%s", err, doc)
		}
		if obj.Kind == "PrometheusRule" {
			return obj.Spec.alerts()
		}
	}
	t.Fatal("no PrometheusRule rendered")
	return nil
}

// runningAnchors returns the anchors GitHub gives docs/running.md's
// headings (lower case, punctuation dropped, spaces as '-').
func runningAnchors(t *testing.T) map[string]bool {
	t.Helper()
	f, err := os.Open("../../docs/running.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	drop := regexp.MustCompile("[^a-z0-9 _-]")
	anchors := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := sc.Text()
		if !strings.HasPrefix(l, "#") {
			continue
		}
		h := strings.TrimSpace(strings.TrimLeft(l, "#"))
		anchors[strings.ReplaceAll(drop.ReplaceAllString(strings.ToLower(h), ""), " ", "-")] = true
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return anchors
}

// TestRunbookURLs: every alert of both rules files links its runbook entry
// by an absolute runbook_url (the annotation Alertmanager's and Grafana's
// templates know), on the default base, to a heading docs/running.md has;
// values.yaml's runbookBaseURL is the same base.
func TestRunbookURLs(t *testing.T) {
	anchors := runningAnchors(t)
	for _, path := range []string{serveRules, cronjobRules} {
		for name, r := range fileAlerts(t, path) {
			u, ok := r.Annotations["runbook_url"]
			base, anchor, _ := strings.Cut(u, "#")
			switch {
			case !ok:
				t.Errorf("%s: %s has no runbook_url", path, name)
			case base != defaultRunbookBase:
				t.Errorf("%s: %s's runbook_url %q is not on %s", path, name, u, defaultRunbookBase)
			case !anchors[anchor]:
				t.Errorf("%s: %s's runbook_url %q: docs/running.md has no heading #%s", path, name, u, anchor)
			}
			if _, ok := r.Annotations["runbook"]; ok {
				t.Errorf("%s: %s still has a runbook annotation", path, name)
			}
		}
	}
	b, err := os.ReadFile(chartDir + "/values.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Metrics struct {
			PrometheusRule struct {
				RunbookBaseURL string `json:"runbookBaseURL"`
			} `json:"prometheusRule"`
		} `json:"metrics"`
	}
	if err := yaml.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	if got := v.Metrics.PrometheusRule.RunbookBaseURL; got != defaultRunbookBase {
		t.Errorf("values.yaml: metrics.prometheusRule.runbookBaseURL %q, want the files' %q", got, defaultRunbookBase)
	}
}

// TestPrometheusRuleRunbookBase: the PrometheusRule's runbook_urls are on
// metrics.prometheusRule.runbookBaseURL, each entry's anchor kept, in
// both modes that ship one.
func TestPrometheusRuleRunbookBase(t *testing.T) {
	const base = "https://runbooks.example.com/tqscavenger.html"
	for mode, path := range map[string]string{"serve": serveRules, "run": cronjobRules} {
		want := fileAlerts(t, path)
		got := renderedAlerts(t, values(t, `
mode: `+mode+`
metrics: {prometheusRule: {enabled: true, runbookBaseURL: "`+base+`"}}`))
		if len(got) != len(want) {
			t.Errorf("mode %s: %d alerts rendered, the file has %d", mode, len(got), len(want))
		}
		for name, r := range want {
			_, anchor, _ := strings.Cut(r.Annotations["runbook_url"], "#")
			if u := got[name].Annotations["runbook_url"]; u != base+"#"+anchor {
				t.Errorf("mode %s: %s's runbook_url %q, want %q", mode, name, u, base+"#"+anchor)
			}
		}
	}
}

// TestAbsentSeverity: TqscavengerAbsent is a warning in the plain rules
// file, which a Prometheus may load without scraping serve, and in the
// chart unless it deploys serve (replicas above 0) with its
// ServiceMonitor, where absent metrics page (critical). Every other
// alert keeps the file's severity.
func TestAbsentSeverity(t *testing.T) {
	file := fileAlerts(t, serveRules)
	if s := file["TqscavengerAbsent"].Labels["severity"]; s != "warning" {
		t.Errorf("%s: TqscavengerAbsent severity %q, want warning", serveRules, s)
	}
	if d := file["TqscavengerAbsent"].Annotations["description"]; !strings.Contains(d, "critical when it deploys serve with its ServiceMonitor") {
		t.Errorf("%s: TqscavengerAbsent's description does not say when it is critical: %q", serveRules, d)
	}
	for _, c := range []struct{ values, want string }{
		{`{metrics: {prometheusRule: {enabled: true}, serviceMonitor: {enabled: true}}}`, "critical"},
		{`{metrics: {prometheusRule: {enabled: true}, serviceMonitor: {enabled: false}}}`, "warning"},
		{`{metrics: {prometheusRule: {enabled: true}, serviceMonitor: {enabled: true}}, serve: {replicaCount: 0}}`, "warning"},
	} {
		got := renderedAlerts(t, values(t, c.values))
		if s := got["TqscavengerAbsent"].Labels["severity"]; s != c.want {
			t.Errorf("values %s: TqscavengerAbsent severity %q, want %q", c.values, s, c.want)
		}
		for name, r := range file {
			if name != "TqscavengerAbsent" && got[name].Labels["severity"] != r.Labels["severity"] {
				t.Errorf("values %s: %s severity %q, the file's %q", c.values, name, got[name].Labels["severity"], r.Labels["severity"])
			}
		}
	}
}
