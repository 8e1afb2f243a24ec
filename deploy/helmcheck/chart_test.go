package helmcheck

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"sigs.k8s.io/yaml"
)

var update = flag.Bool("update", false, "rewrite the rendered files from the chart")

const chartDir = "../helm/tqscavenger"

// base is what every case sets: an image and the database's Secret, the
// two values without a default.
const base = `
image: {repository: registry.example.com/tqscavenger, tag: latest}
database: {existingSecret: tqscavenger-db}
`

// A case is one set of values and the file its render is kept in
// (relative to deploy/), with the header that file starts with.
type renderCase struct {
	name, values, file, header string
}

var cases = []renderCase{
	{name: "serve", values: `mode: serve`, file: "kubernetes.yaml", header: serveHeader},
	{name: "run", values: `mode: run`, file: "cronjob.yaml", header: runHeader},
	{name: "worker", file: "helm/rendered/worker.yaml", values: `
mode: worker
worker: {temporal: {address: "temporal-frontend:7233", taskQueue: tqscavenger}}`},
	{name: "serve with monitoring, TLS and SQL_* variables", file: "helm/rendered/serve-monitoring.yaml", values: `
mode: serve
serviceAccount: {create: true, extraAnnotations: {iam.gke.io/gcp-service-account: tqscavenger@project.iam.gserviceaccount.com}}
database: {type: sql, existingSecret: temporal-db, sql: {plugin: postgres12, host: postgres.db, port: 5432}}
tls: {enabled: true, existingSecret: temporal-db-tls, serverName: postgres.db}
settings: {log-format: json, log-level: debug}
serve: {replicaCount: 3, settings: {every: 6h, past-live-head: true}}
metrics:
  serviceMonitor: {enabled: true, additionalLabels: {release: prometheus}, metricRelabelings: [{action: labeldrop, regex: goversion}]}
  prometheusRule: {enabled: true, additionalLabels: {release: prometheus}}
  dashboard: {enabled: true}
nodeSelector: {kubernetes.io/os: linux}
extraObjects:
  - apiVersion: v1
    kind: ConfigMap
    metadata: {name: "{{ .Release.Name }}-extra"}
    data: {note: extra}`},
	{name: "run from a Temporal config, server-only TLS, no volume claim", file: "helm/rendered/run-temporal-config.yaml", values: `
mode: run
database: {type: temporalConfig, existingSecret: temporal-config, temporalConfigKey: docker.yaml}
tls: {enabled: true, existingSecret: db-ca, certKey: ""}
run: {schedule: "0 3 * * *", checkpoint: {persistence: {enabled: false}}}
metrics: {prometheusRule: {enabled: true}}`},
	{name: "worker with mTLS to Temporal and an existing claim", file: "helm/rendered/worker-mtls.yaml", values: `
mode: worker
fullnameOverride: scavenger
worker: {replicaCount: 2, temporal: {address: "temporal.example:7233", namespace: ops, existingSecret: temporal-client-tls}}`},
	{name: "run with an existing checkpoint claim", file: "helm/rendered/run-existing-claim.yaml", values: `
mode: run
run: {checkpoint: {persistence: {existingClaim: tqscavenger-checkpoint}}}`},
}

// values merges the case's values over base.
func values(t *testing.T, extra string) map[string]any {
	t.Helper()
	var b, e map[string]any
	if err := yaml.Unmarshal([]byte(base), &b); err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal([]byte(extra), &e); err != nil {
		t.Fatal(err)
	}
	return chartutil.CoalesceTables(e, b)
}

