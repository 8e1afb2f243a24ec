package docscheck

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestLinks: every relative link and #anchor in README.md and docs/*.md
// resolves.
func TestLinks(t *testing.T) {
	root := moduleRoot(t)
	files := []string{filepath.Join(root, "README.md")}
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, docs...)
	if len(docs) == 0 {
		t.Fatalf("no docs/*.md under %s", root)
	}
	c := newChecker(root)
	n := 0
	for _, f := range files {
		links, problems, err := c.check(f)
		if err != nil {
			t.Fatal(err)
		}
		n += links
		for _, p := range problems {
			t.Error(p)
		}
	}
	if n == 0 {
		t.Fatal("no relative link found: the parser is broken")
	}
	t.Logf("%d files, %d relative links checked", len(files), n)
}

// moduleRoot is the directory of the main module's go.mod, above the
// test's working directory.
func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && bytes.HasPrefix(bytes.TrimSpace(b), []byte("module github.com/tqscavenger/tqscavenger\n")) {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("the main module's go.mod not found above the working directory")
		}
		dir = parent
	}
}
