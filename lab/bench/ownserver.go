package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/tqscavenger/tqscavenger/internal/localserver"
	"github.com/tqscavenger/tqscavenger/sqlstore"
)

// ownServer is a PostgreSQL or MariaDB server the lab starts for itself
// in the production topology (topology.go): a new cluster in a
// temporary directory, on a free port of 127.0.0.1, pinned to the
// database's CPU from its first instruction. stop shuts it down and
// removes its files.
//
// Its settings are the shared test servers' (read from them with SHOW
// on 7 December 2026: PostgreSQL 15 and MariaDB 10.11 as Debian ships
// them, plus the CI's conf.d), so that a production-topology table
// differs from a shared one in where things run, not in what the server
// does:
//
//   - PostgreSQL: shared_buffers 128MB, fsync on, synchronous_commit on,
//     full_page_writes on, autovacuum off (the lab analyzes what it
//     seeds itself), max_wal_size 1GB, min_wal_size 80MB,
//     max_connections 100; no TLS (the lab's DSNs disable it);
//   - MariaDB: innodb_buffer_pool_size 128M, innodb_log_file_size 96M,
//     innodb_flush_log_at_trx_commit 1, no binary log, max_connections
//     151, utf8mb4; innodb_flush_method and the rest at their defaults,
//     as on the shared server.
//
// What the server really runs with is read back with SHOW and printed
// with each table (serverSettings).
type ownServer struct {
	engine sqlstore.Engine
	// dsn is the server's admin database over TCP: PostgreSQL's postgres
	// database as user postgres, MariaDB's test as root; no password.
	dsn  string
	port int
	dir  string // the cluster's files, removed by stop
	proc *serverProc
}

// The server processes' settings (see ownServer).
var (
	ownPostgresSettings = []string{
		"shared_buffers=128MB", "fsync=on", "synchronous_commit=on", "full_page_writes=on", "autovacuum=off",
		"max_wal_size=1GB", "min_wal_size=80MB", "max_connections=100", "logging_collector=off",
	}
	ownMariaDBSettings = []string{
		"--innodb-buffer-pool-size=128M", "--innodb-log-file-size=96M", "--innodb-flush-log-at-trx-commit=1",
		"--skip-log-bin", "--max-connections=151", "--character-set-server=utf8mb4", "--collation-server=utf8mb4_general_ci",
		"--skip-name-resolve",
	}
)

// startOwnServer starts a server of engine e (PostgreSQL or MySQL),
// each of its processes run through pin. A missing binary or server user
// is an error that names it.
func startOwnServer(ctx context.Context, e sqlstore.Engine, pin func(*exec.Cmd)) (*ownServer, error) {
	switch e {
	case sqlstore.Postgres:
		return startOwnPostgres(ctx, pin)
	case sqlstore.MySQL:
		return startOwnMariaDB(ctx, pin)
	}
	return nil, fmt.Errorf("bench: the lab starts no %s server of its own", e)
}

// pid is the server's main process: the postmaster, or mariadbd.
func (s *ownServer) pid() int { return s.proc.cmd.Process.Pid }

// stop shuts the server down (PostgreSQL: a fast shutdown, which ends
// sessions; MariaDB: a normal one), kills it after 30 s, and removes its
// files.
func (s *ownServer) stop() error {
	sig := syscall.SIGTERM
	if s.engine == sqlstore.Postgres {
		sig = syscall.SIGINT
	}
	err := s.proc.stop(sig)
	if rerr := os.RemoveAll(s.dir); rerr != nil {
		err = errors.Join(err, fmt.Errorf("bench: remove the %s server's files: %w", s.engine, rerr))
	}
	return err
}

// startOwnPostgres initdbs a cluster and starts its postmaster. As root
// both run as user postgres: PostgreSQL refuses root.
func startOwnPostgres(ctx context.Context, pin func(*exec.Cmd)) (_ *ownServer, err error) {
	initdb, postgres, err := localserver.Postgres()
	if err != nil {
		return nil, fmt.Errorf("bench: the production topology starts a PostgreSQL server of the lab's own, and %w; or use the shared topology", err)
	}
	owner, err := localserver.LookupUser("postgres")
	if err != nil {
		return nil, fmt.Errorf("bench: the production topology starts a PostgreSQL server of the lab's own: %w", err)
	}
	dir, err := os.MkdirTemp("", "tqslab-postgres-")
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	defer func() {
		if err != nil {
			os.RemoveAll(dir)
		}
	}()
	if err := owner.Chown(dir); err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	data := filepath.Join(dir, "data")
	// --no-sync: a cluster thrown away after the run need not survive a
	// crash of the machine during initdb.
	cmd := exec.CommandContext(ctx, initdb, "-D", data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync")
	owner.RunAs(cmd)
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("bench: initdb: %w\n%s", err, out)
	}
	proc, port, err := localserver.Start(func(port int) (*serverProc, error) {
		args := []string{"-D", data, "-c", "listen_addresses=127.0.0.1", "-c", "port=" + strconv.Itoa(port), "-c", "unix_socket_directories=" + dir}
		for _, s := range ownPostgresSettings {
			args = append(args, "-c", s)
		}
		cmd := exec.Command(postgres, args...)
		owner.RunAs(cmd)
		pin(cmd)
		return startServerProc(ctx, cmd, "database system is ready to accept connections")
	})
	if err != nil {
		return nil, fmt.Errorf("bench: start PostgreSQL: %w", err)
	}
	u := url.URL{Scheme: "postgres", User: url.User("postgres"), Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), Path: "/postgres", RawQuery: "sslmode=disable"}
	return &ownServer{engine: sqlstore.Postgres, dsn: u.String(), port: port, dir: dir, proc: proc}, nil
}

