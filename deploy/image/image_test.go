package image

// The image test: scripts/release builds the image for this machine's
// architecture, and podman runs it as an operator would.

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// servePort is the host port serve's is published on: below the kernel's
// ephemeral range (32768 on), and used by nothing else here.
const servePort = 19480

// runArgs start `podman run` as it works on this machine: runc, since
// crun fails to set podman's default rlimits (EPERM, cgroups v1), and
// limits within the host's hard ones, which podman's defaults exceed.
var runArgs = []string{"--runtime", "runc", "run", "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024"}

// requireEngine returns podman's path, or skips the test without podman
// and runc; under CI=true their absence fails it.
func requireEngine(t *testing.T) string {
	t.Helper()
	podman, err := exec.LookPath("podman")
	if err == nil {
		_, err = exec.LookPath("runc")
	}
	if err != nil {
		msg := fmt.Sprintf("the image tests need podman and runc (apt-get install podman runc): %v", err)
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg + "; skipped")
	}
	return podman
}

// cmd runs a command with a bound on its time and returns its standard
// output; a failure fails the test with both outputs.
func cmd(t *testing.T, timeout time.Duration, name string, args ...string) string {
	t.Helper()
	out, err := tryCmd(timeout, name, args...)
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return out
}

// tryCmd is cmd that returns the failure: the combined output then.
func tryCmd(timeout time.Duration, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	c := exec.CommandContext(ctx, name, args...)
	var stdout, stderr strings.Builder
	c.Stdout, c.Stderr = &stdout, &stderr
	if err := c.Run(); err != nil {
		return stdout.String() + stderr.String(), err
	}
	return stdout.String(), nil
}

// release is what buildRelease made.
type release struct {
	version string // VERSION
	image   string // the image's reference
	bin     string // the linux binary, to seed databases from the host
}

// buildRelease runs scripts/release for this machine's linux platform into
// a temporary directory, under an image name of the test's own, removed
// when the test ends.
func buildRelease(t *testing.T, podman string) release {
	t.Helper()
	version := readVersion(t)
	out := t.TempDir()
	repo := "localhost/tqscavenger-imagetest"
	r := release{version: version, image: repo + ":" + version}
	t.Cleanup(func() { tryCmd(time.Minute, podman, "rmi", "-f", r.image) })
	start := time.Now()
	cmd(t, 20*time.Minute, filepath.Join(root, "scripts/release"),
		"--platforms", "linux/"+runtime.GOARCH, "--out", out, "--image", repo)
	t.Logf("scripts/release --platforms linux/%s: %s", runtime.GOARCH, time.Since(start).Round(time.Second))
	sums, err := os.ReadFile(filepath.Join(out, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	archive := fmt.Sprintf("tqscavenger_%s_linux_%s.tar.gz", version, runtime.GOARCH)
	for _, f := range []string{archive, fmt.Sprintf("tqscavenger_%s_linux_%s.image.tar.gz", version, runtime.GOARCH)} {
		m := regexp.MustCompile(`(?m)^([0-9a-f]{64})  ` + regexp.QuoteMeta(f) + `$`).FindSubmatch(sums)
		if m == nil {
			t.Errorf("SHA256SUMS has no line for %s:\n%s", f, sums)
			continue
		}
		b, err := os.ReadFile(filepath.Join(out, f))
		if err != nil {
			t.Fatal(err)
		}
		if sum := fmt.Sprintf("%x", sha256.Sum256(b)); sum != string(m[1]) {
			t.Errorf("%s: SHA-256 %s, SHA256SUMS says %s", f, sum, m[1])
		}
	}
	r.bin = untar(t, filepath.Join(out, archive), "tqscavenger")
	return r
}

// untar extracts one file of a .tar.gz into a temporary directory.
func untar(t *testing.T, archive, name string) string {
	t.Helper()
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err != nil {
			t.Fatalf("%s: no %s: %v", archive, name, err)
		}
		if h.Name != name {
			continue
		}
		path := filepath.Join(t.TempDir(), name)
		out, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY, 0o755)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(out, tr); err != nil {
			t.Fatal(err)
		}
		if err := out.Close(); err != nil {
			t.Fatal(err)
		}
		return path
	}
}

// container runs the image under a name of the test's own, which is
// removed when the test ends whatever happened: a podman client that is
// stopped leaves its container running.
func container(t *testing.T, podman string, timeout time.Duration, opts []string, args ...string) (string, error) {
	t.Helper()
	name := fmt.Sprintf("tqs-imagetest-%d-%s", os.Getpid(), regexp.MustCompile(`[^a-z0-9]+`).ReplaceAllString(strings.ToLower(t.Name()), "-"))
	t.Cleanup(func() { tryCmd(time.Minute, podman, "rm", "-f", "-t", "0", name) })
	return tryCmd(timeout, podman, slices.Concat(runArgs, []string{"--name", name}, opts, args)...)
}

