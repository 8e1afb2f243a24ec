// Command tqslab is tqscavenger's lab: it seeds databases and measures
// builds of tqscavenger on them, given by path (--binary), side by side.
// It lives in a module of its own so that the operator's binary carries
// none of it. Run `tqslab help`; docs/benchmarks.md says how to run it.
package main

import (
	"os"

	"github.com/tqscavenger/tqscavenger/lab/internal/command"
)

func main() { os.Exit(command.Main(os.Args[1:], os.Stdout, os.Stderr)) }
