// Command stamp prints buildinfo.Read, for TestLinkerFlags: built with the
// release's -X flags, it shows what `tqscavenger version` would print.
package main

import (
	"fmt"

	"github.com/tqscavenger/tqscavenger/internal/buildinfo"
)

func main() { fmt.Println(buildinfo.Read()) }
