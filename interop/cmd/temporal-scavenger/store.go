package main

// This file owns the database side: turning the command line's database
// into Temporal's own SQL configuration, and building from it the
// persistence.TaskManager that Temporal's worker service hands its
// scanner, through Temporal's persistence factories.

import (
	"context"
	"database/sql"
	"fmt"
	"maps"
	"os"
	"strings"

	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/dynamicconfig"
	"go.temporal.io/server/common/headers"
	"go.temporal.io/server/common/metrics"
	p "go.temporal.io/server/common/persistence"
	pclient "go.temporal.io/server/common/persistence/client"
	"go.temporal.io/server/common/persistence/serialization"
	psql "go.temporal.io/server/common/persistence/sql"
	_ "go.temporal.io/server/common/persistence/sql/sqlplugin/mysql"
	_ "go.temporal.io/server/common/persistence/sql/sqlplugin/postgresql"
	_ "go.temporal.io/server/common/persistence/sql/sqlplugin/sqlite"
	"go.temporal.io/server/common/resolver"

	"github.com/tqscavenger/tqscavenger/sqlstore"
)

// Temporal's defaults for the worker service's persistence rate limits
// (dynamic config, go.temporal.io/server v1.32.1 common/dynamicconfig):
// every call of the worker's TaskManager, the scanner's included, passes
// a rate limiter of worker.persistenceMaxQPS per host.
const (
	defaultPersistenceMaxQPS = 500 // worker.persistenceMaxQPS
	defaultOperatorRPSRatio  = 0.2 // system.operatorRPSRatio
	defaultBurstRatio        = 1.0 // system.persistenceQPSBurstRatio
)

// storeConfig is what the command line says of the database.
type storeConfig struct {
	dsn sqlstore.DSN
	// plugin is Temporal's SQL plugin name: sqlite, postgres12,
	// postgres12_pgx or mysql8.
	plugin string
	// attrs are extra connectAttributes, on top of the DSN's query
	// parameters (PostgreSQL, MySQL) or the SQLite defaults.
	attrs              map[string]string
	maxConns           int
	taskScanPartitions int
	persistenceMaxQPS  int
}

// sqlConfig is Temporal's config.SQL for c, validated (and defaulted) by
// Temporal's own DataStore.Validate.
func (c storeConfig) sqlConfig() (*config.SQL, error) {
	s := &config.SQL{
		PluginName:         c.plugin,
		ConnectProtocol:    "tcp",
		ConnectAttributes:  map[string]string{},
		MaxConns:           c.maxConns,
		MaxIdleConns:       c.maxConns,
		TaskScanPartitions: c.taskScanPartitions,
	}
	switch c.dsn.Engine {
	case sqlstore.SQLite:
		s.DatabaseName = c.dsn.Path
		s.ConnectAddr = "localhost"
		// rw, not rwc: a mistyped path must not become a new, empty
		// database that the pass then finds nothing in.
		s.ConnectAttributes["mode"] = "rw"
		s.ConnectAttributes["cache"] = "private"
	default:
		u := c.dsn.URL
		s.DatabaseName = strings.TrimPrefix(u.Path, "/")
		s.ConnectAddr = u.Host
		if u.Port() == "" {
			port := "5432"
			if c.dsn.Engine == sqlstore.MySQL {
				port = "3306"
			}
			s.ConnectAddr = u.Host + ":" + port
		}
		s.User = u.User.Username()
		s.Password, _ = u.User.Password()
		for k, vs := range u.Query() {
			if len(vs) > 0 {
				s.ConnectAttributes[k] = vs[len(vs)-1]
			}
		}
	}
	maps.Copy(s.ConnectAttributes, c.attrs)
	ds := config.DataStore{SQL: s}
	if err := ds.Validate(); err != nil {
		return nil, fmt.Errorf("temporal's SQL configuration: %w", err)
	}
	return ds.SQL, nil
}

// defaultPlugin is the Temporal SQL plugin of an engine, as Temporal's
// sample configurations name them.
func defaultPlugin(e sqlstore.Engine) string {
	switch e {
	case sqlstore.Postgres:
		return "postgres12"
	case sqlstore.MySQL:
		return "mysql8"
	}
	return "sqlite"
}

// taskStore is the TaskManager the scavenger runs on and what must be
// closed after it.
type taskStore struct {
	tm      p.TaskManager
	factory pclient.Factory
	// attrs are the connectAttributes in use (Temporal's SQL plugins
	// add their own defaults on top).
	attrs map[string]string
}

// Close closes the TaskManager and the connection pool under it.
func (s *taskStore) Close() {
	s.tm.Close()
	s.factory.Close()
}

