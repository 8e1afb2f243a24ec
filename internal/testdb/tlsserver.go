package testdb

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/tqscavenger/tqscavenger/internal/localserver"
	"github.com/tqscavenger/tqscavenger/sqlstore"
)

// TLSServer is a database server of the test binary's own with TLS on,
// for tests of certificates (the shared test servers cannot be
// reconfigured: MariaDB's has no TLS at all). TLSPostgres and TLSMySQL
// start one per engine the first time a test asks, with certificates
// made for it (Certs), on a free port below 32768; StopTLSServers, from
// TestMain, stops them.
//
// Each refuses plain-text TCP connections. User logs in over TLS
// without a client certificate; MTLSUser logs in only with a client
// certificate signed by Certs.CA (PostgreSQL: the cert method; MySQL:
// REQUIRE X509). Database holds Temporal's task tables.
type TLSServer struct {
	Engine   sqlstore.Engine
	Port     int
	Certs    *Certs
	User     string
	Database string

	proc *serverProc
	dir  string
}

// DSN returns a DSN of the server's database for user at host
// (127.0.0.1 or localhost, the names of the server's certificate),
// without TLS parameters: TLS comes from sqlstore.Options.TLS.
func (s *TLSServer) DSN(user, host string) string {
	u := url.URL{Scheme: string(s.Engine), User: url.User(user), Host: net.JoinHostPort(host, strconv.Itoa(s.Port)), Path: "/" + s.Database}
	return u.String()
}

// TLS returns TLS settings that verify the server with Certs.CA, plus
// the client certificate if mtls.
func (s *TLSServer) TLS(mtls bool) *sqlstore.TLS {
	t := &sqlstore.TLS{CAFile: s.Certs.CA}
	if mtls {
		t.CertFile, t.KeyFile = s.Certs.ClientCert, s.Certs.ClientKey
	}
	return t
}

// privateServers are the servers of this test binary, by engine.
var privateServers struct {
	sync.Mutex
	started map[sqlstore.Engine]*privateStart
}

type privateStart struct {
	once    sync.Once
	server  *TLSServer
	missing string // binaries not installed: skip (fail under CI)
	err     error
}

// TLSPostgres returns this test binary's PostgreSQL server with TLS,
// started on first use. It skips the test if PostgreSQL's binaries
// (initdb, postgres) are not installed, and fails it instead under
// CI=true.
func TLSPostgres(t testing.TB) *TLSServer {
	t.Helper()
	return privateServer(t, sqlstore.Postgres)
}

// TLSMySQL returns this test binary's MariaDB (or MySQL) server with
// TLS, started on first use. It skips the test if the server's binaries
// (mariadbd, mariadb-install-db) are not installed, and fails it instead
// under CI=true.
func TLSMySQL(t testing.TB) *TLSServer {
	t.Helper()
	return privateServer(t, sqlstore.MySQL)
}

func privateServer(t testing.TB, e sqlstore.Engine) *TLSServer {
	t.Helper()
	privateServers.Lock()
	if privateServers.started == nil {
		privateServers.started = map[sqlstore.Engine]*privateStart{}
	}
	ps := privateServers.started[e]
	if ps == nil {
		ps = &privateStart{}
		privateServers.started[e] = ps
	}
	privateServers.Unlock()
	ps.once.Do(func() {
		if e == sqlstore.Postgres {
			ps.server, ps.missing, ps.err = startPostgres()
		} else {
			ps.server, ps.missing, ps.err = startMySQL()
		}
	})
	switch {
	case ps.missing != "" && os.Getenv("CI") == "true":
		t.Fatalf("%s TLS tests: %s (CI=true: these tests must run)", e, ps.missing)
	case ps.missing != "":
		t.Skipf("%s TLS tests skipped: %s", e, ps.missing)
	case ps.err != nil:
		t.Fatalf("start a private %s server: %v", e, ps.err)
	}
	return ps.server
}

// StopTLSServers stops the servers TLSPostgres and TLSMySQL started and
// removes their files. Call it from TestMain after m.Run.
func StopTLSServers() {
	privateServers.Lock()
	defer privateServers.Unlock()
	for _, ps := range privateServers.started {
		if s := ps.server; s != nil {
			s.proc.stop()
			os.RemoveAll(s.dir)
		}
	}
	privateServers.started = nil
}

// serverProc is a running server process and its log (stderr).
type serverProc struct {
	cmd    *exec.Cmd
	ready  chan struct{} // closed when the log says the server is ready
	exited chan struct{} // closed when the process has exited

	mu  sync.Mutex
	log strings.Builder
}

