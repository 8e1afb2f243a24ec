package bench

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/tqscavenger/tqscavenger/seed"
	"github.com/tqscavenger/tqscavenger/sqlstore"
	"github.com/tqscavenger/tqscavenger/wire"
)

// The pgbench workload (WorkloadPgbench): PostgreSQL's pgbench runs a
// script on queues of its own (named pgbench-N, created like the lab
// workload's: updated now, range_id 1, holding tasks that never expire).
// One pgbench transaction is
//
//   - read: up to pgbenchRead tasks of another of its queues (GetTasks);
//   - in a transaction, lease: SELECT range_id … FOR UPDATE on one queue
//     row, UPDATE it to range_id+1 where range_id is the one read;
//     append: INSERT pgbenchAppend tasks with ids in the block the new
//     range_id owns (as matching allocates task ids from its lease), so
//     that inserts never collide.
//
// Each queue has a script of its own, its keys and blobs written in, and
// pgbench picks one at random per transaction. The capacity is pgbench
// closed loop; each phase runs it open loop (--rate) with a log of every
// transaction, whose time column runs from when it was due (its
// scheduled start: pgbench's latency is now − txn_scheduled, schedule lag
// included), so its latencies are open-loop ones like the lab's. pgbench
// ends on SIGALRM (its own -T timer's signal) after the transactions in
// flight, having logged every one it finished.

// The pgbench workload's shape.
const (
	pgbenchAppend = 5
	pgbenchRead   = 10
	// pgbenchSeeded is how many tasks each queue holds before the run.
	pgbenchSeeded = 20
	// An appended task's id is pgbenchIDBase + range_id×pgbenchIDBlock
	// + 0…pgbenchAppend-1: above the seeded ones, and within [2^28, 2^35)
	// so that its varint in the blob is five bytes (see taskBlobSQL).
	pgbenchIDBase  = 1 << 28
	pgbenchIDBlock = 8
	// pgbenchMaxScripts is pgbench's limit of scripts (MAX_SCRIPTS).
	pgbenchMaxScripts = 128
	pgbenchThreads    = 2
	// pgbenchForever is the -T of an open-loop run, which SIGALRM ends.
	pgbenchForever = 24 * 3600
)

// pgbenchLoad is the pgbench workload on one copy.
type pgbenchLoad struct {
	bin, dir string
	uri      string   // the copy's URI, without its password
	env      []string // PGPASSWORD, if any
	conns    int
	pin      func(*exec.Cmd) // pins pgbench; nil: not pinned
	running  *exec.Cmd       // the open-loop run, between start and stop
	db       *sql.DB
	queues   []*wlQueue
	scripts  []string
	// done is how many transactions the last open-loop run logged.
	done int64
}

// openPgbench creates the pgbench workload's queues and scripts on the
// copy at dsn, in a directory of its own under dir; pin, if not nil,
// pins each pgbench run to CPUs.
func openPgbench(ctx context.Context, dsn string, lo LiveOptions, dir string, pin func(*exec.Cmd)) (_ *pgbenchLoad, err error) {
	u, err := url.Parse(dsn)
	if err != nil {
		return nil, fmt.Errorf("pgbench: %w", err)
	}
	l := &pgbenchLoad{bin: lo.Pgbench, conns: lo.Conns, env: os.Environ(), pin: pin}
	if pw, ok := u.User.Password(); ok {
		// On pgbench's command line the password would show in ps.
		l.env = append(l.env, "PGPASSWORD="+pw)
		u.User = url.User(u.User.Username())
	}
	l.uri = u.String()
	if l.dir, err = os.MkdirTemp(dir, "pgbench-"); err != nil {
		return nil, fmt.Errorf("pgbench: %w", err)
	}
	db, _, err := openSQL(ctx, dsn, sqlstore.Options{MaxConns: 2})
	if err != nil {
		os.RemoveAll(l.dir)
		return nil, err
	}
	l.db = db
	defer func() {
		if err != nil {
			l.close()
		}
	}()
	now := time.Now()
	data := pgbenchTaskData(now)
	prefix, err := taskBlobPrefix(data)
	if err != nil {
		return nil, err
	}
	for i := range lo.Queues {
		q, err := createLiveQueue(ctx, db, sqlstore.Postgres, "pgbench-"+strconv.Itoa(i), now)
		if err != nil {
			return nil, fmt.Errorf("pgbench: %w", err)
		}
		b := (&sqlBuf{engine: sqlstore.Postgres}).w("INSERT INTO tasks (range_hash, task_queue_id, task_id, data, data_encoding) VALUES ")
		for id := int64(1); id <= pgbenchSeeded; id++ {
			if id > 1 {
				b.w(", ")
			}
			blob := wire.EncodeAllocatedTaskInfo(wire.AllocatedTaskInfo{Data: data, TaskID: id})
			b.w("(").p(q.hash).w(", ").p(q.key).w(", ").p(id).w(", ").p(blob).w(", ").p(wire.EncodingProto3).w(")")
		}
		if _, err := db.ExecContext(ctx, b.String(), b.args...); err != nil {
			return nil, fmt.Errorf("pgbench: seed queue %s: %w", q.name, err)
		}
		l.queues = append(l.queues, q)
	}
	for i, q := range l.queues {
		info := liveInfo(now)
		info.Name = q.name
		other := l.queues[(i+len(l.queues)/2)%len(l.queues)]
		p := filepath.Join(l.dir, fmt.Sprintf("queue-%d.sql", i))
		if err := os.WriteFile(p, []byte(pgbenchScript(q, other, wire.EncodeTaskQueueInfo(info), prefix)), 0o644); err != nil {
			return nil, fmt.Errorf("pgbench: %w", err)
		}
		l.scripts = append(l.scripts, p)
	}
	return l, nil
}