// openTaskStore builds the worker service's persistence.TaskManager as
// Temporal wires it (persistence/client's FactoryProvider over the SQL
// data store factory: a rate limiter of persistenceMaxQPS, metrics, and
// retries of transient errors) and checks that it can list queues.
func openTaskStore(ctx context.Context, c storeConfig, logger *lineLogger) (*taskStore, error) {
	if c.dsn.Engine == sqlstore.SQLite {
		if _, err := os.Stat(c.dsn.Path); err != nil && c.attrs["mode"] != "rwc" {
			return nil, fmt.Errorf("SQLite database %s: %w", c.dsn.Path, err)
		}
	}
	return buildTaskStore(ctx, c, logger)
}

// withMariaDBIsolation returns c with tx_isolation=READ-COMMITTED among
// its connect attributes if the server of db is a MariaDB before 11.1,
// which knows the isolation variable Temporal's mysql8 plugin sets
// (transaction_isolation) only by its legacy name, and the command line
// set neither: the plugin would fail to connect (the interop suite's
// Temporal sets tx_isolation for MariaDB the same way). A server that
// cannot be asked is left to Temporal's plugin to report.
func withMariaDBIsolation(ctx context.Context, db *sql.DB, c storeConfig) storeConfig {
	if c.dsn.Engine != sqlstore.MySQL || hasIsolation(c.attrs) || hasIsolation(queryAttrs(c)) {
		return c
	}
	var level string
	err := db.QueryRowContext(ctx, "SELECT @@transaction_isolation").Scan(&level)
	if err == nil || !strings.Contains(err.Error(), "Unknown system variable") {
		return c
	}
	c.attrs = maps.Clone(c.attrs)
	if c.attrs == nil {
		c.attrs = map[string]string{}
	}
	c.attrs["tx_isolation"] = "READ-COMMITTED"
	return c
}

// logged is the first error Temporal's persistence logged, as the end of
// an error message: its SQL handle logs the driver's error and returns
// one that says only that no connection could be made.
func logged(l *lineLogger) string {
	if n, first := l.errorCount(); n > 0 {
		return " (Temporal logged: " + first + ")"
	}
	return ""
}

func hasIsolation(attrs map[string]string) bool {
	for k := range attrs {
		if k := strings.ToLower(k); k == "transaction_isolation" || k == "tx_isolation" {
			return true
		}
	}
	return false
}

func queryAttrs(c storeConfig) map[string]string {
	out := map[string]string{}
	if c.dsn.URL != nil {
		for k := range c.dsn.URL.Query() {
			out[k] = c.dsn.URL.Query().Get(k)
		}
	}
	return out
}

func buildTaskStore(ctx context.Context, c storeConfig, logger *lineLogger) (*taskStore, error) {
	sqlCfg, err := c.sqlConfig()
	if err != nil {
		return nil, err
	}
	persistenceCfg := &config.Persistence{
		DefaultStore:    "default",
		VisibilityStore: "default",
		DataStores:      map[string]config.DataStore{"default": {SQL: sqlCfg}},
	}
	serializer := serialization.NewSerializer()
	dataStores := psql.NewFactory(*sqlCfg, resolver.NewNoopResolver(), "active", logger, metrics.NoopMetricsHandler, serializer)
	maxQPS := c.persistenceMaxQPS
	factory := pclient.FactoryProvider(pclient.NewFactoryParams{
		DataStoreFactory:                   dataStores,
		Cfg:                                persistenceCfg,
		PersistenceMaxQPS:                  func() int { return maxQPS },
		PersistenceNamespaceMaxQPS:         func(string) int { return 0 },
		PersistencePerShardNamespaceMaxQPS: func(string) int { return 0 },
		OperatorRPSRatio:                   func() float64 { return defaultOperatorRPSRatio },
		PersistenceBurstRatio:              func() float64 { return defaultBurstRatio },
		ClusterName:                        "active",
		MetricsHandler:                     metrics.NoopMetricsHandler,
		Logger:                             logger,
		HealthSignals:                      p.NoopHealthSignalAggregator,
		DynamicRateLimitingParams: func() dynamicconfig.DynamicRateLimitingParams {
			return dynamicconfig.DefaultDynamicRateLimitingParams
		},
		EnableDataLossMetrics:                       func() bool { return false },
		EnableBestEffortDeleteTasksOnWorkflowUpdate: func() bool { return false },
		Serializer: serializer,
	})
	tm, err := factory.NewTaskManager()
	if err != nil {
		factory.Close()
		return nil, fmt.Errorf("open %s with Temporal's %s plugin: %w%s", c.dsn, c.plugin, err, logged(logger))
	}
	s := &taskStore{tm: tm, factory: factory, attrs: sqlCfg.ConnectAttributes}
	// One page of one queue, as the scavenger's first call asks: its own
	// calls retry every error for as long as it runs, so a database it
	// cannot read would hang the pass instead of failing it.
	probe := headers.SetCallerInfo(ctx, headers.SystemBackgroundHighCallerInfo)
	if _, err := tm.ListTaskQueue(probe, &p.ListTaskQueueRequest{PageSize: 1}); err != nil {
		s.Close()
		return nil, fmt.Errorf("list task queues of %s with Temporal's %s plugin: %w%s", c.dsn, c.plugin, err, logged(logger))
	}
	return s, nil
}
