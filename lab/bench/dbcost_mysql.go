package bench

// MariaDB's side of the database cost sampler (dbcost.go). It needs no
// performance_schema (off on the servers here): PROCESSLIST names each
// connection's client port (HOST, "127.0.0.1:PORT") and, since MariaDB
// 10.5, its thread's id (TID); INNODB_LOCK_WAITS with INNODB_TRX names who
// waits for whom.
//
// InnoDB serves its information_schema lock tables from a cache that it
// refreshes on a read only when it has not been read for 100 ms
// (CACHE_MIN_IDLE_TIME_US): read every 25 ms, they would never change.
// The lock waits are read every myWaitsInterval; any other client reading
// them as often starves the cache alike (the figures then miss waits).

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/tqscavenger/tqscavenger/sqlstore"
)

// myCost samples a MariaDB server.
type myCost struct {
	db *sql.DB
	id passIdent
	costSessions
	// server is mariadbd's pid and serverStart its CPU at the start, in
	// ticks; 0 when not readable here.
	server      int
	serverStart int64
	// cpu reads the pass's connection threads; nil when they are not
	// readable (no TID column: MySQL, or MariaDB before 10.5).
	cpu *cpuTracker
	// delays is the server's threads' run-queue waits at the start (nil
	// when not readable), passTids every thread seen serving the pass.
	delays   runDelays
	passTids map[int]bool
	logStart int64
	logOK    bool
	// waits is whether INNODB_LOCK_WAITS can be read; waitsAt when it
	// was last; waitsFailed and waitsErr count its failures.
	waits       bool
	waitsAt     time.Time
	waitsFailed int
	waitsErr    error
}

// myWaitsInterval is the time between two reads of InnoDB's lock waits:
// more than the 100 ms their cache needs to go by unread to be refreshed.
const myWaitsInterval = 150 * time.Millisecond

// startMySQLCost starts sampling the server of d; what it cannot measure
// it records in c.
func startMySQLCost(ctx context.Context, d sqlstore.DSN, id passIdent, c *Cost) costProbe {
	db, err := costConnect(ctx, d)
	if err != nil {
		return unavailableProbe(c, err, "PassCPU", "ServerCPU", "WALBytes", "BlockedSeconds", "PassBlockedSeconds", "RunDelay")
	}
	p := &myCost{db: db, id: id}
	if p.logStart, err = redoWritten(ctx, db); err != nil {
		c.unavailable("WALBytes", err)
	} else {
		p.logOK = true
	}
	if err := p.findServer(ctx); err != nil {
		c.unavailable("PassCPU", err)
		c.unavailable("ServerCPU", err)
		c.unavailable("RunDelay", err)
	} else {
		if p.cpu, err = newCPUTracker(); err != nil {
			c.unavailable("PassCPU", err)
		}
		if p.delays, err = threadDelays(p.server); err != nil {
			c.unavailable("RunDelay", err)
		}
	}
	p.passTids = map[int]bool{}
	if _, err := p.lockWaits(ctx); err != nil {
		err = fmt.Errorf("information_schema.INNODB_LOCK_WAITS (MariaDB; PROCESS privilege): %w", err)
		c.unavailable("BlockedSeconds", err)
		c.unavailable("PassBlockedSeconds", err)
	} else {
		p.waits, p.waitsAt = true, time.Now()
	}
	p.tick(ctx, 0) // the pass's threads' CPU at the start
	return p
}

// redoWritten is InnoDB's redo log written since the server started,
// bytes.
func redoWritten(ctx context.Context, db *sql.DB) (int64, error) {
	var name string
	var n int64
	if err := db.QueryRowContext(ctx, "SHOW GLOBAL STATUS LIKE 'Innodb_os_log_written'").Scan(&name, &n); err != nil {
		return 0, fmt.Errorf("Innodb_os_log_written: %w", err)
	}
	return n, nil
}