// pgbenchTaskData is the blob data of every task of the workload: no
// expiry, so that it never expires.
func pgbenchTaskData(now time.Time) wire.TaskInfo {
	return wire.TaskInfo{NamespaceID: seed.DefaultNamespace.String(), WorkflowID: "wf-pgbench", RunID: "run-0", ScheduledEventID: 5, CreateTime: now}
}

// taskBlobPrefix returns the blob of a task with data but its id: the
// script appends tag 2 and the id's varint to it in SQL. It checks that
// this is how the blob is encoded, so that the script's tasks are the
// ones Temporal would write.
func taskBlobPrefix(data wire.TaskInfo) ([]byte, error) {
	prefix := wire.EncodeAllocatedTaskInfo(wire.AllocatedTaskInfo{Data: data})
	id := int64(pgbenchIDBase + 12345*pgbenchIDBlock + 3)
	want := wire.EncodeAllocatedTaskInfo(wire.AllocatedTaskInfo{Data: data, TaskID: id})
	if got := append(append(append([]byte(nil), prefix...), 0x10), varint5(id)...); !bytes.Equal(got, want) {
		return nil, errors.New("pgbench: the task blob is not its data followed by its id: the script cannot write it")
	}
	return prefix, nil
}

// varint5 is id's five-byte varint, as taskBlobSQL computes it.
func varint5(id int64) []byte {
	return []byte{byte(id&127 | 128), byte(id>>7&127 | 128), byte(id>>14&127 | 128), byte(id>>21&127 | 128), byte(id >> 28)}
}

// taskBlobSQL is the SQL of the blob of the task whose id is the column
// id: prefix, tag 2 (0x10) and id's varint (five bytes for ids in
// [2^28, 2^35)). PostgreSQL gives &, |, << and >> one precedence: every
// term is parenthesized.
func taskBlobSQL(prefix []byte) string {
	b := func(shift int) string { return fmt.Sprintf("((((id >> %d) & 127) | 128) << %d)", shift, 32-shift/7*8) }
	v := fmt.Sprintf("(%s | %s | %s | %s | (id >> 28))", b(0), b(7), b(14), b(21))
	return fmt.Sprintf(`'\x%s10'::bytea || decode(lpad(to_hex(%s), 10, '0'), 'hex')`, hex.EncodeToString(prefix), v)
}

