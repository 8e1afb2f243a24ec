package store

import (
	"fmt"
	"slices"
	"strings"
)

// SchemaInfo is what a schema check found.
type SchemaInfo struct {
	// Engine names the database engine: "sqlite", "postgres" or "mysql".
	Engine string
	// Version is Temporal's schema_version.curr_version, "" where the
	// table does not exist (SQLite dev server, or tables made by a store's
	// own setup).
	Version string
	// Tables lists the task table versions present with the right columns.
	Tables []Table
	// Problems lists what is wrong, one line each; empty when usable.
	Problems []string
}

// String formats the result for the schema check command.
func (i SchemaInfo) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "engine: %s\n", i.Engine)
	if i.Version != "" {
		fmt.Fprintf(&b, "temporal schema version: %s\n", i.Version)
	} else {
		b.WriteString("temporal schema version: none recorded (tables checked directly)\n")
	}
	for _, t := range []Table{V1, V2} {
		state := "absent"
		if slices.Contains(i.Tables, t) {
			state = "present"
		}
		fmt.Fprintf(&b, "%s task tables: %s\n", t, state)
	}
	for _, p := range i.Problems {
		fmt.Fprintf(&b, "problem: %s\n", p)
	}
	return b.String()
}
