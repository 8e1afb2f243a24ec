package command

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/tqscavenger/tqscavenger/lab/bench"
)

// mainModule is the module path of the product, whose cmd/tqscavenger
// the lab builds when no --binary is given.
const mainModule = "github.com/tqscavenger/tqscavenger"

// labelForm is a binary's label in LABEL=PATH.
var labelForm = regexp.MustCompile(`^[A-Za-z0-9._-]+$`)

// binariesUnderTest turns the --binary values into the binaries the
// benchmark runs: absolute paths, each an executable file, labelled
// (LABEL=PATH, else the file's name) when there are several. With none,
// it builds cmd/tqscavenger of the main module found at source (or from
// the working directory upwards) into a temporary directory, which
// cleanup removes.
func binariesUnderTest(ctx context.Context, specs []string, source string, log io.Writer) (bins []bench.Binary, cleanup func(), err error) {
	cleanup = func() {}
	if len(specs) == 0 {
		path, dir, err := buildDefault(ctx, source, log)
		if err != nil {
			return nil, cleanup, err
		}
		return []bench.Binary{{Path: path}}, func() { os.RemoveAll(dir) }, nil
	}
	seen := map[string]bool{}
	for _, s := range specs {
		label, path := "", s
		if l, p, ok := strings.Cut(s, "="); ok && labelForm.MatchString(l) {
			label, path = l, p
		}
		if path == "" {
			return nil, cleanup, usagef("--binary %q: no path", s)
		}
		abs, err := filepath.Abs(path)
		if err != nil {
			return nil, cleanup, usagef("--binary %q: %v", s, err)
		}
		fi, err := os.Stat(abs)
		switch {
		case err != nil:
			return nil, cleanup, usagef("--binary %q: %v", s, err)
		case !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0:
			return nil, cleanup, usagef("--binary %q: not an executable file", s)
		}
		if label == "" && len(specs) > 1 {
			label = filepath.Base(abs)
		}
		if len(specs) > 1 && seen[label] {
			return nil, cleanup, usagef("--binary: two binaries labelled %q: name them, as LABEL=PATH", label)
		}
		seen[label] = true
		bins = append(bins, bench.Binary{Label: label, Path: abs})
	}
	return bins, cleanup, nil
}

// buildDefault builds the main module's cmd/tqscavenger into a new
// temporary directory and returns the binary and the directory.
func buildDefault(ctx context.Context, source string, log io.Writer) (path, dir string, err error) {
	if source == "" {
		wd, err := os.Getwd()
		if err != nil {
			return "", "", err
		}
		if source, err = findMainModule(wd); err != nil {
			return "", "", usageError{err}
		}
	}
	dir, err = os.MkdirTemp("", "tqslab-bin-")
	if err != nil {
		return "", "", err
	}
	path = filepath.Join(dir, "tqscavenger")
	if log != nil {
		fmt.Fprintf(log, "tqslab: building %s/cmd/tqscavenger from %s\n", mainModule, source)
	}
	start := time.Now()
	cmd := exec.CommandContext(ctx, "go", "build", "-o", path, "./cmd/tqscavenger")
	cmd.Dir = source
	// The main module's own go.mod and go.sum, not a workspace's.
	cmd.Env = append(os.Environ(), "GOWORK=off")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		os.RemoveAll(dir)
		return "", "", fmt.Errorf("build the binary under test in %s: %w: %s", source, err, strings.TrimSpace(out.String()))
	}
	if log != nil {
		fmt.Fprintf(log, "tqslab: built in %s\n", time.Since(start).Round(100*time.Millisecond))
	}
	return path, dir, nil
}

// findMainModule returns the first directory from dir upwards whose
// go.mod declares the main module.
func findMainModule(dir string) (string, error) {
	for d := dir; ; d = filepath.Dir(d) {
		if b, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil && modulePath(b) == mainModule {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no %s module at or above %s: give --binary PATH or --source DIR", mainModule, dir)
		}
	}
}

