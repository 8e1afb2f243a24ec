package interop

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"google.golang.org/protobuf/types/known/durationpb"
	_ "modernc.org/sqlite"

	"go.temporal.io/api/workflowservice/v1"
)

// namespace is the one namespace the workload runs in.
const namespace = "tqs-interop"

// engineDB is the databases of one configuration: Temporal's persistence
// (the task tables tqscavenger works on) and its visibility store.
type engineDB struct {
	engine  string // postgres, mysql, sqlite
	name    string // database name, or SQLite file
	visName string // visibility database (PostgreSQL for postgres and mysql), or SQLite file
	tqsDSN  string // the persistence database as tqscavenger's DSN
	raw     *sql.DB
	s       settings
}

// newEngineDB creates the databases of a configuration and Temporal's schema
// in them with Temporal's own schema tool (SQLite: the server's plugin sets
// its file up at start, as Temporal's dev server does).
func newEngineDB(t *testing.T, s settings, engine, tag string) *engineDB {
	t.Helper()
	if err := s.serversFor(engine); err != nil {
		t.Fatal(err)
	}
	e := &engineDB{engine: engine, s: s}
	pid := os.Getpid()
	var err error
	switch engine {
	case "postgres":
		e.name = fmt.Sprintf("tqs_interop_pg_%d_%s", pid, tag)
		e.visName = e.name + "_vis"
		err = e.sqlTool("postgres12", s.postgres, e.name, "postgresql/v12/temporal", "")
		if err == nil {
			err = e.sqlTool("postgres12", s.postgres, e.visName, "postgresql/v12/visibility", "")
		}
		e.tqsDSN = dsnWithDB(s.postgres, e.name)
		if err == nil {
			e.raw, err = sql.Open("pgx", e.tqsDSN)
		}
	case "mysql":
		e.name = fmt.Sprintf("tqs_interop_my_%d_%s", pid, tag)
		e.visName = fmt.Sprintf("tqs_interop_myvis_%d_%s", pid, tag)
		err = e.sqlTool("mysql8", s.mysql, e.name, "mysql/v8/temporal", "tx_isolation=READ-COMMITTED")
		if err == nil {
			// The mysql8 visibility schema may not suit MariaDB: visibility stays on PostgreSQL.
			err = e.sqlTool("postgres12", s.postgres, e.visName, "postgresql/v12/visibility", "")
		}
		e.tqsDSN = dsnWithDB(s.mysql, e.name)
		if err == nil {
			e.raw, err = sql.Open("mysql", mysqlDriverDSN(s.mysql, e.name))
		}
	case "sqlite":
		e.name = filepath.Join(s.work, tag+".db")
		e.visName = filepath.Join(s.work, tag+"-visibility.db")
		for _, f := range []string{e.name, e.visName} {
			for _, suffix := range []string{"", "-wal", "-shm", ".tqscavenger.lock"} {
				os.Remove(f + suffix)
			}
		}
		e.tqsDSN = "sqlite:" + e.name
	}
	if err != nil {
		t.Fatalf("%s: creating Temporal's databases: %v", engine, err)
	}
	if e.raw != nil {
		e.raw.SetMaxOpenConns(2)
	}
	t.Cleanup(func() { e.drop(t) })
	return e
}

// openRaw opens the SQLite file once the server has created it.
func (e *engineDB) openRaw() error {
	if e.raw != nil || e.engine != "sqlite" {
		return nil
	}
	db, err := sql.Open("sqlite", "file:"+e.name+"?_pragma=busy_timeout(10000)")
	if err != nil {
		return err
	}
	db.SetMaxOpenConns(1)
	e.raw = db
	return nil
}

