package helmcheck

// values.schema.json against values.yaml and the templates: every object
// of the chart's own values refuses an unknown key, at every level, while
// what is passed through to Kubernetes (or to tqscavenger's config file)
// stays open; every key the templates read is declared, and every key
// declared is read.

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// passThrough are the values passed through as they are: Kubernetes
// objects, labels and annotations, and tqscavenger's settings (which
// tqscavenger checks itself when it starts). The schema leaves them open
// and only them: a valid Kubernetes field must never fail an install or
// an upgrade.
var passThrough = []string{
	"global", // Helm's, for a parent chart's subcharts
	"additionalLabels", "additionalAnnotations",
	"imagePullSecrets",
	"serviceAccount.extraAnnotations",
	"settings", "serve.settings", "run.settings", "worker.settings",
	"serve.service.annotations", "serve.livenessProbe", "serve.readinessProbe",
	"run.checkpoint.persistence.accessModes",
	"metrics.serviceMonitor.additionalLabels", "metrics.serviceMonitor.metricRelabelings",
	"metrics.prometheusRule.additionalLabels",
	"metrics.dashboard.labels", "metrics.dashboard.annotations",
	"podAnnotations", "podLabels",
	"resources", "securityContext", "containerSecurityContext",
	"nodeSelector", "tolerations", "affinity",
	"additionalEnv", "additionalVolumes", "additionalVolumeMounts",
	"extraObjects",
}

// schemaNode is the part of a JSON schema values.schema.json uses.
type schemaNode struct {
	Type                 any                    `json:"type"`
	AdditionalProperties *bool                  `json:"additionalProperties"`
	Properties           map[string]*schemaNode `json:"properties"`
	PatternProperties    map[string]any         `json:"patternProperties"`
}

func (n *schemaNode) isObject() bool { return n.Type == "object" }