// pgbenchScript is the transaction on queue q, reading other.
func pgbenchScript(q, other *wlQueue, queueBlob, prefix []byte) string {
	key := func(q *wlQueue) string {
		return fmt.Sprintf(`range_hash = %d AND task_queue_id = '\x%s'::bytea`, q.hash, hex.EncodeToString(q.key))
	}
	var s strings.Builder
	fmt.Fprintf(&s, "-- tqslab pgbench workload: lease and append on %s, read %s\n", q.name, other.name)
	fmt.Fprintf(&s, "SELECT task_id, data, data_encoding FROM tasks WHERE %s AND task_id > 0 ORDER BY task_id LIMIT %d;\n", key(other), pgbenchRead)
	s.WriteString("BEGIN;\n")
	fmt.Fprintf(&s, "SELECT range_id AS r FROM task_queues WHERE %s FOR UPDATE \\gset\n", key(q))
	fmt.Fprintf(&s, "UPDATE task_queues SET range_id = CAST(:r AS bigint) + 1, data = '\\x%s'::bytea WHERE %s AND range_id = CAST(:r AS bigint);\n", hex.EncodeToString(queueBlob), key(q))
	fmt.Fprintf(&s, "INSERT INTO tasks (range_hash, task_queue_id, task_id, data, data_encoding) SELECT %d, '\\x%s'::bytea, id, %s, '%s' FROM (SELECT %d + (CAST(:r AS bigint) + 1) * %d + g AS id FROM generate_series(0, %d) AS g) AS t;\n",
		q.hash, hex.EncodeToString(q.key), taskBlobSQL(prefix), wire.EncodingProto3, pgbenchIDBase, pgbenchIDBlock, pgbenchAppend-1)
	// COMMIT last: pgbench stopped before it leaves nothing committed
	// unlogged.
	s.WriteString("COMMIT;\n")
	return s.String()
}

func (l *pgbenchLoad) close() error {
	err := l.db.Close()
	os.RemoveAll(l.dir)
	return err
}

// command is pgbench with the workload's scripts and args.
func (l *pgbenchLoad) command(ctx context.Context, args ...string) *exec.Cmd {
	argv := []string{"-n", "-M", "prepared", "-c", strconv.Itoa(l.conns), "-j", strconv.Itoa(min(pgbenchThreads, l.conns))}
	argv = append(argv, args...)
	for _, s := range l.scripts {
		argv = append(argv, "-f", s+"@1")
	}
	cmd := exec.CommandContext(ctx, l.bin, append(argv, l.uri)...)
	cmd.Env = l.env
	cmd.Dir = l.dir
	dieWithParent(cmd) // a killed lab leaves no pgbench on a dropped copy
	if l.pin != nil {
		l.pin(cmd)
	}
	return cmd
}

var tpsLine = regexp.MustCompile(`(?m)^tps = ([0-9.]+) \(without initial connection time\)`)

// capacity runs pgbench closed loop, l.conns clients (conns is the lab
// workload's and unused), for d rounded up to whole seconds.
func (l *pgbenchLoad) capacity(ctx context.Context, _ int, d time.Duration) (float64, error) {
	cmd := l.command(ctx, "-T", strconv.Itoa(int(math.Ceil(d.Seconds()))))
	// All of stdout: the tps line comes before a report per script,
	// which with 64 scripts is longer than a tail.
	var (
		out    bytes.Buffer
		stderr stderrTail
	)
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		return 0, fmt.Errorf("pgbench: %w: %s", err, strings.TrimSpace(string(stderr.b)))
	}
	m := tpsLine.FindSubmatch(out.Bytes())
	if m == nil {
		head, _, _ := strings.Cut(out.String(), "SQL script")
		return 0, fmt.Errorf("pgbench: no tps in its output: %s", strings.TrimSpace(head))
	}
	tps, err := strconv.ParseFloat(string(m[1]), 64)
	if err != nil || tps <= 0 {
		return 0, fmt.Errorf("pgbench: tps %q: %v", m[1], err)
	}
	return tps, nil
}

// start runs pgbench open loop at rate with a log of every transaction;
// stop ends it with SIGALRM and reads the logs.
func (l *pgbenchLoad) start(ctx context.Context, rate float64) (func() ([]sample, int64, error), error) {
	logs := filepath.Join(l.dir, "tx")
	cmd := l.command(ctx, "-R", strconv.FormatFloat(rate, 'f', 3, 64), "-T", strconv.Itoa(pgbenchForever), "-l", "--log-prefix", logs)
	var out, stderr stderrTail
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("pgbench: %w", err)
	}
	l.running = cmd
	return func() ([]sample, int64, error) {
		l.running = nil
		cmd.Process.Signal(syscall.SIGALRM)
		if err := cmd.Wait(); err != nil {
			return nil, 0, fmt.Errorf("pgbench: %w: %s", err, strings.TrimSpace(string(stderr.b)))
		}
		ss, failed, err := readPgbenchLogs(logs)
		if err != nil {
			return ss, failed, err
		}
		l.done = int64(len(ss))
		if failed > 0 {
			return ss, failed, fmt.Errorf("pgbench: %d transactions failed", failed)
		}
		return ss, 0, l.verify(ctx)
	}, nil
}

