package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"

	"github.com/tqscavenger/tqscavenger/sqlstore"
)

// The database side of one engine's live load, in its topology
// (topology.go): which server, with what settings, which processes, and
// on which CPUs the kernel let each run, read back from /proc at every
// round.

// LiveServer is the database side of one engine's live load.
type LiveServer struct {
	Topology Topology
	// Own: the lab started the server for the run (the production
	// topology on PostgreSQL and MariaDB). Addr is its host:port; "" on
	// SQLite.
	Own  bool
	Addr string
	// Settings are the server's version and the settings that shape a
	// pass's cost, read back with SHOW; "" on SQLite.
	Settings string
	// PIDs are the server's main process (the postmaster, mariadbd) when
	// the lab started it; on SQLite the lab's own process, where the
	// database is the workload's. None for a shared server.
	PIDs []int
	// DBCPU and PassCPU are the production topology's CPUs: the server's
	// and the workload's client's, and each pass's; -1 in the shared
	// topology.
	DBCPU, PassCPU int
	// Pinned is what each process was let run on, as read from
	// /proc/PID/task/*/status at every round.
	Pinned []PinnedProcess
	// adminDSN is the server's admin database ("" on SQLite); not
	// printed: a shared server's may hold a password.
	adminDSN string
}

// PinnedProcess is what one process of the live load was let run on.
type PinnedProcess struct {
	// Name says which process: "postmaster", "mariadbd", "workload (the
	// lab's process)", "pgbench", "pass".
	Name string
	// PID is its process id; 0 for the passes and pgbench, a new one
	// each round.
	PID int
	// Want is the CPU it was pinned to, "" where nothing is pinned; Got
	// each distinct Cpus_allowed_list read from /proc, in the order seen.
	Want string
	Got  []string
}

// pinned reports whether the process only ever ran where it was meant
// to (always true where nothing was pinned).
func (p PinnedProcess) pinned() bool {
	return p.Want == "" || len(p.Got) == 1 && p.Got[0] == p.Want
}

// liveSide is one engine's database side while its live load runs.
type liveSide struct {
	info LiveServer
	pin  *pinning // nil in the shared topology
	own  *ownServer
	// warnings are pinning that did not take.
	warnings []string
}

// openLiveSide opens engine e's server for the live load: in the
// production topology one the lab starts, pinned to the database's CPU;
// in the shared one the server of o (as Run does). close stops and
// removes what it started.
func (r *runner) openLiveSide(ctx context.Context, e sqlstore.Engine, pin *pinning) (_ server, _ *liveSide, err error) {
	side := &liveSide{pin: pin, info: LiveServer{Topology: TopologyShared, DBCPU: -1, PassCPU: -1}}
	o := r.o
	if pin != nil {
		side.info.Topology, side.info.DBCPU, side.info.PassCPU = TopologyProduction, pin.db, pin.pass
		if e != sqlstore.SQLite {
			r.logf("%s live-load: starting a server of the lab's own, pinned to CPU %d", e, pin.db)
			own, err := startOwnServer(ctx, e, func(cmd *exec.Cmd) { pin.command(cmd, pin.db) })
			if err != nil {
				return nil, nil, err
			}
			side.own = own
			side.info.Own, side.info.PIDs = true, []int{own.pid()}
			o.Postgres, o.MySQL = own.dsn, own.dsn
			defer func() {
				if err != nil {
					side.close(r)
				}
			}()
		}
	}
	srv, err := newServer(ctx, e, o)
	if err != nil {
		return nil, nil, err
	}
	if e == sqlstore.SQLite {
		side.info.PIDs = []int{os.Getpid()}
		return srv, side, nil
	}
	ss := srv.(*sqlServer)
	side.info.adminDSN = ss.base.String()
	side.info.Addr = ss.base.Host
	if side.info.Settings, err = serverSettings(ctx, ss); err != nil {
		srv.close()
		return nil, nil, err
	}
	if side.own != nil {
		r.logf("%s live-load: the lab's own server on %s, pid %d: %s", e, side.info.Addr, side.own.pid(), side.info.Settings)
	}
	return srv, side, nil
}

// close stops the lab's own server, if any, and removes its files.
func (s *liveSide) close(r *runner) {
	if s.own == nil {
		return
	}
	if err := s.own.stop(); err != nil {
		r.logf("%s live-load: %v", s.own.engine, err)
	}
	s.own = nil
}

// serverSettings reads the server's version and the settings that shape
// a pass's cost with SHOW (SELECT @@… on MariaDB).
func serverSettings(ctx context.Context, s *sqlServer) (string, error) {
	var names, fmts []string
	if s.e == sqlstore.Postgres {
		names = []string{"server_version", "shared_buffers", "fsync", "synchronous_commit", "autovacuum"}
		fmts = []string{"PostgreSQL %s:", "shared_buffers %s,", "fsync %s,", "synchronous_commit %s,", "autovacuum %s"}
	} else {
		names = []string{"version", "innodb_buffer_pool_size", "innodb_flush_log_at_trx_commit", "log_bin", "innodb_flush_method"}
		fmts = []string{"%s:", "innodb_buffer_pool_size %s,", "innodb_flush_log_at_trx_commit %s,", "log_bin %s,", "innodb_flush_method %s"}
	}
	var parts []string
	for i, n := range names {
		q := "SHOW " + n
		if s.e == sqlstore.MySQL {
			q = "SELECT @@" + n
		}
		var v string
		if err := s.admin.QueryRowContext(ctx, q).Scan(&v); err != nil {
			return "", fmt.Errorf("%s: %w", q, err)
		}
		switch n {
		case "version":
			if !strings.Contains(v, "MariaDB") {
				v = "MySQL " + v
			}
		case "innodb_buffer_pool_size":
			if b, err := strconv.ParseInt(v, 10, 64); err == nil && b%(1<<20) == 0 {
				v = strconv.FormatInt(b>>20, 10) + "M"
			}
		case "log_bin":
			switch v {
			case "0":
				v = "off"
			case "1":
				v = "on"
			}
		}
		parts = append(parts, fmt.Sprintf(fmts[i], v))
	}
	return strings.Join(parts, " "), nil
}

