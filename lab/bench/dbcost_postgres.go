package bench

// PostgreSQL's side of the database cost sampler (dbcost.go).

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/tqscavenger/tqscavenger/sqlstore"
)

// pgCost samples a PostgreSQL server.
type pgCost struct {
	db *sql.DB
	id passIdent
	costSessions
	// cpu reads the pass's backends; nil when the server's processes are
	// not readable here.
	cpu *cpuTracker
	// postmaster is the server's first process and server its CPU at the
	// start, in ticks: 0 when not readable.
	postmaster int
	server     int64
	startLSN   string
	// delays is the server's processes' run-queue waits at the start (nil
	// when not readable), passPids every pid seen serving the pass.
	delays   runDelays
	passPids map[int]bool
	// waits is the time the other sessions spent active, sampled, by
	// what they waited on (waitClass).
	waits map[string]float64
}

// costSessions is what both servers' probes keep of the sessions they saw.
type costSessions struct {
	// pass maps each session seen (a key of the probe's) to whether it
	// is the pass's.
	pass   map[string]bool
	npass  int
	tally  blockTally
	failed int
	// tickErr is the last tick's error, identErr the last error telling
	// the pass's processes.
	tickErr, identErr error
}

// classify tells whether the new sessions of keys, by client port (-1
// for none), are the pass's: by application_name app (when it is not "")
// or by a client port of the pass's processes. It reads the pass's ports
// only when a session is new.
func (s *costSessions) classify(id passIdent, keys []string, ports []int, apps []string) {
	if s.pass == nil {
		s.pass = map[string]bool{}
	}
	var passPorts map[int]bool
	for i, k := range keys {
		if _, ok := s.pass[k]; ok {
			continue
		}
		is := id.AppName != "" && apps[i] == id.AppName
		if !is && ports[i] >= 0 && (id.Exe != "" || len(id.Pids) > 0) {
			if passPorts == nil {
				var err error
				if passPorts, err = id.ports(); err != nil {
					s.identErr = err
				}
				if passPorts == nil {
					passPorts = map[int]bool{}
				}
			}
			is = passPorts[ports[i]]
		}
		s.pass[k] = is
		if is {
			s.npass++
		}
	}
}

// report fills c's session figures: the pass's, and the lock waits.
func (s *costSessions) report(c *Cost, samples int) {
	c.PassSessions = s.npass
	c.FailedSamples = s.failed
	if s.identErr != nil && s.npass == 0 {
		err := fmt.Errorf("cannot tell the pass's sessions: %w", s.identErr)
		c.unavailable("PassCPU", err)
		c.unavailable("BlockedSeconds", err)
		c.unavailable("PassBlockedSeconds", err)
		c.PassCPU = nil
		return
	}
	if s.failed > 0 && s.failed*2 >= samples {
		err := fmt.Errorf("%d of %d samples failed: %w", s.failed, samples, s.tickErr)
		c.unavailable("BlockedSeconds", err)
		c.unavailable("PassBlockedSeconds", err)
		c.unavailable("PassCPU", err)
		c.PassCPU = nil
		return
	}
	c.BlockedSeconds = &s.tally.seconds
	c.PassBlockedSeconds = &s.tally.passSeconds
	c.BlockedSessions = len(s.tally.blocked)
}

// costConnect opens the sampler's connections: two, one for the ticks and
// one for the end. Its PostgreSQL connections answer an ended context as
// pgx does by itself, by closing the connection at once, not as a store's
// (sqlstore.ConfigurePostgres), which waits up to 5 s for the server to
// answer a cancel request: the sampler only reads, and a server that has
// stopped answering must not hold stop. MySQL's reads are the driver's,
// which closes the connection at once too.
func costConnect(ctx context.Context, d sqlstore.DSN) (*sql.DB, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if d.Engine != sqlstore.Postgres {
		return openSQLDSN(ctx, d, sqlstore.Options{MaxConns: 2})
	}
	cfg, err := pgx.ParseConfig(d.URL.String())
	if err != nil {
		return nil, fmt.Errorf("%w: %s", sqlstore.ErrBadDSN, d)
	}
	db := sql.OpenDB(stdlib.GetConnector(*cfg))
	db.SetMaxOpenConns(2)
	db.SetMaxIdleConns(2)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("%w: %s: %v", sqlstore.ErrUnavailable, d, err)
	}
	return db, nil
}

