// Command temporal-server is the interop suite's Temporal: go.temporal.io/server
// with its SQL plugins, all services in one process, and Temporal's SQL schema
// tool in the same binary.
//
//	temporal-server start CONFIG.yaml   runs frontend, history, matching and worker until SIGTERM/SIGINT
//	temporal-server sql-tool ARGS...    is Temporal's temporal-sql-tool (setup-schema, update-schema, ...)
package main

import (
	"fmt"
	"os"

	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/log"
	_ "go.temporal.io/server/common/persistence/sql/sqlplugin/mysql"
	_ "go.temporal.io/server/common/persistence/sql/sqlplugin/postgresql"
	_ "go.temporal.io/server/common/persistence/sql/sqlplugin/sqlite"
	"go.temporal.io/server/temporal"
	sqltool "go.temporal.io/server/tools/sql"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: temporal-server start CONFIG.yaml | sql-tool ARGS...")
		os.Exit(2)
	}
	switch os.Args[1] {
	case "start":
		if len(os.Args) != 3 {
			fmt.Fprintln(os.Stderr, "usage: temporal-server start CONFIG.yaml")
			os.Exit(2)
		}
		if err := start(os.Args[2]); err != nil {
			fmt.Fprintln(os.Stderr, "temporal-server:", err)
			os.Exit(1)
		}
	case "sql-tool":
		args := append([]string{"temporal-sql-tool"}, os.Args[2:]...)
		if err := sqltool.RunTool(args); err != nil {
			os.Exit(1)
		}
	default:
		fmt.Fprintf(os.Stderr, "temporal-server: unknown command %q\n", os.Args[1])
		os.Exit(2)
	}
}

func start(file string) error {
	cfg, err := config.Load(config.WithConfigFile(file))
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	logger := log.NewZapLogger(log.BuildZapLogger(cfg.Log))
	s, err := temporal.NewServer(
		temporal.ForServices(temporal.DefaultServices),
		temporal.WithConfig(cfg),
		temporal.WithLogger(logger),
		temporal.InterruptOn(temporal.InterruptCh()),
	)
	if err != nil {
		return fmt.Errorf("new server: %w", err)
	}
	// Start blocks until the interrupt channel fires, then stops the services.
	return s.Start()
}