// startProc starts cmd and returns once its stderr shows a line
// containing readyLine, or with an error (and the log) once it exits
// first or a minute passes.
func startProc(cmd *exec.Cmd, readyLine string) (*serverProc, error) {
	p := &serverProc{cmd: cmd, ready: make(chan struct{}), exited: make(chan struct{})}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stdout = nil
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		defer close(p.exited)
		sc := bufio.NewScanner(stderr)
		isReady := false
		for sc.Scan() {
			p.mu.Lock()
			p.log.WriteString(sc.Text() + "\n")
			p.mu.Unlock()
			if !isReady && strings.Contains(sc.Text(), readyLine) {
				isReady = true
				close(p.ready)
			}
		}
		cmd.Wait()
	}()
	select {
	case <-p.ready:
		return p, nil
	case <-p.exited:
		return nil, fmt.Errorf("%s exited before it was ready:\n%s", filepath.Base(cmd.Path), p.logText())
	case <-time.After(time.Minute):
		p.stop()
		return nil, fmt.Errorf("%s not ready after a minute:\n%s", filepath.Base(cmd.Path), p.logText())
	}
}

func (p *serverProc) logText() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.log.String()
}

// stop asks the server to shut down and waits for it, killing it after
// 30 s.
func (p *serverProc) stop() {
	terminate(p.cmd.Process)
	select {
	case <-p.exited:
	case <-time.After(30 * time.Second):
		p.cmd.Process.Kill()
		<-p.exited
	}
}

// startPostgres starts a private PostgreSQL cluster with TLS.
func startPostgres() (_ *TLSServer, missing string, _ error) {
	initdb, postgres, err := localserver.Postgres()
	if err != nil {
		return nil, err.Error(), nil
	}
	owner, err := localserver.LookupUser("postgres")
	if err != nil {
		return nil, err.Error(), nil
	}
	dir, err := os.MkdirTemp("", "tqs-tls-postgres-")
	if err != nil {
		return nil, "", err
	}
	s := &TLSServer{Engine: sqlstore.Postgres, User: "postgres", Database: "tqs", dir: dir}
	fail := func(err error) (*TLSServer, string, error) {
		os.RemoveAll(dir)
		return nil, "", err
	}
	if s.Certs, err = NewCerts(dir); err != nil {
		return fail(err)
	}
	data := filepath.Join(dir, "data")
	if err := owner.Chown(dir); err != nil {
		return fail(err)
	}
	cmd := exec.Command(initdb, "-D", data, "-U", "postgres", "-A", "trust", "--no-sync", "-E", "UTF8")
	owner.RunAs(cmd)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fail(fmt.Errorf("initdb: %v\n%s", err, out))
	}
	hba := "local all all trust\n" +
		"hostssl all " + MTLSUser + " 127.0.0.1/32 cert\n" +
		"hostssl all all 127.0.0.1/32 trust\n" +
		"host all all 127.0.0.1/32 reject\n"
	if err := os.WriteFile(filepath.Join(data, "pg_hba.conf"), []byte(hba), 0o600); err != nil {
		return fail(err)
	}
	if err := owner.Chown(dir); err != nil {
		return fail(err)
	}
	s.proc, s.Port, err = localserver.Start(func(port int) (*serverProc, error) {
		cmd := exec.Command(postgres, "-D", data,
			"-c", "listen_addresses=127.0.0.1", "-c", "port="+strconv.Itoa(port),
			"-c", "unix_socket_directories="+dir, "-c", "max_connections=30", "-c", "shared_buffers=16MB",
			"-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "logging_collector=off",
			"-c", "ssl=on", "-c", "ssl_cert_file="+s.Certs.ServerCert, "-c", "ssl_key_file="+s.Certs.ServerKey,
			"-c", "ssl_ca_file="+s.Certs.CA)
		owner.RunAs(cmd)
		return startProc(cmd, "database system is ready to accept connections")
	})
	if err != nil {
		return fail(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err = setupPostgres(ctx, s)
	if err != nil {
		s.proc.stop()
		return fail(err)
	}
	return s, "", nil
}

// setupPostgres creates the server's users and database, through its
// Unix socket.
func setupPostgres(ctx context.Context, s *TLSServer) error {
	local := func(db string) (*sql.DB, error) {
		cfg, err := pgx.ParseConfig(fmt.Sprintf("host=%s port=%d user=postgres dbname=%s sslmode=disable", s.dir, s.Port, db))
		if err != nil {
			return nil, err
		}
		return sql.OpenDB(stdlib.GetConnector(*cfg)), nil
	}
	admin, err := local("postgres")
	if err != nil {
		return err
	}
	defer admin.Close()
	for _, q := range []string{"CREATE ROLE " + MTLSUser + " LOGIN SUPERUSER", "CREATE DATABASE " + s.Database} {
		if _, err := admin.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("%s: %w", q, err)
		}
	}
	dsn := fmt.Sprintf("postgres://postgres@localhost/%s?host=%s&port=%d&sslmode=disable", s.Database, url.QueryEscape(s.dir), s.Port)
	return setupTables(ctx, dsn)
}