// startOwnMariaDB installs a data directory and starts mariadbd (or
// mysqld), then lets root in over TCP from 127.0.0.1 and creates
// database test. As root the server runs as root (--user=root).
func startOwnMariaDB(ctx context.Context, pin func(*exec.Cmd)) (_ *ownServer, err error) {
	mysqld, install, err := localserver.MariaDB()
	if err != nil {
		return nil, fmt.Errorf("bench: the production topology starts a MariaDB server of the lab's own, and %w; or use the shared topology", err)
	}
	dir, err := os.MkdirTemp("", "tqslab-mariadb-")
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	defer func() {
		if err != nil {
			os.RemoveAll(dir)
		}
	}()
	data := filepath.Join(dir, "data")
	asRoot := os.Geteuid() == 0
	args := []string{"--no-defaults", "--datadir=" + data, "--auth-root-authentication-method=normal", "--skip-test-db"}
	if asRoot {
		args = append(args, "--user=root")
	}
	cmd := exec.CommandContext(ctx, install, args...)
	dieWithParent(cmd)
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("bench: %s: %w\n%s", filepath.Base(install), err, out)
	}
	socket := filepath.Join(dir, "mysqld.sock")
	proc, port, err := localserver.Start(func(port int) (*serverProc, error) {
		args := append([]string{"--no-defaults", "--datadir=" + data, "--port=" + strconv.Itoa(port), "--bind-address=127.0.0.1",
			"--socket=" + socket, "--pid-file=" + filepath.Join(dir, "mysqld.pid")}, ownMariaDBSettings...)
		if asRoot {
			args = append(args, "--user=root")
		}
		cmd := exec.Command(mysqld, args...)
		dieWithParent(cmd)
		pin(cmd)
		return startServerProc(ctx, cmd, "ready for connections")
	})
	if err != nil {
		return nil, fmt.Errorf("bench: start MariaDB: %w", err)
	}
	s := &ownServer{engine: sqlstore.MySQL, port: port, dir: dir, proc: proc,
		dsn: "mysql://root@" + net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) + "/test"}
	if err := setupOwnMariaDB(ctx, socket); err != nil {
		s.stop()
		return nil, err
	}
	return s, nil
}

// setupOwnMariaDB, through the Unix socket (where root@localhost gets
// in), lets root in over TCP from 127.0.0.1 (the DSN the lab and the
// passes use) and creates database test.
func setupOwnMariaDB(ctx context.Context, socket string) error {
	db, _, err := openSQL(ctx, "mysql://root@localhost/mysql?socket="+url.QueryEscape(socket), sqlstore.Options{MaxConns: 1})
	if err != nil {
		return fmt.Errorf("bench: the lab's MariaDB: %w", err)
	}
	defer db.Close()
	for _, q := range []string{
		"CREATE USER IF NOT EXISTS 'root'@'127.0.0.1'",
		"GRANT ALL PRIVILEGES ON *.* TO 'root'@'127.0.0.1' WITH GRANT OPTION",
		"CREATE DATABASE IF NOT EXISTS test",
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("bench: the lab's MariaDB: %s: %w", q, err)
		}
	}
	return nil
}

// serverProc is a running server process and the end of its log
// (stderr).
type serverProc struct {
	cmd    *exec.Cmd
	exited chan struct{} // closed once the process has exited

	mu  sync.Mutex
	log []string // the last lines
}

const serverLogLines = 30

// startServerProc starts cmd and returns once its log shows a line
// containing ready; or an error with the log's end once it exits first,
// a minute passes or ctx ends (then it is stopped).
func startServerProc(ctx context.Context, cmd *exec.Cmd, ready string) (*serverProc, error) {
	p := &serverProc{cmd: cmd, exited: make(chan struct{})}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	isReady := make(chan struct{})
	go func() {
		defer close(p.exited)
		sc := bufio.NewScanner(stderr)
		seen := false
		for sc.Scan() {
			p.mu.Lock()
			p.log = append(p.log, sc.Text())
			if len(p.log) > serverLogLines {
				p.log = p.log[1:]
			}
			p.mu.Unlock()
			if !seen && strings.Contains(sc.Text(), ready) {
				seen = true
				close(isReady)
			}
		}
		io.Copy(io.Discard, stderr) // a line too long for the scanner: keep the server from blocking on its log
		cmd.Wait()
	}()
	timer := time.NewTimer(time.Minute)
	defer timer.Stop()
	select {
	case <-isReady:
		return p, nil
	case <-p.exited:
		return nil, fmt.Errorf("%s exited before it was ready:\n%s", filepath.Base(cmd.Args[len(cmd.Args)-len(cmd.Args)]), p.logText())
	case <-timer.C:
		p.stop(syscall.SIGKILL)
		return nil, fmt.Errorf("%s not ready after a minute:\n%s", filepath.Base(cmd.Path), p.logText())
	case <-ctx.Done():
		p.stop(syscall.SIGKILL)
		return nil, ctx.Err()
	}
}

func (p *serverProc) logText() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.log, "\n")
}

// stop sends sig and waits for the process to exit, killing it after
// 30 s.
func (p *serverProc) stop(sig os.Signal) error {
	if err := p.cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		p.cmd.Process.Kill()
	}
	timer := time.NewTimer(30 * time.Second)
	defer timer.Stop()
	select {
	case <-p.exited:
		return nil
	case <-timer.C:
		p.cmd.Process.Kill()
		<-p.exited
		return fmt.Errorf("bench: %s did not shut down within 30 s: killed", filepath.Base(p.cmd.Path))
	}
}