// startPostgresCost starts sampling the server of d; what it cannot
// measure it records in c.
func startPostgresCost(ctx context.Context, d sqlstore.DSN, id passIdent, c *Cost) costProbe {
	db, err := costConnect(ctx, d)
	if err != nil {
		return unavailableProbe(c, err, "PassCPU", "ServerCPU", "WALBytes", "BlockedSeconds", "PassBlockedSeconds", "RunDelay", "Waits")
	}
	p := &pgCost{db: db, id: id}
	if err := db.QueryRowContext(ctx, "SELECT pg_current_wal_insert_lsn()::text").Scan(&p.startLSN); err != nil {
		c.unavailable("WALBytes", fmt.Errorf("pg_current_wal_insert_lsn(): %w", err))
	}
	if err := p.findServer(ctx); err != nil {
		c.unavailable("PassCPU", err)
		c.unavailable("ServerCPU", err)
		c.unavailable("RunDelay", err)
	} else {
		if p.cpu, err = newCPUTracker(); err != nil {
			c.unavailable("PassCPU", err)
		}
		if p.delays, err = postmasterDelays(p.postmaster); err != nil {
			c.unavailable("RunDelay", err)
		}
	}
	p.passPids, p.waits = map[int]bool{}, map[string]float64{}
	p.tick(ctx, 0) // the pass's backends' CPU at the start
	return p
}

// findServer finds the postmaster by this session's backend, and reads
// its CPU.
func (p *pgCost) findServer(ctx context.Context) error {
	var backend int
	if err := p.db.QueryRowContext(ctx, "SELECT pg_backend_pid()").Scan(&backend); err != nil {
		return fmt.Errorf("pg_backend_pid(): %w", err)
	}
	st, err := readProcStat("/proc/" + strconv.Itoa(backend) + "/stat")
	if err != nil || st.comm != "postgres" {
		return fmt.Errorf("the server's processes are not readable here (another host or PID namespace?): backend %d: %v", backend, notPostgres(st, err))
	}
	p.postmaster = st.ppid
	if p.server, err = postmasterTicks(p.postmaster); err != nil {
		return err
	}
	return nil
}

// notPostgres says why st is not a PostgreSQL process.
func notPostgres(st procStat, err error) error {
	if err != nil {
		return err
	}
	return fmt.Errorf("it is %q, not postgres", st.comm)
}

// postmasterTicks is the CPU of the postmaster pm and every process it
// started, in ticks: its own, its children's that ended (its cutime and
// cstime: it waits for each), and those of its children now.
func postmasterTicks(pm int) (int64, error) {
	st, err := readProcStat("/proc/" + strconv.Itoa(pm) + "/stat")
	if err != nil {
		return 0, fmt.Errorf("postmaster: %w", err)
	}
	n := st.cpu() + st.cutime + st.cstime
	parents, err := procParents()
	if err != nil {
		return 0, err
	}
	for pid, ppid := range parents {
		if ppid != pm {
			continue
		}
		if cs, err := readProcStat("/proc/" + strconv.Itoa(pid) + "/stat"); err == nil {
			n += cs.cpu() + cs.cutime + cs.cstime
		}
	}
	return n, nil
}

// pgSessionsQuery lists the server's sessions but the sampler's: client
// backends, and parallel workers under their leader; for each waiting on
// a heavyweight lock, the pids that block it; what each active one waits
// on ("" for an idle one).
const pgSessionsQuery = `SELECT pid, coalesce(leader_pid, 0), coalesce(backend_start::text, ''),
	coalesce(application_name, ''), coalesce(client_port, -1),
	CASE WHEN wait_event_type = 'Lock' THEN array_to_string(pg_blocking_pids(pid), ',') ELSE '' END,
	CASE WHEN state = 'active' THEN 'active:' || coalesce(wait_event_type, '') || ':' || coalesce(wait_event, '') ELSE '' END
FROM pg_stat_activity
WHERE backend_type IN ('client backend', 'parallel worker') AND pid <> pg_backend_pid()`

// pgSession is a row of pgSessionsQuery.
type pgSession struct {
	pid, leader int
	key, app    string
	port        int
	blockers    []int
	// wait is "" for a session not active, else waitClass's class.
	wait string
}

// waitClass is the class of what an active session waits on, by
// pg_stat_activity's wait_event_type and wait_event: "CPU" (no wait
// event: running, or runnable waiting for a CPU), "WAL" (WAL inserts,
// writes and flushes: LWLock WALInsert, WALWrite, WALBufMapping, IO
// WALSync, WALWrite, …), "Lock" (heavyweight locks), "LWLock" and "IO"
// (the others of those types), "other" (IPC, client, timeouts, …).
func waitClass(typ, event string) string {
	switch {
	case typ == "":
		return "CPU"
	case (typ == "LWLock" || typ == "IO") && strings.HasPrefix(event, "WAL"):
		return "WAL"
	case typ == "Lock", typ == "LWLock", typ == "IO":
		return typ
	}
	return "other"
}