// modulePath is the module path of a go.mod file.
func modulePath(gomod []byte) string {
	sc := bufio.NewScanner(bytes.NewReader(gomod))
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "module "); ok {
			return strings.Trim(strings.TrimSpace(rest), `"`)
		}
	}
	return ""
}

// writeBinaries names the binaries under test and what each says it is
// (its `version` line), above the tables.
func writeBinaries(w io.Writer, bins []bench.Binary, markdown bool) {
	bullet := "  "
	if markdown {
		bullet = "- "
	}
	fmt.Fprintln(w, "binaries under test:")
	for _, b := range bins {
		label := b.Label
		if label == "" {
			label = "(the only one)"
		}
		fmt.Fprintf(w, "%s%s: %s, %s\n", bullet, label, b.Path, versionOf(b.Path))
	}
	fmt.Fprintln(w)
}

// versionOf is the first line of `bin version`, or why there is none.
func versionOf(bin string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "version").Output()
	if err != nil {
		return "version unknown: " + err.Error()
	}
	line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	return line
}

// runFlagsOf returns the flags of bin's `run` that --live-extra may
// set: those its help lists under "What to delete" and "Pace and
// safety". They are read from the binary under test, so a build's new
// flags can be measured without changing the lab: from `run --help-all`,
// which lists every flag (-h only the everyday ones), or, from a build
// older than it, `run --help`, which then listed every one.
func runFlagsOf(ctx context.Context, bin string) (map[string]bool, error) {
	out, err := exec.CommandContext(ctx, bin, "run", "--help-all").Output()
	if err != nil {
		out, err = exec.CommandContext(ctx, bin, "run", "--help").Output()
	}
	if err != nil {
		return nil, fmt.Errorf("read the flags of %s run --help: %w", bin, err)
	}
	allowed := parseRunHelp(string(out))
	if len(allowed) == 0 {
		return nil, errors.New(bin + " run --help lists no \"What to delete\" or \"Pace and safety\" flags")
	}
	return allowed, nil
}

// helpFlag matches a flag's line in help: "  -w, --workers INT  …".
var helpFlag = regexp.MustCompile(`^\s+(?:-\w, )?--([a-z0-9][a-z0-9-]*)`)

// parseRunHelp returns the flags in the "What to delete" and "Pace and
// safety" groups of `run --help-all`.
func parseRunHelp(help string) map[string]bool {
	allowed := map[string]bool{}
	in := false
	for _, line := range strings.Split(help, "\n") {
		if line != "" && !strings.HasPrefix(line, " ") {
			in = line == "What to delete:" || line == "Pace and safety:"
			continue
		}
		if m := helpFlag.FindStringSubmatch(line); in && m != nil {
			allowed[m[1]] = true
		}
	}
	return allowed
}

// passFlags splits a --live-extra value into flags and checks that each
// is one of allowed (run's "What to delete" or "Pace and safety" flags):
// the benchmark sets the connection and the output itself, and the value
// is printed in the table, where a DSN or password must never be.
func passFlags(s string, allowed map[string]bool) ([]string, error) {
	args := strings.Fields(s)
	if len(args) == 0 {
		return nil, fmt.Errorf("no flags")
	}
	for i, a := range args {
		name, ok := strings.CutPrefix(a, "--")
		if !ok {
			if i > 0 && strings.HasPrefix(args[i-1], "--") && !strings.Contains(args[i-1], "=") {
				continue // the value of the flag before
			}
			return nil, fmt.Errorf("%q is not a flag (write --name or --name=value)", a)
		}
		name, _, _ = strings.Cut(name, "=")
		if !allowed[name] {
			return nil, fmt.Errorf("--%s: only the flags of \"What to delete\" and \"Pace and safety\" (see run --help-all)", name)
		}
	}
	return args, nil
}
