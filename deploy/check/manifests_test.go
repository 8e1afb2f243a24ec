package check

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"

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
		var obj any
		switch tm.APIVersion + " " + tm.Kind {
		case "v1 ConfigMap":
			obj = &corev1.ConfigMap{}
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
	var dsn bool
	for _, e := range c.Env {
		if e.Name == "TQSCAVENGER_DB" {
			dsn = e.Value == "" && e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil
		}
	}
	if !dsn {
		t.Errorf("%s: TQSCAVENGER_DB does not come from a Secret", name)
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

func TestDeployment(t *testing.T) {
	objs := objects(t, "kubernetes.yaml")
	d := find[appsv1.Deployment](objs)
	if d == nil || find[corev1.Service](objs) == nil {
		t.Fatal("kubernetes.yaml: want a Deployment and a Service")
	}
	pod := d.Spec.Template.Spec
	checkPod(t, "kubernetes.yaml", pod, find[corev1.ConfigMap](objs))
	c := pod.Containers[0]
	if len(c.Args) == 0 || c.Args[0] != "serve" {
		t.Errorf("Deployment runs %v, want serve", c.Args)
	}
	if c.LivenessProbe == nil || c.ReadinessProbe == nil {
		t.Error("Deployment: no liveness or readiness probe")
	}
}

func TestCronJob(t *testing.T) {
	objs := objects(t, "cronjob.yaml")
	cj := find[batchv1.CronJob](objs)
	if cj == nil {
		t.Fatal("cronjob.yaml: no CronJob")
	}
	s := cj.Spec
	if s.ConcurrencyPolicy != batchv1.ForbidConcurrent {
		t.Errorf("concurrencyPolicy %q, want Forbid: two passes at once only contend for the lock", s.ConcurrencyPolicy)
	}
	if s.StartingDeadlineSeconds == nil || *s.StartingDeadlineSeconds <= 0 {
		t.Error("no startingDeadlineSeconds: missed runs would start late in a burst")
	}
	js := s.JobTemplate.Spec
	if js.ActiveDeadlineSeconds == nil || *js.ActiveDeadlineSeconds <= 0 {
		t.Error("no activeDeadlineSeconds: a stuck pass would run forever")
	}
	if js.TTLSecondsAfterFinished == nil || *js.TTLSecondsAfterFinished <= 0 {
		t.Error("no ttlSecondsAfterFinished: finished Jobs pile up")
	}
	pod := js.Template.Spec
	checkPod(t, "cronjob.yaml", pod, find[corev1.ConfigMap](objs))
	if pod.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("restartPolicy %q, want Never (a pod failure policy requires it)", pod.RestartPolicy)
	}
	c := pod.Containers[0]
	if len(c.Args) == 0 || c.Args[0] != "run" {
		t.Errorf("CronJob runs %v, want run", c.Args)
	}
	// Bad input (2) and a held lock (5) fail the Job at once.
	var failFast []int32
	if p := js.PodFailurePolicy; p != nil {
		for _, r := range p.Rules {
			if r.Action == batchv1.PodFailurePolicyActionFailJob && r.OnExitCodes != nil && r.OnExitCodes.Operator == batchv1.PodFailurePolicyOnExitCodesOpIn {
				failFast = append(failFast, r.OnExitCodes.Values...)
			}
		}
	}
	if !slices.Contains(failFast, 2) || !slices.Contains(failFast, 5) {
		t.Errorf("exit statuses failing the Job at once: %v, want 2 and 5", failFast)
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
