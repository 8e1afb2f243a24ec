package docscheck

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSlug(t *testing.T) {
	for _, tc := range []struct{ heading, want string }{
		{"Outcomes and exit statuses", "outcomes-and-exit-statuses"},
		{"Turn Temporal's scanner off", "turn-temporals-scanner-off"},
		{"Live load: what a pass costs matching's own statements", "live-load-what-a-pass-costs-matchings-own-statements"},
		{"Results (1 December 2026, the shared 2-core machine, load average 10–25)", "results-1-december-2026-the-shared-2-core-machine-load-average-1025"},
		{"One pass: `run`", "one-pass-run"},
		{"The daemon: `serve`", "the-daemon-serve"},
		{"Exit 4 and 5", "exit-4-and-5"},
		{"What `bench` does — and why", "what-bench-does--and-why"},
		{"See [the lock](scale.md#the-lock)", "see-the-lock"},
		{"task_queues_v2 and **bold**", "task_queues_v2-and-bold"},
		{"Ünïcode Ärger", "ünïcode-ärger"},
		{"A <code>tag</code>", "a-tag"},
	} {
		if got := slug(tc.heading); got != tc.want {
			t.Errorf("slug(%q) = %q, want %q", tc.heading, got, tc.want)
		}
	}
}

func TestAnchors(t *testing.T) {
	got := anchors(strings.Split(strings.Join([]string{
		"# Title",
		"## Usage",
		"## Usage",
		"### Usage ###",
		"```sh",
		"# a shell comment, not a heading",
		"```",
		"~~~",
		"## Not a heading either",
		"~~~",
		"#hashtag is not a heading",
		`<a name="custom"></a>`,
		"    #",
	}, "\n"), "\n"))
	want := []string{"custom", "title", "usage", "usage-1", "usage-2"}
	if keys := sortedKeys(got); strings.Join(keys, " ") != strings.Join(want, " ") {
		t.Errorf("anchors %v, want %v", keys, want)
	}
}

// TestCheckFindsBrokenLinks: the checker reports each kind of broken link
// and nothing else, on a tree of its own.
func TestCheckFindsBrokenLinks(t *testing.T) {
	root := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("docs/a.md", "# A\n\n## Exit statuses\n\n## Exit statuses\n")
	write("deploy/unit.service", "[Unit]\n")
	write("README.md", strings.Join([]string{
		"# Readme",
		"[ok](docs/a.md) [ok](docs/a.md#exit-statuses) [ok](docs/a.md#exit-statuses-1) [ok](#readme)",
		"[ok dir](deploy/) [ok file](deploy/unit.service) ![ok](docs/a.md \"title\")",
		"[ok external](https://example.com/x#y) [ok mail](mailto:a@b.c)",
		"`[not a link](missing.md)`",
		"```",
		"[not a link](missing.md)",
		"```",
		"[missing file](docs/b.md)",
		"[missing anchor](docs/a.md#exit-status)",
		"[missing own anchor](#nope)",
		"[outside](../elsewhere.md)",
		"[anchor into a file that is not Markdown](deploy/unit.service#x)",
		"[ref]: docs/c.md",
	}, "\n"))
	links, problems, err := newChecker(root).check(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`README.md:9: link "docs/b.md": no such file`,
		`README.md:10: link "docs/a.md#exit-status": no heading makes the anchor #exit-status (there are: a, exit-statuses, exit-statuses-1)`,
		`README.md:11: link "#nope": no heading makes the anchor #nope (there are: readme)`,
		`README.md:12: link "../elsewhere.md": points outside the repository`,
		`README.md:13: link "deploy/unit.service#x": an #anchor into a file that is not Markdown`,
		`README.md:14: link "docs/c.md": no such file`,
	}
	if strings.Join(problems, "\n") != strings.Join(want, "\n") {
		t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(problems, "\n"), strings.Join(want, "\n"))
	}
	if links != 13 {
		t.Errorf("%d relative links, want 13", links)
	}
}