// pinWorkload pins the lab's own process, where the lab workload's
// client runs (and, on SQLite, the database), to the database's CPU; in
// the shared topology it does nothing. unpin puts it back.
func (s *liveSide) pinWorkload(r *runner) (unpin func(), err error) {
	if s.pin == nil {
		return func() {}, nil
	}
	restore, err := pinSelf(s.pin.db)
	if err != nil {
		return nil, err
	}
	return func() {
		if err := restore(); err != nil {
			r.logf("%v", err)
		}
	}, nil
}

// pinPass returns what pins a pass's process to the pass's CPU; nil in
// the shared topology.
func (s *liveSide) pinPass() func(*exec.Cmd) {
	if s.pin == nil {
		return nil
	}
	return func(cmd *exec.Cmd) { s.pin.command(cmd, s.pin.pass) }
}

// pinDB returns what pins a process of the database's side (pgbench) to
// the database's CPU; nil in the shared topology.
func (s *liveSide) pinDB() func(*exec.Cmd) {
	if s.pin == nil {
		return nil
	}
	return func(cmd *exec.Cmd) { s.pin.command(cmd, s.pin.db) }
}

// roundTarget is what one round of the live load runs on, for whatever
// watches the database's side over the round's window (see round).
type roundTarget struct {
	phase  LivePhase
	engine sqlstore.Engine
	// dsn is the round's copy, which the workload and the pass use;
	// adminDSN the server's admin database ("" on SQLite).
	dsn, adminDSN string
	// serverPIDs is LiveServer.PIDs: the lab's own server's main process,
	// or on SQLite the lab's process; none for a shared server.
	serverPIDs []int
	// workloadPID is the workload's client: the lab's process, or
	// pgbench's.
	workloadPID int
}

// target is the round's roundTarget.
func (lr *liveRun) target(ph LivePhase, dsn string, wl liveLoad) roundTarget {
	return roundTarget{phase: ph, engine: lr.srv.engine(), dsn: dsn, adminDSN: lr.side.info.adminDSN,
		serverPIDs: lr.side.info.PIDs, workloadPID: wl.pid()}
}

// observe reads what the round's server and workload processes may run
// on (see PinnedProcess).
func (s *liveSide) observe(t roundTarget) {
	want := ""
	if s.pin != nil {
		want = strconv.Itoa(s.pin.db)
	}
	if t.engine != sqlstore.SQLite {
		for _, pid := range t.serverPIDs {
			name := "postmaster"
			if t.engine == sqlstore.MySQL {
				name = "mariadbd"
			}
			s.record(name, pid, want, processCPUs)
		}
	}
	switch {
	case t.workloadPID != os.Getpid():
		// A new pgbench each round: one entry for them all.
		s.record("pgbench", 0, want, func(int) (string, error) { return processCPUs(t.workloadPID) })
	case t.engine == sqlstore.SQLite:
		s.record("workload and database (the lab's process)", t.workloadPID, want, processCPUs)
	default:
		s.record("workload (the lab's process)", t.workloadPID, want, processCPUs)
	}
}

// observePass records what a pass's process may run on, as its measure
// wrapper read it when the pass started ("" if it could not).
func (s *liveSide) observePass(cpus string) {
	want := ""
	if s.pin != nil {
		want = strconv.Itoa(s.pin.pass)
	}
	s.record("pass", 0, want, func(int) (string, error) {
		if cpus == "" {
			return "", fmt.Errorf("its measure wrapper could not read it")
		}
		return cpus, nil
	})
}

// record adds what read says process pid may run on to the PinnedProcess
// named name, and a warning where it is not want. A read that fails is
// a warning in the production topology (the pinning cannot be shown to
// have taken) and nothing in the shared one.
func (s *liveSide) record(name string, pid int, want string, read func(int) (string, error)) {
	i := slices.IndexFunc(s.info.Pinned, func(p PinnedProcess) bool { return p.Name == name && p.PID == pid })
	if i < 0 {
		s.info.Pinned = append(s.info.Pinned, PinnedProcess{Name: name, PID: pid, Want: want})
		i = len(s.info.Pinned) - 1
	}
	p := &s.info.Pinned[i]
	got, err := read(pid)
	if err != nil {
		if want != "" {
			s.warn(fmt.Sprintf("%s: what it may run on is unknown: %v", p.label(), err))
		}
		return
	}
	if slices.Contains(p.Got, got) {
		return
	}
	p.Got = append(p.Got, got)
	if want != "" && got != want {
		s.warn(fmt.Sprintf("%s may run on CPUs %s, not only on CPU %s: the pinning did not take", p.label(), got, want))
	}
}

func (s *liveSide) warn(w string) {
	if !slices.Contains(s.warnings, w) {
		s.warnings = append(s.warnings, w)
	}
}

// label names the process: "postmaster pid 123", or "pass" for every
// pass.
func (p PinnedProcess) label() string {
	if p.PID == 0 {
		return p.Name
	}
	return fmt.Sprintf("%s pid %d", p.Name, p.PID)
}