// startMySQL starts a private MariaDB (or MySQL) server with TLS.
func startMySQL() (_ *TLSServer, missing string, _ error) {
	mysqld, install, err := localserver.MariaDB()
	if err != nil {
		return nil, err.Error(), nil
	}
	dir, err := os.MkdirTemp("", "tqs-tls-mariadb-")
	if err != nil {
		return nil, "", err
	}
	s := &TLSServer{Engine: sqlstore.MySQL, User: "tqs_tls", Database: "tqs", dir: dir}
	fail := func(err error) (*TLSServer, string, error) {
		os.RemoveAll(dir)
		return nil, "", err
	}
	if s.Certs, err = NewCerts(dir); err != nil {
		return fail(err)
	}
	data := filepath.Join(dir, "data")
	asRoot := os.Geteuid() == 0
	args := []string{"--no-defaults", "--datadir=" + data, "--auth-root-authentication-method=normal", "--skip-test-db"}
	if asRoot {
		args = append(args, "--user=root")
	}
	if out, err := exec.Command(install, args...).CombinedOutput(); err != nil {
		return fail(fmt.Errorf("%s: %v\n%s", filepath.Base(install), err, out))
	}
	socket := filepath.Join(dir, "mysqld.sock")
	s.proc, s.Port, err = localserver.Start(func(port int) (*serverProc, error) {
		args := []string{"--no-defaults", "--datadir=" + data, "--port=" + strconv.Itoa(port), "--bind-address=127.0.0.1",
			"--socket=" + socket, "--pid-file=" + filepath.Join(dir, "mysqld.pid"), "--skip-name-resolve",
			"--innodb-buffer-pool-size=16M", "--innodb-log-file-size=8M", "--innodb-flush-log-at-trx-commit=0",
			"--skip-log-bin", "--max-connections=30", "--require-secure-transport=ON",
			"--ssl-ca=" + s.Certs.CA, "--ssl-cert=" + s.Certs.ServerCert, "--ssl-key=" + s.Certs.ServerKey}
		if asRoot {
			args = append(args, "--user=root")
		}
		cmd := exec.Command(mysqld, args...)
		dieWithParent(cmd)
		return startProc(cmd, "ready for connections")
	})
	if err != nil {
		return fail(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := setupMySQL(ctx, s, socket); err != nil {
		s.proc.stop()
		return fail(err)
	}
	return s, "", nil
}

// setupMySQL creates the server's users and database, through its Unix
// socket.
func setupMySQL(ctx context.Context, s *TLSServer, socket string) error {
	cfg := mysql.NewConfig()
	cfg.Net, cfg.Addr, cfg.User = "unix", socket, "root"
	c, err := mysql.NewConnector(cfg)
	if err != nil {
		return err
	}
	admin := sql.OpenDB(c)
	defer admin.Close()
	for _, q := range []string{
		"CREATE USER '" + s.User + "'@'%'",
		"GRANT ALL ON *.* TO '" + s.User + "'@'%'",
		"CREATE USER '" + MTLSUser + "'@'%' REQUIRE X509",
		"GRANT ALL ON *.* TO '" + MTLSUser + "'@'%'",
		"CREATE DATABASE " + s.Database,
	} {
		if _, err := admin.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("%s: %w", q, err)
		}
	}
	return setupTables(ctx, "mysql://root@localhost/"+s.Database+"?socket="+url.QueryEscape(socket))
}

// setupTables creates Temporal's task tables in the database of dsn.
func setupTables(ctx context.Context, dsn string) error {
	db, err := sqlstore.Open(ctx, dsn, sqlstore.Options{})
	if err != nil {
		return err
	}
	defer db.Close()
	return db.Setup(ctx)
}