// readPgbenchLogs reads pgbench's per-transaction logs (prefix.PID and
// prefix.PID.THREAD): client transaction time script epoch µs lag, time
// in µs from the scheduled start to the end at epoch.µs.
func readPgbenchLogs(prefix string) ([]sample, int64, error) {
	files, err := filepath.Glob(prefix + ".*")
	if err != nil || len(files) == 0 {
		return nil, 0, fmt.Errorf("pgbench: no transaction log %s.*: %v", prefix, err)
	}
	var (
		ss     []sample
		failed int64
	)
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			return nil, 0, fmt.Errorf("pgbench: %w", err)
		}
		sc := bufio.NewScanner(fh)
		for sc.Scan() {
			fs := strings.Fields(sc.Text())
			if len(fs) < 7 {
				fh.Close()
				return nil, 0, fmt.Errorf("pgbench: %s: line %q: want 7 fields (a run with --rate)", f, sc.Text())
			}
			us, err1 := strconv.ParseInt(fs[2], 10, 64)
			sec, err2 := strconv.ParseInt(fs[4], 10, 64)
			usec, err3 := strconv.ParseInt(fs[5], 10, 64)
			if fs[2] == "failed" || fs[2] == "skipped" {
				failed++
				continue
			}
			if err := errors.Join(err1, err2, err3); err != nil {
				fh.Close()
				return nil, 0, fmt.Errorf("pgbench: %s: line %q: %w", f, sc.Text(), err)
			}
			end := time.Unix(sec, usec*1000)
			lat := time.Duration(us) * time.Microsecond
			ss = append(ss, sample{kind: opScript, due: end.Add(-lat), lat: lat, ok: true})
		}
		err = sc.Err()
		fh.Close()
		if err != nil {
			return nil, 0, fmt.Errorf("pgbench: %s: %w", f, err)
		}
	}
	return ss, failed, nil
}

// verify checks the queues against the transactions logged: every one
// leased its queue once (so the range_ids add up to them), and the
// tasks the script wrote decode to their own ids and never expire.
func (l *pgbenchLoad) verify(ctx context.Context) error {
	var leases int64
	for _, q := range l.queues {
		var rangeID int64
		if err := l.db.QueryRowContext(ctx, "SELECT range_id FROM task_queues WHERE range_hash = $1 AND task_queue_id = $2", q.hash, q.key).Scan(&rangeID); err != nil {
			return fmt.Errorf("pgbench: queue %s: %w", q.name, err)
		}
		leases += rangeID - q.rangeID
		rows, err := l.db.QueryContext(ctx, "SELECT task_id, data, data_encoding FROM tasks WHERE range_hash = $1 AND task_queue_id = $2 ORDER BY task_id DESC LIMIT 10", q.hash, q.key)
		if err != nil {
			return fmt.Errorf("pgbench: queue %s: %w", q.name, err)
		}
		for rows.Next() {
			var (
				id   int64
				data []byte
				enc  string
			)
			if err := rows.Scan(&id, &data, &enc); err != nil {
				rows.Close()
				return err
			}
			t, err := wire.DecodeAllocatedTaskInfo(enc, data)
			if err != nil || t.TaskID != id || !t.Data.ExpiryTime.IsZero() {
				rows.Close()
				return fmt.Errorf("pgbench: queue %s task %d: blob of task %d expiring %v: %v", q.name, id, t.TaskID, t.Data.ExpiryTime, err)
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
	}
	if leases != l.done {
		return fmt.Errorf("pgbench: logged %d transactions, its queues were leased %d times", l.done, leases)
	}
	return nil
}

// pid is the open-loop pgbench's process; 0 when none runs.
func (l *pgbenchLoad) pid() int {
	if l.running == nil {
		return 0
	}
	return l.running.Process.Pid
}

// rows is what the queues hold by the transactions logged.
func (l *pgbenchLoad) rows() Rows {
	n := int64(len(l.queues))
	return Rows{Tasks: n*pgbenchSeeded + pgbenchAppend*l.done, Queues: n}
}