func (e *engineDB) drop(t *testing.T) {
	if e.raw != nil {
		e.raw.Close()
	}
	if e.s.keep {
		t.Logf("%s: kept databases %s and %s (TQS_INTEROP_KEEP=1)", e.engine, e.name, e.visName)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dropOn := func(driver, dsn, stmt string) {
		db, err := sql.Open(driver, dsn)
		if err != nil {
			t.Logf("drop: %v", err)
			return
		}
		defer db.Close()
		if _, err := db.ExecContext(ctx, stmt); err != nil {
			t.Logf("drop: %s: %v", stmt, err)
		}
	}
	if err := e.s.serversFor(e.engine); err != nil {
		t.Errorf("drop: %v", err) // newEngineDB refused it: nothing was created
		return
	}
	// Only the server engines have an admin database: a SQLite-only run
	// has no TQS_TEST_POSTGRES.
	pgAdmin := func() string { return dsnWithDB(e.s.postgres, "postgres") }
	switch e.engine {
	case "postgres":
		dropOn("pgx", pgAdmin(), "DROP DATABASE IF EXISTS "+e.name+" WITH (FORCE)")
		dropOn("pgx", pgAdmin(), "DROP DATABASE IF EXISTS "+e.visName+" WITH (FORCE)")
	case "mysql":
		dropOn("mysql", mysqlDriverDSN(e.s.mysql, ""), "DROP DATABASE IF EXISTS "+e.name)
		dropOn("pgx", pgAdmin(), "DROP DATABASE IF EXISTS "+e.visName+" WITH (FORCE)")
	case "sqlite":
		for _, f := range []string{e.name, e.visName} {
			for _, suffix := range []string{"", "-wal", "-shm", ".tqscavenger.lock"} {
				os.Remove(f + suffix)
			}
		}
	}
}

// sqlTool runs Temporal's schema tool: create the database, set up the
// versioning tables, apply the embedded versioned schema.
func (e *engineDB) sqlTool(plugin string, u *url.URL, db, schemaName, attrs string) error {
	user, pass := urlUser(u)
	base := []string{"sql-tool", "--plugin", plugin, "--ep", u.Hostname(), "-p", u.Port(), "-u", user, "--db", db}
	if pass != "" {
		base = append(base, "--pw", pass)
	}
	if attrs != "" {
		base = append(base, "--ca", attrs)
	}
	for _, args := range [][]string{
		{"create-database"},
		{"setup-schema", "-v", "0.0"},
		{"update-schema", "--schema-name", schemaName},
	} {
		cmd := exec.Command(e.s.temporal, append(append([]string{}, base...), args...)...)
		out, err := cmd.CombinedOutput()
		if err != nil || strings.Contains(string(out), `"level":"error"`) || strings.Contains(string(out), "ERROR") {
			return fmt.Errorf("temporal-sql-tool %s on %s: %v\n%s", args[0], db, err, out)
		}
	}
	return nil
}

// temporalServer is one Temporal server process, all services in it, with
// its logs in a file per start.
type temporalServer struct {
	t        *testing.T
	s        settings
	db       *engineDB
	fairness bool
	tag      string
	base     int // first of its ports
	cfgPath  string
	dynPath  string // the dynamic config file (setFairness rewrites it)
	logPaths []string
	cmd      *exec.Cmd
	done     chan error
	stops    []time.Time // when each run was sent SIGTERM (its log lines after that are the shutdown's)
}

// Ports, as offsets from base: frontend, history, matching and worker gRPC
// and membership, Prometheus metrics, and one for tqscavenger's listener.
const (
	portFrontend = iota
	portFrontendMembership
	portHistory
	portHistoryMembership
	portMatching
	portMatchingMembership
	portWorker
	portWorkerMembership
	portMetrics
	portScavenger
	portCount
)

func newTemporalServer(t *testing.T, s settings, db *engineDB, fairness bool, tag string) *temporalServer {
	t.Helper()
	base, err := freePorts(portCount)
	if err != nil {
		t.Fatal(err)
	}
	ts := &temporalServer{t: t, s: s, db: db, fairness: fairness, tag: tag, base: base}
	dir := filepath.Join(s.work, tag)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	dyn := filepath.Join(dir, "dynamicconfig.yaml")
	ts.dynPath = dyn
	if err := os.WriteFile(dyn, []byte(dynamicConfig(fairness)), 0o644); err != nil {
		t.Fatal(err)
	}
	ts.cfgPath = filepath.Join(dir, "temporal.yaml")
	if err := os.WriteFile(ts.cfgPath, []byte(ts.config(dyn)), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ts.stop(5 * time.Second) })
	return ts
}

func (ts *temporalServer) frontend() string {
	return fmt.Sprintf("127.0.0.1:%d", ts.base+portFrontend)
}

func (ts *temporalServer) scavengerListen() string {
	return fmt.Sprintf("127.0.0.1:%d", ts.base+portScavenger)
}