func loadSchema(t *testing.T) *schemaNode {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(chartDir, "values.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	var n schemaNode
	if err := json.Unmarshal(b, &n); err != nil {
		t.Fatalf("values.schema.json: %v", err)
	}
	return &n
}

// schemaPaths returns every property path of the schema (a.b.c) and its
// node.
func schemaPaths(n *schemaNode, prefix string, out map[string]*schemaNode) {
	for k, c := range n.Properties {
		p := k
		if prefix != "" {
			p = prefix + "." + k
		}
		out[p] = c
		schemaPaths(c, p, out)
	}
}

// TestSchemaClosed: the schema refuses unknown keys in every object of
// the chart's own values and leaves exactly the pass-through ones open;
// every key of values.yaml is declared, with its objects and their keys.
func TestSchemaClosed(t *testing.T) {
	root := loadSchema(t)
	if root.AdditionalProperties == nil || *root.AdditionalProperties {
		t.Error("values.schema.json: the top level takes unknown keys")
	}
	paths := map[string]*schemaNode{}
	schemaPaths(root, "", paths)
	for p, n := range paths {
		open := slices.Contains(passThrough, p)
		closed := n.AdditionalProperties != nil && !*n.AdditionalProperties
		switch {
		case open && (n.Properties != nil || closed && n.PatternProperties == nil):
			// tqscavenger's settings may be held to the form of a flag
			// name (patternProperties), no more.
			t.Errorf("values.schema.json: %s is passed through to Kubernetes or tqscavenger, yet its keys are checked", p)
		case open:
		case n.isObject() && !closed:
			t.Errorf("values.schema.json: %s takes unknown keys: a typo in it would be ignored", p)
		case !n.isObject() && n.Properties != nil:
			t.Errorf("values.schema.json: %s has properties but is not an object", p)
		}
	}
	for _, p := range passThrough {
		if paths[p] == nil {
			t.Errorf("values.schema.json: no %s (passThrough names it)", p)
		}
	}

	b, err := os.ReadFile(filepath.Join(chartDir, "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var vals map[string]any
	if err := yaml.Unmarshal(b, &vals); err != nil {
		t.Fatal(err)
	}
	var walk func(m map[string]any, prefix string)
	walk = func(m map[string]any, prefix string) {
		for k, v := range m {
			p := k
			if prefix != "" {
				p = prefix + "." + k
			}
			if paths[p] == nil {
				t.Errorf("values.yaml: %s is not declared in values.schema.json", p)
				continue
			}
			if sub, ok := v.(map[string]any); ok && !slices.Contains(passThrough, p) {
				walk(sub, p)
			}
		}
	}
	walk(vals, "")
}

// valuesRef is a .Values path in a template, or a variable bound to one.
var (
	valuesRef = regexp.MustCompile(`\.Values((?:\.[A-Za-z_][A-Za-z0-9_]*)+)`)
	bindRef   = regexp.MustCompile(`\$([A-Za-z_][A-Za-z0-9_]*) :?= ((?:ternary )?(?:\.Values(?:\.[A-Za-z_][A-Za-z0-9_]*)+ ?)+)`)
	varRef    = regexp.MustCompile(`\$([A-Za-z_][A-Za-z0-9_]*)((?:\.[A-Za-z_][A-Za-z0-9_]*)+)`)
)

// templateReads returns the values paths the chart's templates read,
// directly (.Values.a.b) or through a variable bound to one in the same
// file ($r := .Values.run, then $r.schedule).
func templateReads(t *testing.T) map[string]bool {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(chartDir, "templates", "*"))
	if err != nil || len(files) == 0 {
		t.Fatalf("templates: %v", err)
	}
	reads := map[string]bool{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		src := string(b)
		for _, m := range valuesRef.FindAllStringSubmatch(src, -1) {
			reads[strings.TrimPrefix(m[1], ".")] = true
		}
		bound := map[string][]string{}
		for _, m := range bindRef.FindAllStringSubmatch(src, -1) {
			for _, v := range valuesRef.FindAllStringSubmatch(m[2], -1) {
				bound[m[1]] = append(bound[m[1]], strings.TrimPrefix(v[1], "."))
			}
		}
		for _, m := range varRef.FindAllStringSubmatch(src, -1) {
			for _, base := range bound[m[1]] {
				reads[base+m[2]] = true
			}
		}
	}
	return reads
}

// TestSchemaMatchesTemplates: every values path a template reads is
// declared by the schema (else setting it would be refused), and every
// key the schema declares in the chart's own values is read by a template
// (else setting it would do nothing), a pass-through value as a whole.
func TestSchemaMatchesTemplates(t *testing.T) {
	paths := map[string]*schemaNode{}
	schemaPaths(loadSchema(t), "", paths)
	reads := templateReads(t)
	under := func(p string) bool { // p, or inside a pass-through value
		for _, o := range passThrough {
			if p == o || strings.HasPrefix(p, o+".") {
				return true
			}
		}
		return false
	}
	for p := range reads {
		if paths[p] == nil && !under(p) {
			t.Errorf("the templates read .Values.%s, which values.schema.json does not declare", p)
		}
	}
	for p, n := range paths {
		if p == "global" || (n.isObject() && !slices.Contains(passThrough, p)) {
			continue // Helm's; an object of the chart's is read through its keys
		}
		if !reads[p] {
			t.Errorf("values.schema.json declares %s, which no template reads", p)
		}
	}
	if len(reads) < 40 {
		t.Errorf("only %d values paths found in the templates: %v", len(reads), reads)
	}
}

// TestSchemaRefusesTypos: a misspelt key at any level of the chart's own
// values fails the render and names itself.
func TestSchemaRefusesTypos(t *testing.T) {
	for _, c := range []struct{ values, want string }{
		{`serve: {replicas: 1}`, `at '/serve': additional properties 'replicas' not allowed`},
		{`serve: {service: {prot: 9000}}`, `at '/serve/service': additional properties 'prot' not allowed`},
		{`run: {schedul: "0 3 * * *"}`, `at '/run': additional properties 'schedul' not allowed`},
		{`run: {checkpoint: {persistence: {enable: false}}}`, `at '/run/checkpoint/persistence': additional properties 'enable' not allowed`},
		{`run: {checkpoint: {persistance: {enabled: false}}}`, `at '/run/checkpoint': additional properties 'persistance' not allowed`},
		{`worker: {temporal: {adress: "t:7233"}}`, `at '/worker/temporal': additional properties 'adress' not allowed`},
		{`database: {sql: {hostname: db}}`, `at '/database/sql': additional properties 'hostname' not allowed`},
		{`tls: {caFile: ca.crt}`, `at '/tls': additional properties 'caFile' not allowed`},
		{`serviceAccount: {annotations: {a: b}}`, `at '/serviceAccount': additional properties 'annotations' not allowed`},
		{`metrics: {serviceMonitor: {enable: true}}`, `at '/metrics/serviceMonitor': additional properties 'enable' not allowed`},
		{`metrics: {prometheusRule: {runbookBaseUrl: "https://x"}}`, `at '/metrics/prometheusRule': additional properties 'runbookBaseUrl' not allowed`},
		{`metrics: {dashboard: {label: {a: b}}}`, `at '/metrics/dashboard': additional properties 'label' not allowed`},
		{`metrics: {annotations: {enable: false}}`, `at '/metrics/annotations': additional properties 'enable' not allowed`},
		{`metrics: {serviceMonitors: {enabled: true}}`, `at '/metrics': additional properties 'serviceMonitors' not allowed`},
		// tqscavenger's settings are checked by tqscavenger, but a key
		// that cannot be a flag name (camelCase) is refused here.
		{`run: {settings: {maxDeletesPerSecond: 10}}`, `at '/run/settings': additional properties 'maxDeletesPerSecond' not allowed`},
		{`serve: {replicaCount: two}`, `at '/serve/replicaCount': 'two' does not match pattern`},
		{`run: {backoffLimit: -1}`, `at '/run/backoffLimit': minimum: got -1, want 0`},
	} {
		_, err := render(t, values(t, c.values))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("values %s: error %v, want one with %q", c.values, err, c.want)
		}
	}
}

// TestSchemaPassThrough: arbitrary Kubernetes content in every
// pass-through value, any tqscavenger setting, and a count given as a
// string of digits still render, in each mode: values that rendered
// before the schema closed its objects must not fail an upgrade.
func TestSchemaPassThrough(t *testing.T) {
	const k8s = `
global: {imageRegistry: registry.example.com, anything: [1, 2]}
additionalLabels: {team: ops, cost-center: "42"}
additionalAnnotations: {example.com/owner: ops}
imagePullSecrets: [{name: pull}]
serviceAccount: {create: true, extraAnnotations: {eks.amazonaws.com/role-arn: "arn:aws:iam::1:role/x"}}
settings: {log-format: text, log-level: debug, some-future-flag: 3}
serve:
  settings: {every: 1h, run-at-start: true}
  service: {annotations: {service.beta.kubernetes.io/aws-load-balancer-internal: "true"}}
  livenessProbe: {httpGet: {path: /healthz, port: http}, initialDelaySeconds: 5, failureThreshold: 6}
  readinessProbe: {exec: {command: [/bin/true]}, successThreshold: 1}
  terminationGracePeriodSeconds: "60" # digits as a string render the same
run:
  settings: {dry-run: true}
  checkpoint: {persistence: {accessModes: [ReadWriteOncePod], size: 1073741824}}
worker: {settings: {partitions: 4}}
metrics:
  serviceMonitor: {enabled: true, additionalLabels: {release: kps}, metricRelabelings: [{action: drop, sourceLabels: [__name__], regex: go_.*}]}
  prometheusRule: {enabled: true, additionalLabels: {release: kps}}
  dashboard: {enabled: true, labels: {grafana_dashboard: "1", team: ops}, annotations: {grafana_folder: Temporal}}
podAnnotations: {sidecar.istio.io/inject: "false", checksum/extra: abc}
podLabels: {azure.workload.identity/use: "true"}
resources: {requests: {cpu: 100m, memory: 128Mi, ephemeral-storage: 1Gi}, limits: {memory: 512Mi, example.com/gpu: 0}}
securityContext: {runAsNonRoot: true, runAsUser: 1000, fsGroupChangePolicy: OnRootMismatch, sysctls: [{name: net.ipv4.ip_local_port_range, value: "1024 65535"}], seccompProfile: {type: Localhost, localhostProfile: p.json}}
containerSecurityContext: {readOnlyRootFilesystem: true, allowPrivilegeEscalation: false, capabilities: {drop: [ALL], add: [NET_BIND_SERVICE]}, appArmorProfile: {type: RuntimeDefault}}
nodeSelector: {kubernetes.io/os: linux, node.example.com/pool: ops}
tolerations: [{key: dedicated, operator: Equal, value: ops, effect: NoSchedule}, {operator: Exists}]
affinity:
  nodeAffinity:
    requiredDuringSchedulingIgnoredDuringExecution:
      nodeSelectorTerms: [{matchExpressions: [{key: kubernetes.io/arch, operator: In, values: [amd64, arm64]}]}]
  podAntiAffinity:
    preferredDuringSchedulingIgnoredDuringExecution:
      - weight: 100
        podAffinityTerm: {topologyKey: kubernetes.io/hostname, labelSelector: {matchLabels: {app.kubernetes.io/name: tqscavenger}}}
additionalEnv: [{name: GODEBUG, value: "x509sha1=1"}, {name: POD, valueFrom: {fieldRef: {fieldPath: metadata.name}}}]
additionalVolumes: [{name: extra-ca, configMap: {name: extra-ca, defaultMode: 0444}}]
additionalVolumeMounts: [{name: extra-ca, mountPath: /etc/ssl/extra, readOnly: true}]
extraObjects:
  - apiVersion: policy/v1
    kind: PodDisruptionBudget
    metadata: {name: "{{ .Release.Name }}-pdb"}
    spec: {maxUnavailable: 1, selector: {matchLabels: {app.kubernetes.io/name: tqscavenger}}}
`
	for _, mode := range []string{"serve", "run", "worker"} {
		extra := k8s + "mode: " + mode + "\n"
		if mode == "worker" {
			extra += "worker: {temporal: {address: \"temporal:7233\"}, settings: {partitions: 4}}\n"
		}
		out, err := render(t, values(t, extra))
		if err != nil {
			t.Errorf("mode %s with pass-through Kubernetes content: %v", mode, err)
			continue
		}
		for _, want := range []string{"ephemeral-storage: 1Gi", "nodeAffinity:", "operator: Exists", "azure.workload.identity/use", "sidecar.istio.io/inject", "NET_BIND_SERVICE", "tqscavenger-pdb", "extra-ca"} {
			if !strings.Contains(out, want) {
				t.Errorf("mode %s: the render lacks %q", mode, want)
			}
		}
	}
}

// TestServiceAccount: serviceAccount.create makes the ServiceAccount the
// pods run as, with its extraAnnotations; without it the pods run as the
// account named, which the chart does not create.
func TestServiceAccount(t *testing.T) {
	out, err := render(t, values(t, `serviceAccount: {create: true, extraAnnotations: {eks.amazonaws.com/role-arn: "arn:aws:iam::1:role/x"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "kind: ServiceAccount\nmetadata:\n  name: tqscavenger\n") ||
		!strings.Contains(out, "eks.amazonaws.com/role-arn: arn:aws:iam::1:role/x") ||
		!strings.Contains(out, "serviceAccountName: tqscavenger\n") {
		t.Errorf("serviceAccount.create: no ServiceAccount tqscavenger with its annotation that the pods use:\n%s", out)
	}
	out, err = render(t, values(t, `serviceAccount: {name: mine}`))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, "kind: ServiceAccount") || !strings.Contains(out, "serviceAccountName: mine\n") {
		t.Errorf("serviceAccount.name without create: want no ServiceAccount, pods running as mine:\n%s", out)
	}
}
