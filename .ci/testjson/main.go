// Command testjson reads `go test -json` on its standard input and prints
// what `go test` would print without -json for a CI log: each package's
// result line, and the whole output of every failed test and package.
// It writes every test's result, one "pass|skip|fail package test
// seconds" line each, to the file named by its argument, and ends with
// the counts, the skipped tests' names, so that a test that stopped
// running shows in the log that stopped it, and the ten slowest top-level
// tests, so that a suite over its budget shows where its time went. It
// exits 1 if a test or package failed.
//
//	go test -json ./... | go run ./.ci/testjson results.txt
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

type event struct {
	Action  string
	Package string
	Test    string
	Output  string
	Elapsed float64
}

// timed is a top-level test and how long it took.
type timed struct {
	name string
	secs float64
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: go test -json ./... | testjson results.txt")
		os.Exit(2)
	}
	os.Exit(run(os.Stdin, os.Stdout, os.Args[1]))
}

func run(in io.Reader, out io.Writer, resultsPath string) int {
	results, err := os.Create(resultsPath)
	if err != nil {
		fmt.Fprintln(out, "testjson:", err)
		return 1
	}
	defer results.Close()
	// output holds each running test's (and package's) lines until its
	// result says whether the log needs them.
	output := map[string][]string{}
	counts := map[string]int{}
	var skipped []string
	var slowest []timed
	failed := false
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if err := json.Unmarshal(line, &e); err != nil {
			// Not an event: a build error or the go command's own
			// output. Print it as it is.
			fmt.Fprintln(out, string(line))
			continue
		}
		key := e.Package + " " + e.Test
		switch e.Action {
		case "output":
			output[key] = append(output[key], e.Output)
		case "build-output":
			// A package that does not compile: the compiler's lines,
			// as they come (the package's fail event follows).
			fmt.Fprint(out, e.Output)
		case "pass", "skip", "fail":
			if e.Test == "" {
				// The package's result: its last line is go test's own.
				lines := output[key]
				if e.Action == "fail" {
					failed = true
					fmt.Fprint(out, strings.Join(lines, ""))
				} else if len(lines) > 0 {
					fmt.Fprint(out, lines[len(lines)-1])
				}
			} else {
				fmt.Fprintf(results, "%s %s %s %.2f\n", e.Action, e.Package, e.Test, e.Elapsed)
				counts[e.Action]++
				if !strings.Contains(e.Test, "/") {
					slowest = append(slowest, timed{e.Package + " " + e.Test, e.Elapsed})
				}
				switch e.Action {
				case "fail":
					failed = true
					fmt.Fprint(out, strings.Join(output[key], ""))
				case "skip":
					skipped = append(skipped, e.Package+" "+e.Test)
				}
			}
			delete(output, key)
		}
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintln(out, "testjson: reading go test's output:", err)
		failed = true
	}
	fmt.Fprintf(out, "tests: %d passed, %d skipped, %d failed (each listed in %s)\n", counts["pass"], counts["skip"], counts["fail"], resultsPath)
	sort.Strings(skipped)
	for _, s := range skipped {
		fmt.Fprintln(out, "  skipped:", s)
	}
	sort.Slice(slowest, func(i, j int) bool { return slowest[i].secs > slowest[j].secs })
	fmt.Fprintln(out, "the slowest tests:")
	for _, t := range slowest[:min(10, len(slowest))] {
		fmt.Fprintf(out, "  %7.1fs %s\n", t.secs, t.name)
	}
	if failed {
		return 1
	}
	return 0
}