// render is `helm template tqscavenger deploy/helm/tqscavenger -n tqscavenger -f values`.
func render(t *testing.T, vals map[string]any) (string, error) {
	t.Helper()
	ch, err := loader.Load(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	inst := action.NewInstall(&action.Configuration{})
	inst.DryRun, inst.ClientOnly, inst.Replace = true, true, true
	inst.ReleaseName, inst.Namespace = "tqscavenger", "tqscavenger"
	inst.KubeVersion = &chartutil.KubeVersion{Version: "v1.33.0", Major: "1", Minor: "33"}
	rel, err := inst.Run(ch, vals)
	if err != nil {
		return "", err
	}
	return rel.Manifest, nil
}

// lint is `helm lint --strict -n tqscavenger -f values deploy/helm/tqscavenger`.
func lint(t *testing.T, vals map[string]any) {
	t.Helper()
	l := action.NewLint()
	l.Strict, l.Namespace = true, "tqscavenger"
	res := l.Run([]string{chartDir}, vals)
	for _, err := range res.Errors {
		t.Errorf("helm lint: %v", err)
	}
	if res.TotalChartsLinted != 1 {
		t.Errorf("helm lint linted %d charts", res.TotalChartsLinted)
	}
}

// TestChart lints each case and renders it into its file.
func TestChart(t *testing.T) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			vals := values(t, c.values)
			lint(t, vals)
			got, err := render(t, vals)
			if err != nil {
				t.Fatalf("helm template: %v", err)
			}
			want := []byte(c.header + generated + got)
			path := filepath.Join("..", c.file)
			if *update {
				if err := os.WriteFile(path, want, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			have, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(have, want) {
				t.Errorf("deploy/%s differs from the chart's render: edit the chart, then run go test ./... -update in deploy/helmcheck", c.file)
			}
		})
	}
}

// TestRenderedFilesAreCases: every file in deploy/helm/rendered is a
// case's, so none is left over from a removed case, unchecked.
func TestRenderedFilesAreCases(t *testing.T) {
	files, err := filepath.Glob("../helm/rendered/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	known := map[string]bool{}
	for _, c := range cases {
		known[filepath.Join("..", c.file)] = true
	}
	for _, f := range files {
		if !known[f] {
			t.Errorf("%s is no case's render", f)
		}
	}
}

// TestRequiredValues: what has no default, or must be one of a few
// values, fails the render with an error that names it.
func TestRequiredValues(t *testing.T) {
	for _, c := range []struct{ values, want string }{
		{`image: {repository: ""}`, "image.repository is required"},
		{`database: {existingSecret: ""}`, "database.existingSecret is required"},
		// values.schema.json: a mode, a database type, a key it does not know.
		{`mode: daemon`, `at '/mode': value must be one of 'serve', 'run', 'worker'`},
		{`database: {type: url}`, `at '/database/type': value must be one of`},
		{`modee: run`, `additional properties 'modee' not allowed`},
		{`image: {repo: x}`, `at '/image': additional properties 'repo' not allowed`},
		{`database: {type: sql}`, "database.sql.host is required"},
		{`tls: {enabled: true}`, "tls.existingSecret is required"},
		{`mode: worker`, "worker.temporal.address is required"},
	} {
		_, err := render(t, values(t, c.values))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("values %s: error %v, want one with %q", c.values, err, c.want)
		}
	}
}

const generated = `#
# Generated from the Helm chart deploy/helm/tqscavenger by deploy/helmcheck
# (go test ./... -update there): edit the chart, not this file.
`

const serveHeader = `# tqscavenger as a Kubernetes Deployment (serve) with a Service for its
# metrics, for clusters without Helm; with Helm:
#   helm install tqscavenger deploy/helm/tqscavenger --set image.repository=… --set database.existingSecret=tqscavenger-db
#
# Two replicas: each pass takes the database's one-scavenger-at-a-time lock
# (a PostgreSQL advisory lock, a MySQL named lock) and holds it only while
# the pass runs, so one replica works and the other stands by.
#
#   kubectl create namespace tqscavenger
#   kubectl -n tqscavenger create secret generic tqscavenger-db \
#     --from-literal=dsn='postgres://temporal:PASSWORD@postgres:5432/temporal?sslmode=require'
#   kubectl -n tqscavenger apply -f deploy/kubernetes.yaml
#
# Build and push the image yourself (see the Dockerfile) and set it below.
`

const runHeader = `# tqscavenger as a Kubernetes CronJob: one ` + "`tqscavenger run`" + ` pass per
# schedule, no daemon, no Service, for clusters without Helm; with Helm:
#   helm install tqscavenger deploy/helm/tqscavenger --set mode=run --set image.repository=… --set database.existingSecret=tqscavenger-db
# The alternative to kubernetes.yaml's Deployment; use one or the other
# (both together only contend for the lock).
#
#   kubectl create namespace tqscavenger
#   kubectl -n tqscavenger create secret generic tqscavenger-db \
#     --from-literal=dsn='postgres://temporal:PASSWORD@postgres:5432/temporal?sslmode=require'
#   kubectl -n tqscavenger apply -f deploy/cronjob.yaml
#
# Build and push the image yourself (see the Dockerfile) and set it below.
`
