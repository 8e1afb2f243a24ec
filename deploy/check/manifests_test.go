package check

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// docs splits a manifest file into its YAML documents.
func docs(t *testing.T, name string) [][]byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", name))
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	for _, d := range bytes.Split(b, []byte("\n---\n")) {
		d = bytes.TrimPrefix(d, []byte("---\n"))
		if len(bytes.TrimSpace(d)) > 0 {
			out = append(out, d)
		}
	}
	return out
}

// objects decodes every document of a manifest strictly into its API
// type, chosen by its kind.
func objects(t *testing.T, name string) []any {
	t.Helper()
	var out []any
	for i, d := range docs(t, name) {
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal(d, &tm); err != nil {
			t.Fatalf("%s document %d: %v", name, i+1, err)
		}
		if tm == (metav1.TypeMeta{}) && onlyComments(d) {
			continue // a file's header
		}
		var obj any
		switch tm.APIVersion + " " + tm.Kind {
		case "v1 ConfigMap":
			obj = &corev1.ConfigMap{}
		case "v1 ServiceAccount":
			obj = &corev1.ServiceAccount{}
		case "v1 PersistentVolumeClaim":
			obj = &corev1.PersistentVolumeClaim{}
		case "monitoring.coreos.com/v1 ServiceMonitor":
			obj = &monitoringv1.ServiceMonitor{}
		case "monitoring.coreos.com/v1 PrometheusRule":
			obj = &monitoringv1.PrometheusRule{}
		case "v1 Service":
			obj = &corev1.Service{}
		case "apps/v1 Deployment":
			obj = &appsv1.Deployment{}
		case "batch/v1 CronJob":
			obj = &batchv1.CronJob{}
		default:
			t.Fatalf("%s document %d: unexpected %s %s", name, i+1, tm.APIVersion, tm.Kind)
		}
		if err := yaml.UnmarshalStrict(d, obj); err != nil {
			t.Fatalf("%s document %d (%s): %v", name, i+1, tm.Kind, err)
		}
		out = append(out, obj)
	}
	return out
}

func find[T any](objs []any) *T {
	for _, o := range objs {
		if v, ok := o.(*T); ok {
			return v
		}
	}
	return nil
}

// checkPod checks what both forms share: a non-root, read-only container
// whose config volume names the manifest's ConfigMap, and the DSN from a
// Secret.
func checkPod(t *testing.T, name string, pod corev1.PodSpec, cm *corev1.ConfigMap) {
	t.Helper()
	if cm == nil {
		t.Fatalf("%s: no ConfigMap", name)
	}
	if len(pod.Containers) != 1 {
		t.Fatalf("%s: %d containers, want 1", name, len(pod.Containers))
	}
	c := pod.Containers[0]
	sc := pod.SecurityContext
	if sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.RunAsUser == nil || *sc.RunAsUser == 0 {
		t.Errorf("%s: the pod may run as root", name)
	}
	if c.SecurityContext == nil || c.SecurityContext.ReadOnlyRootFilesystem == nil || !*c.SecurityContext.ReadOnlyRootFilesystem ||
		c.SecurityContext.AllowPrivilegeEscalation == nil || *c.SecurityContext.AllowPrivilegeEscalation {
		t.Errorf("%s: the container's file system is writable or it may escalate", name)
	}
	if _, ok := c.Resources.Limits[corev1.ResourceMemory]; !ok {
		t.Errorf("%s: no memory limit", name)
	}
	// The database comes from a Secret: a DSN, temporal-sql-tool's
	// password, or a Temporal config file on a Secret's volume; no
	// credential is a literal value.
	var fromSecret bool
	for _, e := range c.Env {
		secret := e.Value == "" && e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil
		switch e.Name {
		case "TQSCAVENGER_DB", "SQL_PASSWORD":
			fromSecret = secret
		case "TQSCAVENGER_TEMPORAL_CONFIG":
			fromSecret = secretVolumeAt(pod, c, e.Value)
		}
		if strings.Contains(e.Name, "PASSWORD") && !secret {
			t.Errorf("%s: %s is a literal value, not from a Secret", name, e.Name)
		}
	}
	if !fromSecret {
		t.Errorf("%s: the database (TQSCAVENGER_DB, SQL_PASSWORD or TQSCAVENGER_TEMPORAL_CONFIG) does not come from a Secret", name)
	}
	// The root file system is read-only: SQLite's lock directory
	// (os.TempDir) is an emptyDir.
	if !emptyDirAt(pod, c, "/tmp") {
		t.Errorf("%s: /tmp (SQLite's lock directory) is not an emptyDir", name)
	}
	var mounted bool
	for _, v := range pod.Volumes {
		if v.ConfigMap != nil && v.ConfigMap.Name == cm.Name {
			mounted = true
		}
	}
	if !mounted {
		t.Errorf("%s: no volume of ConfigMap %s", name, cm.Name)
	}
}