func (p *pgCost) tick(ctx context.Context, dt time.Duration) int {
	ss, err := p.list(ctx)
	if err != nil {
		p.failed++
		p.tickErr = err
		return -1
	}
	keys, ports, apps := make([]string, len(ss)), make([]int, len(ss)), make([]string, len(ss))
	for i, s := range ss {
		keys[i], ports[i], apps[i] = s.key, s.port, s.app
	}
	p.classify(p.id, keys, ports, apps)
	// A parallel worker serves its leader's session.
	passPid := map[int]bool{}
	for _, s := range ss {
		if p.pass[s.key] {
			passPid[s.pid] = true
		}
	}
	for _, s := range ss {
		if s.leader != 0 && s.leader != s.pid && passPid[s.leader] {
			passPid[s.pid] = true
		}
	}
	var byPass []string
	passWaiting, waiting := 0, 0
	for _, s := range ss {
		isPass := passPid[s.pid]
		if isPass {
			p.passPids[s.pid] = true
		} else if s.wait != "" {
			p.waits[s.wait] += dt.Seconds()
		}
		if isPass && p.cpu != nil {
			p.cpu.read(s.key, s.pid, "/proc/"+strconv.Itoa(s.pid)+"/stat")
		}
		if len(s.blockers) == 0 {
			continue
		}
		waiting++
		pass, other := false, false
		for _, b := range s.blockers {
			if passPid[b] {
				pass = true
			} else {
				other = true
			}
		}
		switch {
		case !isPass && pass:
			byPass = append(byPass, s.key)
		case isPass && other:
			passWaiting++
		}
	}
	p.tally.add(dt, byPass, passWaiting)
	return waiting
}

// list runs pgSessionsQuery.
func (p *pgCost) list(ctx context.Context) ([]pgSession, error) {
	rows, err := p.db.QueryContext(ctx, pgSessionsQuery)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ss []pgSession
	for rows.Next() {
		var s pgSession
		var start, blockers, wait string
		if err := rows.Scan(&s.pid, &s.leader, &start, &s.app, &s.port, &blockers, &wait); err != nil {
			return nil, err
		}
		if rest, ok := strings.CutPrefix(wait, "active:"); ok {
			typ, event, _ := strings.Cut(rest, ":")
			s.wait = waitClass(typ, event)
		}
		s.key = strconv.Itoa(s.pid) + "@" + start
		for _, b := range strings.Split(blockers, ",") {
			if pid, err := strconv.Atoi(b); err == nil {
				s.blockers = append(s.blockers, pid)
			}
		}
		ss = append(ss, s)
	}
	return ss, rows.Err()
}

func (p *pgCost) finish(ctx context.Context, c *Cost) {
	defer p.db.Close()
	if p.startLSN != "" {
		var n int64
		err := p.db.QueryRowContext(ctx, "SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), $1::pg_lsn)::bigint", p.startLSN).Scan(&n)
		if err != nil {
			c.unavailable("WALBytes", fmt.Errorf("pg_current_wal_insert_lsn(): %w", err))
		} else {
			c.WALBytes = &n
		}
	}
	if p.postmaster != 0 {
		if end, err := postmasterTicks(p.postmaster); err != nil {
			c.unavailable("ServerCPU", err)
		} else {
			secs := float64(end-p.server) / clockTicks
			c.ServerCPU = &secs
		}
	}
	if p.cpu != nil {
		secs := p.cpu.seconds()
		c.PassCPU = &secs
	}
	if p.delays != nil {
		if end, err := postmasterDelays(p.postmaster); err != nil {
			c.unavailable("RunDelay", err)
		} else {
			secs := end.since(p.delays, p.passPids)
			c.RunDelay = &secs
		}
	}
	p.report(c, c.Samples)
	if c.BlockedSeconds != nil { // the samples held: their waits too
		c.Waits = p.waits
	} else {
		c.unavailable("Waits", errors.New(c.Why["BlockedSeconds"]))
	}
	c.BlockedInterval = c.Interval
}

// noProbe is the probe of a server that could not be reached: nothing to
// sample, every figure unavailable.
type noProbe struct{}

func (noProbe) tick(context.Context, time.Duration) int { return -1 }
func (noProbe) finish(context.Context, *Cost)           {}

// unavailableProbe records err as the reason for each of figures and
// returns a probe that measures nothing.
func unavailableProbe(c *Cost, err error, figures ...string) costProbe {
	for _, f := range figures {
		c.unavailable(f, err)
	}
	return noProbe{}
}
