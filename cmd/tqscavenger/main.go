// Command tqscavenger scavenges Temporal's SQL task queues: it deletes
// expired tasks and idle, empty task queues. Run "tqscavenger help" for
// the commands.
package main

import (
	"os"

	"github.com/tqscavenger/tqscavenger/internal/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:], os.Stdout, os.Stderr))
}