// findServer finds mariadbd by its pid file, checks it holds this
// session's thread, and reads its CPU.
func (p *myCost) findServer(ctx context.Context) error {
	var pidFile string
	var tid int64
	err := p.db.QueryRowContext(ctx, "SELECT @@pid_file, TID FROM information_schema.PROCESSLIST WHERE ID = CONNECTION_ID()").Scan(&pidFile, &tid)
	if err != nil {
		return fmt.Errorf("the server's pid and threads (MariaDB 10.5 or later): %w", err)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		return fmt.Errorf("the server's process is not readable here (another host?): %w", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return fmt.Errorf("the server's pid file %s: %w", pidFile, err)
	}
	st, err := readProcStat("/proc/" + strconv.Itoa(pid) + "/stat")
	if err == nil && st.comm != "mariadbd" && st.comm != "mysqld" {
		err = fmt.Errorf("it is %q", st.comm)
	}
	if err == nil {
		_, err = os.Stat(fmt.Sprintf("/proc/%d/task/%d", pid, tid))
	}
	if err != nil {
		return fmt.Errorf("process %d of %s is not the server's here (another host or PID namespace?): %w", pid, pidFile, err)
	}
	p.server, p.serverStart = pid, st.cpu()
	return nil
}

// mySession is a row of PROCESSLIST.
type mySession struct {
	id   string
	port int
	tid  int64
}

func (p *myCost) tick(ctx context.Context, _ time.Duration) int {
	ss, err := p.list(ctx)
	if err != nil {
		p.failed++
		p.tickErr = err
		return -1
	}
	keys, ports, apps := make([]string, len(ss)), make([]int, len(ss)), make([]string, len(ss))
	for i, s := range ss {
		keys[i], ports[i] = s.id, s.port
	}
	p.classify(p.id, keys, ports, apps)
	for _, s := range ss {
		if !p.pass[s.id] || s.tid <= 0 {
			continue
		}
		// A connection thread goes back to the server's thread cache
		// when its session ends, to serve another: its run-queue wait
		// is the pass's for the whole span.
		p.passTids[int(s.tid)] = true
		if p.cpu != nil {
			p.cpu.read(s.id, int(s.tid), fmt.Sprintf("/proc/%d/task/%d/stat", p.server, s.tid))
		}
	}
	now := time.Now()
	if !p.waits || now.Sub(p.waitsAt) < myWaitsInterval {
		return -1
	}
	dt := now.Sub(p.waitsAt)
	p.waitsAt = now
	waits, err := p.lockWaits(ctx)
	if err != nil {
		p.waitsFailed++
		p.waitsErr = err
		return -1
	}
	var byPass []string
	passWaiting := 0
	for waiter, blockers := range waits {
		pass, other := false, false
		for _, b := range blockers {
			if p.pass[b] {
				pass = true
			} else {
				other = true
			}
		}
		switch {
		case !p.pass[waiter] && pass:
			byPass = append(byPass, waiter)
		case p.pass[waiter] && other:
			passWaiting++
		}
	}
	p.tally.add(dt, byPass, passWaiting)
	return len(waits)
}

// list reads PROCESSLIST, less the sampler's own connection and the
// server's threads.
func (p *myCost) list(ctx context.Context) ([]mySession, error) {
	q := "SELECT ID, HOST, TID FROM information_schema.PROCESSLIST WHERE ID <> CONNECTION_ID() AND COMMAND <> 'Daemon'"
	if p.cpu == nil {
		q = "SELECT ID, HOST, 0 FROM information_schema.PROCESSLIST WHERE ID <> CONNECTION_ID() AND COMMAND <> 'Daemon'"
	}
	rows, err := p.db.QueryContext(ctx, q)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ss []mySession
	for rows.Next() {
		var s mySession
		var id int64
		var host string
		if err := rows.Scan(&id, &host, &s.tid); err != nil {
			return nil, err
		}
		s.id, s.port = strconv.FormatInt(id, 10), hostPort(host)
		ss = append(ss, s)
	}
	return ss, rows.Err()
}

// hostPort is the client port of PROCESSLIST's HOST ("127.0.0.1:45678"),
// -1 for none (a Unix socket's "localhost").
func hostPort(host string) int {
	i := strings.LastIndexByte(host, ':')
	if i < 0 {
		return -1
	}
	p, err := strconv.Atoi(host[i+1:])
	if err != nil {
		return -1
	}
	return p
}

// lockWaits maps each connection waiting for a row or table lock (its
// PROCESSLIST ID) to the connections whose transactions block it.
func (p *myCost) lockWaits(ctx context.Context) (map[string][]string, error) {
	rows, err := p.db.QueryContext(ctx, `SELECT r.trx_mysql_thread_id, b.trx_mysql_thread_id
FROM information_schema.INNODB_LOCK_WAITS w
JOIN information_schema.INNODB_TRX r ON r.trx_id = w.requesting_trx_id
JOIN information_schema.INNODB_TRX b ON b.trx_id = w.blocking_trx_id`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	waits := map[string][]string{}
	for rows.Next() {
		var waiter, blocker int64
		if err := rows.Scan(&waiter, &blocker); err != nil {
			return nil, err
		}
		w := strconv.FormatInt(waiter, 10)
		waits[w] = append(waits[w], strconv.FormatInt(blocker, 10))
	}
	return waits, rows.Err()
}

func (p *myCost) finish(ctx context.Context, c *Cost) {
	defer p.db.Close()
	if p.logOK {
		if n, err := redoWritten(ctx, p.db); err != nil {
			c.unavailable("WALBytes", err)
		} else {
			d := n - p.logStart
			c.WALBytes = &d
		}
	}
	if p.server != 0 {
		if st, err := readProcStat("/proc/" + strconv.Itoa(p.server) + "/stat"); err != nil {
			c.unavailable("ServerCPU", err)
		} else {
			secs := float64(st.cpu()-p.serverStart) / clockTicks
			c.ServerCPU = &secs
		}
	}
	if p.cpu != nil {
		secs := p.cpu.seconds()
		c.PassCPU = &secs
	}
	if p.delays != nil {
		if end, err := threadDelays(p.server); err != nil {
			c.unavailable("RunDelay", err)
		} else {
			secs := end.since(p.delays, p.passTids)
			c.RunDelay = &secs
		}
	}
	p.report(c, c.Samples)
	if !p.waits {
		c.BlockedSeconds, c.PassBlockedSeconds, c.BlockedSessions = nil, nil, 0
	} else if looks := int(c.Span / myWaitsInterval); p.waitsFailed > 0 && p.waitsFailed*2 >= looks {
		err := fmt.Errorf("%d of %d reads of INNODB_LOCK_WAITS failed: %w", p.waitsFailed, looks, p.waitsErr)
		c.unavailable("BlockedSeconds", err)
		c.unavailable("PassBlockedSeconds", err)
		c.BlockedSeconds, c.PassBlockedSeconds, c.BlockedSessions = nil, nil, 0
	}
	c.FailedSamples += p.waitsFailed
	c.BlockedInterval = myWaitsInterval
}