// dynamicConfig is the server's dynamic config: Temporal's own scanner off
// (tqscavenger takes over), idle queues unloaded after 20 s so that queues
// unload and reload during a run, long polls shorter than that, ack levels
// written and ownership checked every 10 s, and fairness on or off.
func dynamicConfig(fairness bool) string {
	return fmt.Sprintf(`worker.taskQueueScannerEnabled:
  - value: false
matching.maxTaskQueueIdleTime:
  - value: 20s
matching.longPollExpirationInterval:
  - value: 10s
matching.getUserDataLongPollTimeout:
  - value: 15s
matching.updateAckInterval:
  - value: 10s
matching.enableFairness:
  - value: %t
system.enableEagerWorkflowStart:
  - value: false
limit.maxIDLength:
  - value: 255
`, fairness)
}

// sqliteJournal is the SQLite store's journal attributes: WAL with
// synchronous=NORMAL, or a rollback journal with SQLite's defaults, as
// Temporal's dev server keeps its files (the plugin sets neither there).
func sqliteJournal(mode string) string {
	if mode == "delete" {
		return "          journal_mode: delete\n"
	}
	return "          journal_mode: wal\n          synchronous: \"1\"\n"
}

func (ts *temporalServer) config(dynPath string) string {
	p := func(off int) int { return ts.base + off }
	store := func(name, engine, db string, maxConns int) string {
		switch engine {
		case "postgres":
			user, pass := urlUser(ts.s.postgres)
			return fmt.Sprintf(`    %s:
      sql:
        pluginName: postgres12
        databaseName: %s
        connectAddr: %q
        connectProtocol: tcp
        user: %q
        password: %q
        maxConns: %d
        maxIdleConns: %d
        maxConnLifetime: 1h
`, name, db, ts.s.postgres.Host, user, pass, maxConns, maxConns)
		case "mysql":
			user, pass := urlUser(ts.s.mysql)
			return fmt.Sprintf(`    %s:
      sql:
        pluginName: mysql8
        databaseName: %s
        connectAddr: %q
        connectProtocol: tcp
        user: %q
        password: %q
        connectAttributes:
          tx_isolation: "READ-COMMITTED"
        maxConns: %d
        maxIdleConns: %d
        maxConnLifetime: 1h
`, name, db, ts.s.mysql.Host, user, pass, maxConns, maxConns)
		default: // sqlite: the plugin creates the schema; other attributes are pragmas
			return fmt.Sprintf(`    %s:
      sql:
        pluginName: sqlite
        databaseName: %q
        connectAddr: localhost
        connectProtocol: tcp
        connectAttributes:
          mode: rwc
          cache: private
          setup: "true"
%s          busy_timeout: "10000"
        maxConns: 1
        maxIdleConns: 1
        maxConnLifetime: 1h
`, name, db, sqliteJournal(ts.s.journal))
		}
	}
	visEngine := ts.db.engine
	if visEngine == "mysql" {
		visEngine = "postgres"
	}
	return fmt.Sprintf(`log:
  stdout: true
  level: info
  format: json

persistence:
  defaultStore: default
  visibilityStore: visibility
  numHistoryShards: 4
  datastores:
%s%s
global:
  membership:
    maxJoinDuration: 30s
    broadcastAddress: 127.0.0.1
  metrics:
    prometheus:
      framework: tally
      timerType: histogram
      listenAddress: "127.0.0.1:%d"

services:
  frontend:
    rpc:
      grpcPort: %d
      membershipPort: %d
      bindOnLocalHost: true
  history:
    rpc:
      grpcPort: %d
      membershipPort: %d
      bindOnLocalHost: true
  matching:
    rpc:
      grpcPort: %d
      membershipPort: %d
      bindOnLocalHost: true
  worker:
    rpc:
      grpcPort: %d
      membershipPort: %d
      bindOnLocalHost: true

clusterMetadata:
  enableGlobalNamespace: false
  failoverVersionIncrement: 10
  masterClusterName: active
  currentClusterName: active
  clusterInformation:
    active:
      enabled: true
      initialFailoverVersion: 1
      rpcName: frontend
      rpcAddress: "127.0.0.1:%d"

dcRedirectionPolicy:
  policy: noop

dynamicConfigClient:
  filepath: %q
  pollInterval: 10s
`,
		store("default", ts.db.engine, ts.db.name, 10),
		store("visibility", visEngine, ts.db.visName, 2),
		p(portMetrics),
		p(portFrontend), p(portFrontendMembership),
		p(portHistory), p(portHistoryMembership),
		p(portMatching), p(portMatchingMembership),
		p(portWorker), p(portWorkerMembership),
		p(portFrontend),
		dynPath)
}

