package bench

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"io"
	"math"
	"net"
	"net/url"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tqscavenger/tqscavenger/internal/testdb"
	"github.com/tqscavenger/tqscavenger/sqlstore"
)

// The cost tests run "the pass" as a helper process (this test binary,
// TestCostHelper), so that its sessions are told from the test's own by
// their processes as the lab tells a pass's.

// costHelperVar makes TestCostHelper act: its value is the mode.
const costHelperVar = "TQS_COST_HELPER"

// TestCostHelper is the helper process of the cost tests: with
// TQS_COST_HELPER=lock it locks row 1 of TQS_COST_TABLE (SQLite: takes the
// write lock), says "ready" and holds it until its standard input ends;
// with cpu it connects, says "ready" with its session's backend pid
// (PostgreSQL) or thread id (MariaDB), runs TQS_COST_QUERY when a line
// comes, says "done" and waits for its input to end.
func TestCostHelper(t *testing.T) {
	mode := os.Getenv(costHelperVar)
	if mode == "" {
		t.Skip("the cost tests' helper process: they run it")
	}
	if err := costHelper(mode, os.Getenv("TQS_COST_DSN"), os.Getenv("TQS_COST_TABLE"), os.Getenv("TQS_COST_QUERY")); err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

func costHelper(mode, dsn, table, query string) error {
	ctx := context.Background()
	db, engine, err := openSQL(ctx, dsn, sqlstore.Options{MaxConns: 1})
	if err != nil {
		return err
	}
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	in := bufio.NewReader(os.Stdin)
	switch mode {
	case "lock":
		lock := "SELECT v FROM " + table + " WHERE id = 1 FOR UPDATE"
		begin := "BEGIN"
		if engine == sqlstore.SQLite {
			begin, lock = "BEGIN IMMEDIATE", "UPDATE "+table+" SET v = v + 1 WHERE id = 1"
		}
		if _, err := conn.ExecContext(ctx, begin); err != nil {
			return err
		}
		if _, err := conn.ExecContext(ctx, lock); err != nil {
			return err
		}
		fmt.Println("ready")
		io.Copy(io.Discard, in)
		_, err = conn.ExecContext(ctx, "COMMIT")
		return err
	case "cpu":
		q := "SELECT pg_backend_pid()"
		if engine == sqlstore.MySQL {
			q = "SELECT TID FROM information_schema.PROCESSLIST WHERE ID = CONNECTION_ID()"
		}
		var server int64
		if err := conn.QueryRowContext(ctx, q).Scan(&server); err != nil {
			return err
		}
		fmt.Println("ready", server)
		if _, err := in.ReadString('\n'); err != nil {
			return err
		}
		if _, err := conn.ExecContext(ctx, query); err != nil {
			return err
		}
		fmt.Println("done")
		io.Copy(io.Discard, in)
		return nil
	}
	return fmt.Errorf("unknown mode %q", mode)
}

// helperProc is a running helper process.
type helperProc struct {
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  *bufio.Reader
	said []string
}

// startHelper starts a helper process in mode on dsn and waits for its
// "ready", whose words after it it keeps in said. It is ended when the
// test ends.
func startHelper(t *testing.T, mode, dsn, table, query string) *helperProc {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCostHelper$", "-test.count=1")
	cmd.Env = append(os.Environ(), costHelperVar+"="+mode, "TQS_COST_DSN="+dsn, "TQS_COST_TABLE="+table, "TQS_COST_QUERY="+query)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	h := &helperProc{cmd: cmd, in: in, out: bufio.NewReader(out)}
	t.Cleanup(func() { h.end(t) })
	h.said = h.expect(t, "ready")
	return h
}

// expect waits for the helper to say word, and returns the words after
// it on its line.
func (h *helperProc) expect(t *testing.T, word string) []string {
	t.Helper()
	for {
		line, err := h.out.ReadString('\n')
		if f := strings.Fields(line); len(f) > 0 && f[0] == word {
			return f[1:]
		}
		if err != nil {
			t.Fatalf("helper ended before %q: %v", word, err)
		}
	}
}

// end closes the helper's input, which releases what it holds, and waits
// for it to exit.
func (h *helperProc) end(t *testing.T) {
	if h.in == nil {
		return
	}
	h.in.Close()
	h.in = nil
	io.Copy(io.Discard, h.out)
	if err := h.cmd.Wait(); err != nil {
		t.Errorf("helper: %v", err)
	}
}

// stopCost stops s, checking that it stops within a second and leaves no
// goroutine behind.
func stopCost(t *testing.T, s *costSampler) Cost {
	t.Helper()
	start := time.Now()
	c, err := s.stop()
	if err != nil {
		t.Fatal(err)
	}
	d := time.Since(start)
	if d > time.Second {
		t.Errorf("stop took %s, want at most 1s", d)
	}
	buf := make([]byte, 1<<20)
	if st := string(buf[:runtime.Stack(buf, true)]); strings.Contains(st, "(*costSampler).run") {
		t.Errorf("a sampler's goroutine is left after stop:\n%s", st)
	}
	if _, err := s.stop(); err == nil {
		t.Errorf("a second stop: no error")
	}
	t.Logf("cost (stopped in %s): %s", d.Round(time.Millisecond), describeCost(c))
	return c
}

// describeCost prints c's figures, for the test log.
func describeCost(c Cost) string {
	f := func(name string, p *float64) string {
		if p == nil {
			return name + " unavailable (" + c.Why[name] + ")"
		}
		return fmt.Sprintf("%s %.3f", name, *p)
	}
	wal := "WALBytes unavailable (" + c.Why["WALBytes"] + ")"
	if c.WALBytes != nil {
		wal = fmt.Sprintf("WALBytes %d", *c.WALBytes)
	}
	return fmt.Sprintf("span %s, %d samples (%d failed); %s (%d sessions), %s, %s, %s (%d sessions), %s, %s, waits %v, %s",
		c.Span.Round(time.Millisecond), c.Samples, c.FailedSamples, f("PassCPU", c.PassCPU), c.PassSessions, f("ServerCPU", c.ServerCPU), wal,
		f("BlockedSeconds", c.BlockedSeconds), c.BlockedSessions, f("PassBlockedSeconds", c.PassBlockedSeconds), f("RunDelay", c.RunDelay), c.Waits, f("WriteLockSeconds", c.WriteLockSeconds))
}

// waitTicks waits for s to take n more ticks.
func waitTicks(t *testing.T, s *costSampler, n int64) {
	t.Helper()
	want := s.ticks.Load() + n
	waitFor(t, fmt.Sprintf("%d ticks", n), func() bool { return s.ticks.Load() >= want })
}

// waitFor waits for cond, for 10 s at most.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// costServer returns a fresh database on engine e's test server and a
// pool on it; it skips without the server's variable.
func costServer(t *testing.T, e sqlstore.Engine) (string, *sql.DB) {
	t.Helper()
	dsn := testdb.Empty(t, e)
	db, _, err := openSQL(context.Background(), dsn, sqlstore.Options{MaxConns: 8})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return dsn, db
}

// costTable creates a table of two rows, ids 1 and 2.
func costTable(t *testing.T, db *sql.DB) string {
	t.Helper()
	for _, q := range []string{"CREATE TABLE cost_rows (id INT PRIMARY KEY, v INT NOT NULL)", "INSERT INTO cost_rows VALUES (1, 0), (2, 0)"} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	return "cost_rows"
}

// blockedUpdate updates row id of table on a connection of its own,
// which the caller then sees wait; the update's error comes on the
// channel.
func blockedUpdate(t *testing.T, db *sql.DB, table string, id int) <-chan error {
	t.Helper()
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	done := make(chan error, 1)
	go func() {
		_, err := conn.ExecContext(context.Background(), fmt.Sprintf("UPDATE %s SET v = v + 1 WHERE id = %d", table, id))
		done <- err
	}()
	return done
}

// TestCostBlocked: a session waiting on the pass's row lock counts as
// blocked, one waiting on another's does not.
func TestCostBlocked(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range []sqlstore.Engine{sqlstore.Postgres, sqlstore.MySQL} {
		t.Run(string(e), func(t *testing.T) {
			dsn, db := costServer(t, e)
			table := costTable(t, db)
			pass := startHelper(t, "lock", dsn, table, "")
			ctx := context.Background()
			// The pass's processes by their executable (for PostgreSQL)
			// and by pid (for MariaDB).
			id := passIdent{Exe: exe}
			if e == sqlstore.MySQL {
				id = passIdent{Pids: []int{pass.cmd.Process.Pid}}
			}
			s, err := startCost(ctx, e, dsn, id)
			if err != nil {
				t.Fatal(err)
			}
			// Row 2 is held by a session of the test's own: not the pass.
			other, err := db.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer other.Rollback()
			if _, err := other.Exec("UPDATE " + table + " SET v = v + 1 WHERE id = 2"); err != nil {
				t.Fatal(err)
			}
			done1 := blockedUpdate(t, db, table, 1)
			done2 := blockedUpdate(t, db, table, 2)
			// The sampler's own look at the lock waits says when both wait.
			waitFor(t, "the sampler to see both updates wait", func() bool { return s.waiting.Load() == 2 })
			pass.end(t)
			if err := <-done1; err != nil {
				t.Fatal(err)
			}
			c := stopCost(t, s)
			if err := other.Rollback(); err != nil {
				t.Fatal(err)
			}
			if err := <-done2; err != nil {
				t.Fatal(err)
			}
			// A look counts the time since the look before it, which is
			// under the interval when that one ran late (a ticker keeps its
			// cadence): more than nothing, not a whole interval.
			if c.BlockedSeconds == nil || *c.BlockedSeconds <= 0 {
				t.Errorf("blocked %s, want the look that saw it wait counted (looks every %s)", describeCost(c), c.BlockedInterval)
			}
			if c.BlockedSessions != 1 || c.PassSessions != 1 {
				t.Errorf("%d sessions blocked by %d of the pass's, want 1 and 1", c.BlockedSessions, c.PassSessions)
			}
			if c.BlockedSeconds != nil && *c.BlockedSeconds > c.Span.Seconds() {
				t.Errorf("blocked %.3fs in a span of %s: one session's sampled wait cannot exceed the span", *c.BlockedSeconds, c.Span)
			}
			if c.PassBlockedSeconds == nil || *c.PassBlockedSeconds != 0 {
				t.Errorf("the pass waited: %s", describeCost(c))
			}
		})
	}
}

// TestCostCPU: the pass's busy statement counts in PassCPU, as much as
// its backend's or thread's CPU says, and another session's does not.
func TestCostCPU(t *testing.T) {
	// own is the test's statement: twice the pass's, so that its CPU
	// counted for the pass's would show.
	for _, c := range []struct {
		e         sqlstore.Engine
		busy, own string
	}{
		{sqlstore.Postgres, "SELECT count(*) FROM generate_series(1, 1000000)", "SELECT count(*) FROM generate_series(1, 2000000)"},
		{sqlstore.MySQL, "SELECT BENCHMARK(500000, MD5('tqscavenger'))", "SELECT BENCHMARK(1000000, MD5('tqscavenger'))"},
	} {
		t.Run(string(c.e), func(t *testing.T) {
			dsn, db := costServer(t, c.e)
			ctx := context.Background()
			pass := startHelper(t, "cpu", dsn, "", c.busy)
			stat := serverStat(t, db, c.e, pass.said)
			s, err := startCost(ctx, c.e, dsn, passIdent{Pids: []int{pass.cmd.Process.Pid}})
			if err != nil {
				t.Fatal(err)
			}
			waitTicks(t, s, 2) // the pass's session seen before it works
			// The test's own busy statement, then the pass's.
			if _, err := db.ExecContext(ctx, c.own); err != nil {
				t.Fatal(err)
			}
			before := stat()
			if _, err := io.WriteString(pass.in, "go\n"); err != nil {
				t.Fatal(err)
			}
			pass.expect(t, "done")
			used := float64(stat()-before) / clockTicks
			cost := stopCost(t, s)
			if cost.PassCPU == nil || *cost.PassCPU < 0.05 {
				t.Fatalf("pass CPU %s, want at least 0.05s for %q", describeCost(cost), c.busy)
			}
			// Idle before and after the statement: the sampler's readings
			// and the test's differ by a tick or two at most.
			if d := *cost.PassCPU - used; d < -0.02 || d > 0.02 {
				t.Errorf("pass CPU %.3fs, but its statement took %.3fs", *cost.PassCPU, used)
			}
			if cost.ServerCPU == nil || *cost.ServerCPU < *cost.PassCPU-0.02 {
				t.Errorf("server CPU %s, want at least the pass's", describeCost(cost))
			}
			if cost.PassSessions != 1 {
				t.Errorf("%d pass sessions, want 1", cost.PassSessions)
			}
		})
	}
}

// serverStat returns a reader of the CPU time, in ticks, of the backend
// or thread the helper's "ready" named.
func serverStat(t *testing.T, db *sql.DB, e sqlstore.Engine, said []string) func() int64 {
	t.Helper()
	if len(said) != 1 {
		t.Fatalf("the helper said %q, want its backend or thread", said)
	}
	path := "/proc/" + said[0] + "/stat"
	if e == sqlstore.MySQL {
		var pidFile string
		if err := db.QueryRow("SELECT @@pid_file").Scan(&pidFile); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(pidFile)
		if err != nil {
			t.Skipf("the server's threads are not readable here: %v", err)
		}
		path = "/proc/" + strings.TrimSpace(string(b)) + "/task/" + said[0] + "/stat"
	}
	return func() int64 {
		t.Helper()
		st, err := readProcStat(path)
		if err != nil {
			t.Fatalf("the pass's server side: %v", err)
		}
		return st.cpu()
	}
}

// TestCostAppName: PostgreSQL sessions of the pass's application_name are
// the pass's, whatever process they come from, and sqlstore's DSN passes
// the name on.
func TestCostAppName(t *testing.T) {
	dsn, _ := costServer(t, sqlstore.Postgres)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("application_name", "tqs-cost-test")
	u.RawQuery = q.Encode()
	ctx := context.Background()
	s, err := startCost(ctx, sqlstore.Postgres, dsn, passIdent{AppName: "tqs-cost-test"})
	if err != nil {
		t.Fatal(err)
	}
	pass, _, err := openSQL(ctx, u.String(), sqlstore.Options{MaxConns: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer pass.Close()
	if _, err := pass.ExecContext(ctx, "SELECT count(*) FROM generate_series(1, 2000000)"); err != nil {
		t.Fatal(err)
	}
	c := stopCost(t, s)
	if c.PassSessions != 1 || c.PassCPU == nil || *c.PassCPU < 0.02 {
		t.Errorf("pass by application_name: %s, want 1 session and some CPU", describeCost(c))
	}
}

// TestCostWAL: a burst of writes shows in the log written.
func TestCostWAL(t *testing.T) {
	for _, e := range []sqlstore.Engine{sqlstore.Postgres, sqlstore.MySQL} {
		t.Run(string(e), func(t *testing.T) {
			dsn, db := costServer(t, e)
			ctx := context.Background()
			if _, err := db.Exec("CREATE TABLE cost_wal (id INT PRIMARY KEY, b VARCHAR(1100) NOT NULL)"); err != nil {
				t.Fatal(err)
			}
			s, err := startCost(ctx, e, dsn, passIdent{})
			if err != nil {
				t.Fatal(err)
			}
			const rows, size = 2000, 1000
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			for i := range rows {
				if _, err := tx.Exec(fmt.Sprintf("INSERT INTO cost_wal VALUES (%d, '%s')", i, strings.Repeat(string(rune('a'+i%26)), size))); err != nil {
					t.Fatal(err)
				}
			}
			if err := tx.Commit(); err != nil {
				t.Fatal(err)
			}
			c := stopCost(t, s)
			if c.WALBytes == nil || *c.WALBytes < rows*size {
				t.Errorf("log written: %s, want at least the %d bytes inserted", describeCost(c), rows*size)
			}
			if c.PassSessions != 0 || c.PassCPU == nil || *c.PassCPU != 0 {
				t.Errorf("no pass named, yet: %s", describeCost(c))
			}
		})
	}
}

// TestCostSQLiteWriteLock: the time the pass holds the write lock
// counts, in WAL and rollback-journal mode; the test's own does not.
func TestCostSQLiteWriteLock(t *testing.T) {
	for _, journal := range []string{"wal", "delete"} {
		t.Run(journal, func(t *testing.T) {
			ctx := context.Background()
			dsn := "sqlite:" + t.TempDir() + "/cost.db"
			db, _, err := openSQL(ctx, dsn, sqlstore.Options{Create: true})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			table := costTable(t, db)
			if journal != "wal" {
				var mode string
				if err := db.QueryRow("PRAGMA journal_mode = " + journal).Scan(&mode); err != nil || mode != journal {
					t.Fatalf("journal mode %q: %v", mode, err)
				}
			}
			id := passIdent{Exe: os.Args[0]}
			// The test's own write lock: not the pass's.
			s, err := startCost(ctx, sqlstore.SQLite, dsn, id)
			if err != nil {
				t.Fatal(err)
			}
			conn, err := db.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
				t.Fatal(err)
			}
			if _, err := conn.ExecContext(ctx, "UPDATE "+table+" SET v = v + 1 WHERE id = 2"); err != nil {
				t.Fatal(err)
			}
			waitTicks(t, s, 20)
			if _, err := conn.ExecContext(ctx, "COMMIT"); err != nil {
				t.Fatal(err)
			}
			conn.Close()
			if c := stopCost(t, s); c.WriteLockSeconds == nil || *c.WriteLockSeconds != 0 {
				t.Errorf("the test's own write lock: %s, want 0", describeCost(c))
			}
			// The pass's.
			if s, err = startCost(ctx, sqlstore.SQLite, dsn, id); err != nil {
				t.Fatal(err)
			}
			pass := startHelper(t, "lock", dsn, table, "")
			waitTicks(t, s, 20)
			pass.end(t)
			waitTicks(t, s, 5)
			c := stopCost(t, s)
			share, ok := c.WriteLockShare()
			if !ok || *c.WriteLockSeconds < 15*sqliteInterval.Seconds() || share >= 1 {
				t.Errorf("write lock: %s (share %.2f), want at least 15 ticks' (%s) and less than the span", describeCost(c), share, 15*sqliteInterval)
			}
		})
	}
}

// TestCostUnavailable: a figure that cannot be measured is nil with a
// reason, and the sampler still starts and stops; a DSN of another
// engine is refused.
func TestCostUnavailable(t *testing.T) {
	ctx := context.Background()
	// Nothing listens on port 1.
	s, err := startCost(ctx, sqlstore.Postgres, "postgres://postgres@127.0.0.1:1/none?sslmode=disable&connect_timeout=1", passIdent{})
	if err != nil {
		t.Fatal(err)
	}
	c := stopCost(t, s)
	for _, f := range []string{"PassCPU", "ServerCPU", "WALBytes", "BlockedSeconds", "PassBlockedSeconds", "RunDelay", "Waits"} {
		if c.Why[f] == "" {
			t.Errorf("%s: no reason given", f)
		}
	}
	if c.PassCPU != nil || c.ServerCPU != nil || c.WALBytes != nil || c.BlockedSeconds != nil || c.PassBlockedSeconds != nil || c.RunDelay != nil || c.Waits != nil {
		t.Errorf("an unreachable server measured: %s", describeCost(c))
	}
	s, err = startCost(ctx, sqlstore.SQLite, "sqlite:"+t.TempDir()+"/none.db", passIdent{})
	if err != nil {
		t.Fatal(err)
	}
	if c := stopCost(t, s); c.WriteLockSeconds != nil || c.Why["WriteLockSeconds"] == "" {
		t.Errorf("a missing SQLite file measured: %s", describeCost(c))
	}
	if _, err := startCost(ctx, sqlstore.MySQL, "sqlite:x.db", passIdent{}); err == nil {
		t.Errorf("a SQLite DSN for MySQL: no error")
	}
}

// TestParseCostProc: /proc's lines as the sampler reads them.
func TestParseCostProc(t *testing.T) {
	st, err := parseProcStat([]byte("2285 (postgres: a) b) S 1 2285 2285 0 -1 4194304 5952 121343 0 6 2 10 208 188 20 0 1 0 5292 222543872 7596"))
	if err != nil {
		t.Fatal(err)
	}
	if st != (procStat{comm: "postgres: a) b", ppid: 1, utime: 2, stime: 10, cutime: 208, cstime: 188, start: 5292}) {
		t.Errorf("stat: %+v", st)
	}
	if _, err := parseProcStat([]byte("12 (x) S 1")); err == nil {
		t.Errorf("a short stat line: no error")
	}
	locks := parseLocks([]byte("1: POSIX  ADVISORY  WRITE 3884 fe:00:778394 120 120\n" +
		"1: -> POSIX  ADVISORY  WRITE 77 fe:00:778394 120 120\n" +
		"2: OFDLCK ADVISORY  READ  -1 00:14:5 0 EOF\n" +
		"3: POSIX  ADVISORY  READ  12 08:01:9 1073741826 EOF\n"))
	want := []posixLock{
		{pid: 3884, write: true, dev: "fe:00", ino: 778394, start: 120, end: 120},
		{pid: 12, dev: "08:01", ino: 9, start: 1073741826, end: -1},
	}
	if fmt.Sprint(locks) != fmt.Sprint(want) {
		t.Errorf("locks: %+v, want %+v", locks, want)
	}
	if !want[1].covers(1<<40) || want[0].covers(121) || !want[0].covers(120) {
		t.Errorf("covers is wrong")
	}
	for host, port := range map[string]int{"127.0.0.1:45678": 45678, "localhost": -1, "::1:3306": 3306, "h:x": -1} {
		if got := hostPort(host); got != port {
			t.Errorf("hostPort(%q) = %d, want %d", host, got, port)
		}
	}
}

// TestCPUTracker: a process or thread counts from 0 when it started within
// the span and served no other session, else from its first reading; its
// last reading counts, and one that cannot be read is skipped.
func TestCPUTracker(t *testing.T) {
	dir := t.TempDir()
	// stat writes a stat file of a process started at start (ticks since
	// boot) with cpu ticks of user time.
	stat := func(name string, start, cpu int64) string {
		p := dir + "/" + name
		line := fmt.Sprintf("7 (postgres) S 1 7 7 0 -1 0 0 0 0 0 %d 0 0 0 20 0 1 0 %d 1 1", cpu, start)
		if err := os.WriteFile(p, []byte(line), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	type reading struct {
		session string
		pid     int
		start   int64
		cpu     int64
	}
	for _, c := range []struct {
		name     string
		readings []reading
		want     float64
	}{
		{"started before the span: from its first reading", []reading{{"a", 7, 50, 300}, {"a", 7, 50, 340}}, 0.4},
		{"started within it: from 0", []reading{{"a", 7, 150, 30}, {"a", 7, 150, 70}}, 0.7},
		{"a thread serving a second session: from its first reading for it", []reading{{"a", 7, 150, 30}, {"b", 7, 150, 50}, {"b", 7, 150, 80}}, 0.3 + 0.3},
		{"a pid reused: two processes", []reading{{"a", 7, 150, 30}, {"a", 7, 160, 5}}, 0.3 + 0.05},
		{"two sessions", []reading{{"a", 7, 50, 10}, {"a", 7, 50, 20}, {"b", 8, 120, 20}}, 0.1 + 0.2},
	} {
		t.Run(c.name, func(t *testing.T) {
			tr := &cpuTracker{since: 100, seen: map[cpuKey]*cpuSpan{}}
			for i, r := range c.readings {
				tr.read(r.session, r.pid, stat(fmt.Sprint(i), r.start, r.cpu))
			}
			tr.read("gone", 9, dir+"/none")
			if got := tr.seconds(); math.Abs(got-c.want) > 1e-9 {
				t.Errorf("%.3fs, want %.3fs", got, c.want)
			}
		})
	}
}

// TestCostStopsOnAHungServer: a server that stops answering mid-span
// holds stop no longer than a second; the figures it could not give are
// unavailable.
func TestCostStopsOnAHungServer(t *testing.T) {
	for _, e := range []sqlstore.Engine{sqlstore.Postgres, sqlstore.MySQL} {
		t.Run(string(e), func(t *testing.T) {
			dsn := testdb.Server(t, e)
			u, err := url.Parse(dsn)
			if err != nil {
				t.Fatal(err)
			}
			p := startFreezer(t, u.Host)
			u.Host = p.addr
			s, err := startCost(context.Background(), e, u.String(), passIdent{})
			if err != nil {
				t.Fatal(err)
			}
			waitTicks(t, s, 2)
			p.freeze()
			c := stopCost(t, s) // its last statements meet the frozen server
			if c.WALBytes != nil || c.Why["WALBytes"] == "" {
				t.Errorf("a hung server gave its log's position: %s", describeCost(c))
			}
		})
	}
}

// freezer is a TCP proxy to a server that can stop forwarding: the
// server then seems hung to its clients.
type freezer struct {
	addr   string
	frozen chan struct{}
}

// startFreezer proxies to upstream until the test ends.
func startFreezer(t *testing.T, upstream string) *freezer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &freezer{addr: ln.Addr().String(), frozen: make(chan struct{})}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	track := func(c net.Conn) {
		mu.Lock()
		conns = append(conns, c)
		mu.Unlock()
	}
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	// pipe copies from src to dst until either closes, holding what it
	// reads once frozen.
	pipe := func(dst, src net.Conn) {
		defer wg.Done()
		buf := make([]byte, 32<<10)
		for {
			n, err := src.Read(buf)
			if err != nil {
				return
			}
			select {
			case <-f.frozen:
				continue // swallowed: never answered
			default:
			}
			if _, err := dst.Write(buf[:n]); err != nil {
				return
			}
		}
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", upstream)
			if err != nil {
				c.Close()
				continue
			}
			track(c)
			track(up)
			wg.Add(2)
			go pipe(up, c)
			go pipe(c, up)
		}
	}()
	return f
}

// freeze stops the forwarding.
func (f *freezer) freeze() { close(f.frozen) }
