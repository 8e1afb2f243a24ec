package image

// Tests of the release's configuration, which need no container engine:
// the version in its three places, the release script's own check, and
// the Dockerfile against the Containerfile that is built and tested here.

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// root is the repository's top, from this package's directory.
const root = "../.."

// readVersion returns the file VERSION's version: what the release stamps
// (as vVERSION) and tags its image with.
func readVersion(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "VERSION"))
	if err != nil {
		t.Fatal(err)
	}
	v := strings.TrimSpace(string(b))
	if !regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$`).MatchString(v) {
		t.Fatalf("VERSION holds %q, not a version such as 1.2.3", v)
	}
	return v
}

// yamlScalar returns the value of the first line of a YAML file that
// matches key (a regular expression for the key and its indentation),
// unquoted, and whether there was one. The chart's files are read line by
// line so that this module needs no YAML package.
func yamlScalar(t *testing.T, file, key string) (string, bool) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^` + key + `:[ \t]*("([^"]*)"|([^ \t#\r\n]*))`).FindSubmatch(b)
	if m == nil {
		return "", false
	}
	return string(m[2]) + string(m[3]), true
}

// TestChartVersion: the chart's default image tag (values.yaml's image.tag,
// else Chart.yaml's appVersion) is the version the release stamps and
// tags its image with, so that a chart installed with only
// image.repository set runs the release it came with.
func TestChartVersion(t *testing.T) {
	version := readVersion(t)
	chart := filepath.Join(root, "deploy/helm/tqscavenger")
	app, ok := yamlScalar(t, filepath.Join(chart, "Chart.yaml"), "appVersion")
	if !ok {
		t.Fatal("Chart.yaml has no appVersion")
	}
	if app != version {
		t.Errorf("Chart.yaml: appVersion %q, VERSION %q: the chart's default image tag must be the release's", app, version)
	}
	b, err := os.ReadFile(filepath.Join(chart, "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	// image.tag: the indented tag: key after the top-level image: key.
	_, rest, ok := strings.Cut(string(b), "\nimage:\n")
	if !ok {
		t.Fatal("values.yaml has no top-level image: key")
	}
	m := regexp.MustCompile(`(?m)^  tag:[ \t]*("([^"]*)"|([^ \t#\r\n]*))`).FindStringSubmatch(rest)
	if m == nil {
		t.Fatal("values.yaml has no image.tag")
	}
	if tag := m[2] + m[3]; tag != "" && tag != version {
		t.Errorf("values.yaml: image.tag %q, VERSION %q", tag, version)
	}
}

// TestReleaseCheck runs the release script's own check of its
// configuration, as .ci/run does, and a refusal of a VERSION that the
// chart does not name, on a copy of the files it reads.
func TestReleaseCheck(t *testing.T) {
	out, err := exec.Command(filepath.Join(root, "scripts/release"), "--check", "--no-image").CombinedOutput()
	if err != nil {
		t.Fatalf("scripts/release --check: %v\n%s", err, out)
	}
	if want := "release v" + readVersion(t) + ": configuration ok"; !strings.Contains(string(out), want) {
		t.Errorf("scripts/release --check printed %q, want %q", out, want)
	}

	dir := t.TempDir()
	for _, f := range []string{"scripts/release", "VERSION", "deploy/helm/tqscavenger/Chart.yaml", "deploy/helm/tqscavenger/values.yaml"} {
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		if f == "VERSION" {
			b = []byte("9.9.9\n")
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	out, err = exec.Command(filepath.Join(dir, "scripts/release"), "--check", "--no-image").CombinedOutput()
	if err == nil || !strings.Contains(string(out), `appVersion is "`) {
		t.Errorf("scripts/release --check with VERSION 9.9.9: %v, %q; want a failure naming appVersion", err, out)
	}
}

// instructions returns a Dockerfile's instructions of the final stage
// that set how the image runs, one line each, keyed by instruction.
func instructions(t *testing.T, file string) map[string][]string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.ReplaceAll(string(b), "\\\n", " ")
	lines := strings.Split(text, "\n")
	// The final stage: from the last FROM on.
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.HasPrefix(lines[i], "FROM ") {
			lines = lines[i:]
			break
		}
	}
	out := map[string][]string{}
	for _, l := range lines {
		word, rest, _ := strings.Cut(strings.TrimSpace(l), " ")
		switch word {
		case "ENV", "USER", "EXPOSE", "ENTRYPOINT", "CMD":
			out[word] = append(out[word], strings.Join(strings.Fields(rest), " "))
		}
	}
	return out
}

// TestDockerfile: the Dockerfile, built by those who can pull golang and
// distroless images and never here, runs as the image tested here does
// (the same ENV, USER, EXPOSE, ENTRYPOINT and CMD), stamps VERSION, and
// listens on every interface by its environment, so that `docker run -p
// 9464:9464 IMAGE serve --db …` shows the status page.
func TestDockerfile(t *testing.T) {
	docker := instructions(t, filepath.Join(root, "Dockerfile"))
	scratch := instructions(t, "Containerfile")
	for _, k := range []string{"ENV", "USER", "EXPOSE", "ENTRYPOINT", "CMD"} {
		if !slices.Equal(docker[k], scratch[k]) {
			t.Errorf("%s: Dockerfile %q, deploy/image/Containerfile %q", k, docker[k], scratch[k])
		}
	}
	if want := []string{"TQSCAVENGER_LISTEN=:9464"}; !slices.Equal(scratch["ENV"], want) {
		t.Errorf("ENV %q, want %q", scratch["ENV"], want)
	}
	if want := []string{"65532:65532"}; !slices.Equal(scratch["USER"], want) {
		t.Errorf("USER %q, want %q", scratch["USER"], want)
	}
	b, err := os.ReadFile(filepath.Join(root, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"VERSION", "internal/buildinfo", ".version=", ".revision="} {
		if !strings.Contains(string(b), want) {
			t.Errorf("the Dockerfile does not stamp the version: no %q", want)
		}
	}
}

// TestDockerignore: the Dockerfile's build context leaves out the
// repository's history, local builds, databases and the modules the
// binary does not need.
func TestDockerignore(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root, ".dockerignore"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Fields(string(b))
	for _, want := range []string{".git", "dist", "/tqscavenger", "**/*.db", "**/testdata", "interop", "lab"} {
		if !slices.Contains(lines, want) {
			t.Errorf(".dockerignore lacks %q", want)
		}
	}
}