// start starts the server and waits until its frontend serves the namespace.
func (ts *temporalServer) start(ctx context.Context) error {
	logPath := filepath.Join(ts.s.work, ts.tag, fmt.Sprintf("temporal-%d.log", len(ts.logPaths)+1))
	f, err := os.Create(logPath)
	if err != nil {
		return err
	}
	ts.logPaths = append(ts.logPaths, logPath)
	cmd := exec.Command(ts.s.temporal, "start", ts.cfgPath)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		f.Close()
		return err
	}
	ts.cmd = cmd
	ts.done = make(chan error, 1)
	go func() { ts.done <- cmd.Wait(); f.Close() }()

	deadline := time.Now().Add(2 * time.Minute)
	for {
		err := ts.ready(ctx)
		if err == nil {
			break
		}
		select {
		case err := <-ts.done:
			ts.done <- err
			return fmt.Errorf("temporal server exited at start (%v); log %s:\n%s", err, logPath, tail(logPath, 40))
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("temporal server not ready after 2m: %v; log %s:\n%s", err, logPath, tail(logPath, 40))
		}
	}
	if ts.db.engine == "sqlite" {
		return ts.db.openRaw()
	}
	return nil
}

// ready registers the namespace (once) and checks the frontend serves it.
func (ts *temporalServer) ready(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	nc, err := client.NewNamespaceClient(client.Options{HostPort: ts.frontend(), Logger: quietLogger{}})
	if err != nil {
		return err
	}
	defer nc.Close()
	err = nc.Register(ctx, &workflowservice.RegisterNamespaceRequest{
		Namespace:                        namespace,
		WorkflowExecutionRetentionPeriod: durationpb.New(24 * time.Hour),
	})
	var exists *serviceerror.NamespaceAlreadyExists
	if err != nil && !errors.As(err, &exists) {
		return err
	}
	_, err = nc.Describe(ctx, namespace)
	return err
}

// stop sends SIGTERM and waits, then kills.
func (ts *temporalServer) stop(timeout time.Duration) {
	if ts.cmd == nil {
		return
	}
	cmd := ts.cmd
	ts.cmd = nil
	ts.stops = append(ts.stops, time.Now())
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-ts.done:
	case <-time.After(timeout):
		_ = cmd.Process.Kill()
		<-ts.done
	}
}

// metrics scrapes the server's Prometheus endpoint.
func (ts *temporalServer) metrics() (string, error) {
	return scrape(ts.metricsURL())
}

// metricsURL is the server's Prometheus endpoint (every service's metrics,
// told apart by service_name).
func (ts *temporalServer) metricsURL() string {
	return fmt.Sprintf("http://127.0.0.1:%d/metrics", ts.base+portMetrics)
}

// scrape reads a Prometheus endpoint. On a loaded machine Temporal's can
// take more than 10 s to answer: three tries of 30 s each, then the error.
func scrape(u string) (string, error) {
	var err error
	for try := 0; try < 3; try++ {
		var body string
		if body, err = scrapeOnce(u); err == nil {
			return body, nil
		}
		time.Sleep(time.Second)
	}
	return "", fmt.Errorf("3 tries: %w", err)
}

func scrapeOnce(u string) (string, error) {
	c := http.Client{Timeout: 30 * time.Second}
	resp, err := c.Get(u)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != 200 {
		return "", fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	return string(b), nil
}

func tail(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if len(lines) > n {
			lines = lines[1:]
		}
	}
	return strings.Join(lines, "\n")
}

// quietLogger drops the SDK's logs (the workload reports what matters).
type quietLogger struct{}

func (quietLogger) Debug(string, ...any) {}
func (quietLogger) Info(string, ...any)  {}
func (quietLogger) Warn(string, ...any)  {}
func (quietLogger) Error(string, ...any) {}

func urlUser(u *url.URL) (user, pass string) {
	if u.User == nil {
		return "", ""
	}
	pass, _ = u.User.Password()
	return u.User.Username(), pass
}

// dsnWithDB is u naming database db instead.
func dsnWithDB(u *url.URL, db string) string {
	c := *u
	c.Path = "/" + db
	return c.String()
}

// mysqlDriverDSN is go-sql-driver/mysql's form of a mysql:// URL.
func mysqlDriverDSN(u *url.URL, db string) string {
	user, pass := urlUser(u)
	cred := user
	if pass != "" {
		cred += ":" + pass
	}
	return fmt.Sprintf("%s@tcp(%s)/%s?interpolateParams=true", cred, u.Host, db)
}
