// Command testservers says whether the tests ran against PostgreSQL and
// MariaDB. Their tests skip unless TQS_TEST_POSTGRES and TQS_TEST_MYSQL
// name a server, and go test ./... prints nothing of a package that
// passed, skipped tests or not: the README's test command runs this after
// the tests, so that a run on SQLite alone says so.
//
//	go test ./... && go run ./internal/testservers
package main

import (
	"fmt"
	"io"
	"os"

	"github.com/tqscavenger/tqscavenger/internal/redact"
	"github.com/tqscavenger/tqscavenger/internal/testdb"
	"github.com/tqscavenger/tqscavenger/sqlstore"
)

func main() {
	report(os.Stdout, os.Getenv)
}

// report writes, for each server engine, whether its tests ran (their
// variable names a server, shown with its password masked) or skipped,
// and what to set.
func report(w io.Writer, getenv func(string) string) {
	for _, e := range []struct {
		name   string
		engine sqlstore.Engine
	}{{"PostgreSQL", sqlstore.Postgres}, {"MariaDB/MySQL", sqlstore.MySQL}} {
		v := testdb.EnvVar(e.engine)
		if dsn := getenv(v); dsn != "" {
			fmt.Fprintf(w, "%s tests: ran against %s (%s)\n", e.name, redact.URL(dsn), v)
			continue
		}
		fmt.Fprintf(w, "%s tests: SKIPPED: %s is not set (e.g. %s=%s)\n", e.name, v, v, testdb.Example(e.engine))
	}
}
