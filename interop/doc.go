// Package interop is tqscavenger's proof beside a live Temporal: a real
// Temporal server (go.temporal.io/server v1.32.1, all services in one
// process, started from ./cmd/temporal-server) on PostgreSQL, MariaDB or
// SQLite, real SDK workers (go.temporal.io/sdk v1.50.0) running a workload
// with known outcomes, and tqscavenger scavenging the same database.
//
// It is a module of its own so that Temporal's dependencies never constrain
// the main module. The suite is interop_test.go; README.md says how to run it
// and what it proves.
package interop
