// Package localserver finds what a process needs to start a database
// server of its own beside the shared ones: the server's binaries as this
// machine installed them, a free port, and the user it runs as when this
// process is root (PostgreSQL refuses root). The test servers of
// internal/testdb (TLS, which the shared servers cannot be reconfigured
// for) and the lab's own servers (lab/bench's production topology) both
// start theirs from here; neither ever touches a shared server.
package localserver

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Postgres returns PostgreSQL's initdb and the postgres server of the
// same installation. A PATH entry such as /usr/local/bin/initdb is often
// a link into the version's own bin directory, where postgres is: the
// link is followed.
func Postgres() (initdb, postgres string, err error) {
	initdb = FindBinary([]string{"initdb"}, "/usr/lib/postgresql/*/bin", "/usr/local/pgsql/bin")
	if initdb == "" {
		return "", "", errors.New("PostgreSQL's initdb is not installed (on PATH or in /usr/lib/postgresql/*/bin)")
	}
	if real, err := filepath.EvalSymlinks(initdb); err == nil {
		initdb = real
	}
	postgres = filepath.Join(filepath.Dir(initdb), "postgres")
	if !IsExecutable(postgres) {
		return "", "", fmt.Errorf("there is PostgreSQL's initdb (%s) but no %s", initdb, postgres)
	}
	return initdb, postgres, nil
}

// MariaDB returns MariaDB's server (mariadbd, or MySQL's mysqld) and its
// data directory installer (mariadb-install-db, or mysql_install_db).
func MariaDB() (server, install string, err error) {
	server = FindBinary([]string{"mariadbd", "mysqld"}, "/usr/sbin", "/usr/local/mysql/bin")
	install = FindBinary([]string{"mariadb-install-db", "mysql_install_db"}, "/usr/bin", "/usr/local/mysql/scripts")
	if server == "" || install == "" {
		return "", "", errors.New("MariaDB's mariadbd and mariadb-install-db are not installed (on PATH or in /usr/sbin, /usr/bin)")
	}
	return server, install, nil
}

// FindBinary returns the path of the first of names found on PATH or in
// dirs (globs; of a glob's matches the last, the newest version, first),
// or "" if none is.
func FindBinary(names []string, dirs ...string) string {
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	for _, d := range dirs {
		matches, _ := filepath.Glob(d)
		slices.Reverse(matches)
		for _, m := range matches {
			for _, n := range names {
				if p := filepath.Join(m, n); IsExecutable(p) {
					return p
				}
			}
		}
	}
	return ""
}

// IsExecutable reports whether p is a file with an execute bit set.
func IsExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0
}

// Start starts a server with start on a free port (FreePort), and on
// another one if something took the port in the meantime (start's error
// says "in use"), at most 5 times. It returns the server and its port.
func Start[S any](start func(port int) (S, error)) (S, int, error) {
	var (
		srv S
		err error
	)
	for range 5 {
		port := FreePort()
		if srv, err = start(port); err == nil {
			return srv, port, nil
		}
		if !strings.Contains(err.Error(), "in use") {
			break
		}
	}
	var zero S
	return zero, 0, err
}

// FreePort returns a TCP port of 127.0.0.1 below 32768 that nothing
// listens on now (Linux hands out ephemeral ports from 32768 up, so a
// server started on one does not meet a client's port). Another process
// may take it before the server binds it: Start retries.
func FreePort() int {
	for {
		p := 20000 + rand.IntN(12000)
		if ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p))); err == nil {
			ln.Close()
			return p
		}
	}
}