// volumeAt returns the pod's volume mounted at dir (or at a parent of
// file dir) in c.
func volumeAt(pod corev1.PodSpec, c corev1.Container, path string) *corev1.Volume {
	for _, m := range c.VolumeMounts {
		if path == m.MountPath || strings.HasPrefix(path, m.MountPath+"/") {
			for i, v := range pod.Volumes {
				if v.Name == m.Name {
					return &pod.Volumes[i]
				}
			}
		}
	}
	return nil
}

func secretVolumeAt(pod corev1.PodSpec, c corev1.Container, path string) bool {
	v := volumeAt(pod, c, path)
	return v != nil && v.Secret != nil
}

func emptyDirAt(pod corev1.PodSpec, c corev1.Container, path string) bool {
	v := volumeAt(pod, c, path)
	return v != nil && v.EmptyDir != nil
}

func TestDeployment(t *testing.T) {
	objs := objects(t, "kubernetes.yaml")
	if find[appsv1.Deployment](objs) == nil || find[corev1.Service](objs) == nil {
		t.Fatal("kubernetes.yaml: want a Deployment and a Service")
	}
	checkObjects(t, "kubernetes.yaml", objs)
}

func TestCronJob(t *testing.T) {
	objs := objects(t, "cronjob.yaml")
	if find[batchv1.CronJob](objs) == nil {
		t.Fatal("cronjob.yaml: no CronJob")
	}
	checkObjects(t, "cronjob.yaml", objs)
}

// TestRendered: the chart's renders of its values matrix
// (deploy/helm/rendered, kept by deploy/helmcheck) pass the same checks.
func TestRendered(t *testing.T) {
	files, err := filepath.Glob("../helm/rendered/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 3 {
		t.Fatalf("%d rendered files, want one per case of deploy/helmcheck", len(files))
	}
	for _, f := range files {
		name, _ := filepath.Rel("..", f)
		t.Run(name, func(t *testing.T) { checkObjects(t, name, objects(t, name)) })
	}
}

// onlyComments reports whether a YAML document holds nothing but comments.
func onlyComments(d []byte) bool {
	for _, l := range bytes.Split(d, []byte("\n")) {
		if l = bytes.TrimSpace(l); len(l) > 0 && l[0] != '#' {
			return false
		}
	}
	return true
}

// checkObjects checks each workload of a manifest by its kind.
func checkObjects(t *testing.T, name string, objs []any) {
	t.Helper()
	var workloads int
	for _, o := range objs {
		switch o := o.(type) {
		case *appsv1.Deployment:
			workloads++
			checkDeployment(t, name, o, objs)
		case *batchv1.CronJob:
			workloads++
			checkCronJob(t, name, o, objs)
		}
	}
	if workloads != 1 {
		t.Errorf("%s: %d Deployments and CronJobs, want 1", name, workloads)
	}
}

// configMapOf returns the manifest's ConfigMap the pod mounts.
func configMapOf(objs []any, pod corev1.PodSpec) *corev1.ConfigMap {
	for _, v := range pod.Volumes {
		for _, o := range objs {
			if cm, ok := o.(*corev1.ConfigMap); ok && v.ConfigMap != nil && v.ConfigMap.Name == cm.Name {
				return cm
			}
		}
	}
	return nil
}