// seedDir makes a directory the container's user (65532) may write in,
// with a SQLite file of 10 queues × 10 tasks, 50 of them expired.
func seedDir(t *testing.T, bin string) (dir, file string) {
	t.Helper()
	dir = t.TempDir()
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	file = filepath.Join(dir, "tq.db")
	cmd(t, time.Minute, bin, "seed", "--db", file, "--queues", "10", "--tasks", "10")
	if err := os.Chmod(file, 0o666); err != nil {
		t.Fatal(err)
	}
	return dir, file
}

// passResult is what run -o json prints, in part.
type passResult struct {
	Outcome      string `json:"outcome"`
	TasksDeleted int    `json:"tasks_deleted"`
	DryRun       bool   `json:"dry_run"`
}

// TestImage builds the release's image and runs it.
func TestImage(t *testing.T) {
	podman := requireEngine(t)
	r := buildRelease(t, podman)

	t.Run("version", func(t *testing.T) {
		out, err := container(t, podman, time.Minute, []string{"--rm"}, r.image, "version")
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		t.Logf("%s", strings.TrimSpace(out))
		want := `^tqscavenger v` + regexp.QuoteMeta(r.version) + ` \(revision ([0-9a-f]{40}(\+dirty)?|unknown), go1\.`
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("version printed %q, want %s", out, want)
		}
	})

	t.Run("config", func(t *testing.T) {
		var cfg struct {
			User         string
			Env          []string
			ExposedPorts map[string]any
			Entrypoint   []string
			Cmd          []string
			Labels       map[string]string
		}
		out := cmd(t, time.Minute, podman, "image", "inspect", "--format", "{{json .Config}}", r.image)
		if err := json.Unmarshal([]byte(out), &cfg); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		t.Logf("user %s, env %q, ports %v, entrypoint %q, cmd %q", cfg.User, cfg.Env, cfg.ExposedPorts, cfg.Entrypoint, cfg.Cmd)
		if cfg.User != "65532:65532" {
			t.Errorf("user %q, want 65532:65532", cfg.User)
		}
		if !strings.Contains(strings.Join(cfg.Env, "\n"), "TQSCAVENGER_LISTEN=:9464") {
			t.Errorf("env %q lacks TQSCAVENGER_LISTEN=:9464", cfg.Env)
		}
		if _, ok := cfg.ExposedPorts["9464/tcp"]; !ok {
			t.Errorf("exposed ports %v lack 9464/tcp", cfg.ExposedPorts)
		}
		if strings.Join(cfg.Entrypoint, " ") != "/usr/local/bin/tqscavenger" || strings.Join(cfg.Cmd, " ") != "serve" {
			t.Errorf("entrypoint %q, cmd %q; want tqscavenger serve", cfg.Entrypoint, cfg.Cmd)
		}
		if v := cfg.Labels["org.opencontainers.image.version"]; v != r.version {
			t.Errorf("label org.opencontainers.image.version %q, want %q", v, r.version)
		}
	})

	// The non-root user writes in /tmp: demo creates its SQLite file
	// there and runs a pass on it.
	t.Run("tmp", func(t *testing.T) {
		out, err := container(t, podman, 2*time.Minute, []string{"--rm"}, r.image, "demo", "--db", "/tmp/demo.db")
		if err != nil || !strings.Contains(out, "Every expired task is gone") {
			t.Fatalf("demo --db /tmp/demo.db: %v\n%s", err, out)
		}
	})

	t.Run("serve", func(t *testing.T) {
		// The port must be free: a stale server there would answer for
		// the image.
		ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(servePort))
		if err != nil {
			t.Fatalf("port %d is taken: %v", servePort, err)
		}
		ln.Close()
		dir, _ := seedDir(t, r.bin)
		// No --listen: the image's environment makes serve listen on
		// every interface.
		out, err := container(t, podman, time.Minute,
			[]string{"-d", "-p", fmt.Sprintf("127.0.0.1:%d:9464", servePort), "-v", dir + ":/data"},
			r.image, "serve", "--db", "/data/tq.db", "--run-at-start")
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		id := strings.TrimSpace(out)
		logs := func() string {
			// serve logs to its standard error, which podman logs keeps.
			b, _ := exec.Command(podman, "logs", id).CombinedOutput()
			return string(b)
		}
		base := fmt.Sprintf("http://127.0.0.1:%d", servePort)
		get := func(path string) (int, string) {
			resp, err := http.Get(base + path)
			if err != nil {
				return 0, err.Error()
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			return resp.StatusCode, string(b)
		}
		deadline := time.Now().Add(time.Minute)
		for {
			code, body := get("/healthz")
			if code == http.StatusOK {
				t.Logf("GET /healthz: %d %s", code, strings.TrimSpace(body))
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("GET %s/healthz: %d %s after a minute; logs:\n%s", base, code, body, logs())
			}
			time.Sleep(250 * time.Millisecond)
		}
		// The pass at start deletes the 50 expired tasks; /metrics shows
		// the build and, once the pass is done, its deletes.
		buildInfo := regexp.MustCompile(`(?m)^tqscavenger_build_info\{[^}]*version="v` + regexp.QuoteMeta(r.version) + `"[^}]*\} 1$`)
		deleted := regexp.MustCompile(`(?m)^tqscavenger_tasks_deleted_total(\{[^}]*\})? 50$`)
		for {
			code, body := get("/metrics")
			if code == http.StatusOK && buildInfo.MatchString(body) && deleted.MatchString(body) {
				t.Logf("GET /metrics: %s; %s", buildInfo.FindString(body), deleted.FindString(body))
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("GET %s/metrics: %d, want %s and %s:\n%s\nlogs:\n%s", base, code, buildInfo, deleted, body, logs())
			}
			time.Sleep(250 * time.Millisecond)
		}
		if code, body := get("/"); code != http.StatusOK || !strings.Contains(body, "tqscavenger") {
			t.Errorf("GET /: %d, want 200 and the status page", code)
		}

		// Not root: the process's user ids, as the host's /proc sees them
		// (scratch has no id command to ask inside).
		pid := strings.TrimSpace(cmd(t, time.Minute, podman, "inspect", "--format", "{{.State.Pid}}", id))
		status, err := os.ReadFile("/proc/" + pid + "/status")
		if err != nil {
			t.Fatal(err)
		}
		uid := regexp.MustCompile(`(?m)^Uid:\s+(.*)$`).FindStringSubmatch(string(status))
		gid := regexp.MustCompile(`(?m)^Gid:\s+(.*)$`).FindStringSubmatch(string(status))
		if uid == nil || gid == nil {
			t.Fatalf("/proc/%s/status has no Uid or Gid line", pid)
		}
		t.Logf("pid %s (host): Uid %s, Gid %s", pid, uid[1], gid[1])
		for _, ids := range []string{uid[1], gid[1]} {
			for _, id := range strings.Fields(ids) {
				if id != "65532" {
					t.Errorf("serve runs with ids %q, want 65532 (nonroot) for each", ids)
					break
				}
			}
		}
	})

	t.Run("run sqlite", func(t *testing.T) {
		dir, _ := seedDir(t, r.bin)
		out, err := container(t, podman, 2*time.Minute, []string{"--rm", "-v", dir + ":/data"},
			r.image, "run", "--db", "/data/tq.db", "-o", "json")
		checkPass(t, out, err, 50)
	})

	t.Run("run postgres", func(t *testing.T) {
		base := os.Getenv("TQS_TEST_POSTGRES")
		if base == "" {
			if os.Getenv("CI") == "true" {
				t.Fatal("TQS_TEST_POSTGRES is not set")
			}
			t.Skip("TQS_TEST_POSTGRES is not set (e.g. postgres://postgres@127.0.0.1:5432/test?sslmode=disable); skipped")
		}
		// A schema of the test's own, made and dropped with psql.
		schema := fmt.Sprintf("tqs_imagetest_%d", os.Getpid())
		cmd(t, time.Minute, "psql", base, "-qc", "CREATE SCHEMA "+schema)
		t.Cleanup(func() { tryCmd(time.Minute, "psql", base, "-qc", "DROP SCHEMA "+schema+" CASCADE") })
		u, err := url.Parse(base)
		if err != nil {
			t.Fatal(err)
		}
		q := u.Query()
		q.Set("search_path", schema)
		u.RawQuery = q.Encode()
		dsn := u.String()
		cmd(t, time.Minute, r.bin, "seed", "--db", dsn, "--queues", "10", "--tasks", "10")
		// The host's network: the server listens on the host's loopback,
		// which a container on podman's bridge does not reach.
		out, err := container(t, podman, 2*time.Minute, []string{"--rm", "--network", "host", "-e", "TQSCAVENGER_DB=" + dsn},
			r.image, "run", "-o", "json")
		checkPass(t, out, err, 50)
	})
}

// checkPass checks run -o json's output: a completed pass that deleted
// want tasks.
func checkPass(t *testing.T, out string, err error, want int) {
	t.Helper()
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
	var res passResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("run -o json: %v\n%s", err, out)
	}
	t.Logf("run: outcome %s, %d tasks deleted", res.Outcome, res.TasksDeleted)
	if res.Outcome != "completed" || res.TasksDeleted != want || res.DryRun {
		t.Errorf("run: outcome %q, %d tasks deleted (dry run %v); want completed, %d", res.Outcome, res.TasksDeleted, res.DryRun, want)
	}
}