// checkDeployment checks a Deployment of serve (probes on the health
// endpoints, a Service) or of worker.
func checkDeployment(t *testing.T, name string, d *appsv1.Deployment, objs []any) {
	t.Helper()
	pod := d.Spec.Template.Spec
	checkPod(t, name, pod, configMapOf(objs, pod))
	c := pod.Containers[0]
	if len(c.Args) == 0 || (c.Args[0] != "serve" && c.Args[0] != "worker") {
		t.Fatalf("%s: the Deployment runs %v, want serve or worker", name, c.Args)
	}
	if c.Args[0] == "worker" {
		return // no HTTP endpoint to probe
	}
	if c.LivenessProbe == nil || c.ReadinessProbe == nil ||
		c.LivenessProbe.HTTPGet == nil || c.LivenessProbe.HTTPGet.Path != "/healthz" ||
		c.ReadinessProbe.HTTPGet == nil || c.ReadinessProbe.HTTPGet.Path != "/readyz" {
		t.Errorf("%s: the Deployment's probes are not on /healthz and /readyz", name)
	}
	if find[corev1.Service](objs) == nil {
		t.Errorf("%s: serve without a Service", name)
	}
}

// checkCronJob checks a CronJob of run.
func checkCronJob(t *testing.T, name string, cj *batchv1.CronJob, objs []any) {
	t.Helper()
	s := cj.Spec
	if s.ConcurrencyPolicy != batchv1.ForbidConcurrent {
		t.Errorf("%s: concurrencyPolicy %q, want Forbid: two passes at once only contend for the lock", name, s.ConcurrencyPolicy)
	}
	if s.StartingDeadlineSeconds == nil || *s.StartingDeadlineSeconds <= 0 {
		t.Errorf("%s: no startingDeadlineSeconds: missed runs would start late in a burst", name)
	}
	js := s.JobTemplate.Spec
	if js.ActiveDeadlineSeconds == nil || *js.ActiveDeadlineSeconds <= 0 {
		t.Errorf("%s: no activeDeadlineSeconds: a stuck pass would run forever", name)
	}
	if js.TTLSecondsAfterFinished == nil || *js.TTLSecondsAfterFinished <= 0 {
		t.Errorf("%s: no ttlSecondsAfterFinished: finished Jobs pile up", name)
	}
	pod := js.Template.Spec
	checkPod(t, name, pod, configMapOf(objs, pod))
	if pod.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("%s: restartPolicy %q, want Never (a pod failure policy requires it)", name, pod.RestartPolicy)
	}
	c := pod.Containers[0]
	if len(c.Args) == 0 || c.Args[0] != "run" {
		t.Errorf("%s: the CronJob runs %v, want run", name, c.Args)
	}
	// A lock held by another tqscavenger is a skipped run, not a failed
	// Job (and a TqscavengerCronJobFailed alert): the next schedule tries
	// again.
	if !slices.Contains(c.Args, "--lock-held-ok") {
		t.Errorf("%s: the CronJob runs %v, without --lock-held-ok: a held lock fails its Job", name, c.Args)
	}
	// Bad input (2) and a held lock (5, should it come without
	// --lock-held-ok) fail the Job at once.
	var failFast []int32
	if p := js.PodFailurePolicy; p != nil {
		for _, r := range p.Rules {
			if r.Action == batchv1.PodFailurePolicyActionFailJob && r.OnExitCodes != nil && r.OnExitCodes.Operator == batchv1.PodFailurePolicyOnExitCodesOpIn {
				failFast = append(failFast, r.OnExitCodes.Values...)
			}
		}
	}
	if !slices.Contains(failFast, 2) || !slices.Contains(failFast, 5) {
		t.Errorf("%s: exit statuses failing the Job at once: %v, want 2 and 5", name, failFast)
	}
	// The checkpoint: a retried pod resumes from the file a failed one
	// left, so it must be on a volume, of a claim unless asked otherwise.
	var checkpoint bool
	for _, m := range c.VolumeMounts {
		if m.MountPath == "/var/lib/tqscavenger" {
			checkpoint = true
		}
	}
	if !checkpoint {
		t.Errorf("%s: no volume for the --checkpoint file", name)
	}
}

// TestStrict: the decoding these tests rely on refuses a misspelt field,
// so a typo in a manifest cannot pass unseen.
func TestStrict(t *testing.T) {
	bad := []byte("apiVersion: batch/v1\nkind: CronJob\nspec:\n  concurrencyPolicy: Forbid\n  startingDeadline: 3600\n")
	if err := yaml.UnmarshalStrict(bad, &batchv1.CronJob{}); err == nil {
		t.Error("a CronJob with the unknown field startingDeadline decoded")
	}
}
