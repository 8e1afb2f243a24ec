package interop

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tqscavenger/tqscavenger/scavenger"
	"github.com/tqscavenger/tqscavenger/sqlstore"
	"github.com/tqscavenger/tqscavenger/store"
)

// mode is a tqscavenger mode the suite runs in.
type mode struct {
	name                        string
	pastLiveHead, belowAckLevel bool
}

var (
	modeDefault = mode{name: "default"}
	modeAll     = mode{name: "past-live-head+below-ack-level", pastLiveHead: true, belowAckLevel: true}
)

func (m mode) flags() []string {
	var f []string
	if m.pastLiveHead {
		f = append(f, "--past-live-head")
	}
	if m.belowAckLevel {
		f = append(f, "--below-ack-level")
	}
	return f
}

func (m mode) config(cfg scavenger.Config) scavenger.Config {
	cfg.PastLiveHead, cfg.BelowAckLevel = m.pastLiveHead, m.belowAckLevel
	return cfg
}

// counts are what a scavenger did over a phase.
type counts struct {
	Passes, Failed            int
	TasksDeleted              map[string]int64 // by reason
	QueuesDeleted, QueuesKept int64
	PermanentErrors           int64
	Pace                      string // the pace serve reported (tqscavenger_pace) or the passes ran at
}

func (c counts) tasks() int64 {
	var n int64
	for _, v := range c.TasksDeleted {
		n += v
	}
	return n
}

func (c counts) String() string {
	pace := ""
	if c.Pace != "" {
		pace = " at pace " + c.Pace
	}
	return fmt.Sprintf("%d passes (%d failed)%s, tasks deleted %d %v, queues deleted %d, queue deletes refused by the fence %d, permanent errors %d",
		c.Passes, c.Failed, pace, c.tasks(), c.TasksDeleted, c.QueuesDeleted, c.QueuesKept, c.PermanentErrors)
}

func (c *counts) add(o counts) {
	c.Passes += o.Passes
	c.Failed += o.Failed
	if c.TasksDeleted == nil {
		c.TasksDeleted = map[string]int64{}
	}
	for k, v := range o.TasksDeleted {
		c.TasksDeleted[k] += v
	}
	c.QueuesDeleted += o.QueuesDeleted
	c.QueuesKept += o.QueuesKept
	c.PermanentErrors += o.PermanentErrors
	if o.Pace != "" {
		c.Pace = o.Pace
	}
}

func (c *counts) addStats(st scavenger.Stats, err error) {
	c.Passes++
	if err != nil {
		c.Failed++
	}
	if c.TasksDeleted == nil {
		c.TasksDeleted = map[string]int64{}
	}
	for _, ts := range st.Tables {
		for r, n := range ts.TasksDeleted {
			c.TasksDeleted[string(r)] += n
		}
	}
	c.QueuesDeleted += st.QueuesDeleted
	c.QueuesKept += st.QueuesKept
	c.PermanentErrors += st.Errors
	if st.Pace.Mode != "" {
		c.Pace = string(st.Pace.Mode)
	}
}

// side is a scavenger running beside Temporal for a phase.
type side interface {
	stop() (counts, error)
}

// serveProc is `tqscavenger serve` as an operator runs it: a short
// schedule, the real 48 h grace.
type serveProc struct {
	cmd     *exec.Cmd
	done    chan error
	listen  string
	logPath string
}

// At the default pace (gentle), given Temporal's metrics endpoint as an
// operator beside Temporal would (--temporal-metrics): its
// persistence_latency is the controller's best signal, and this is the one
// place where tqscavenger's reading of it meets a real server's names.
func startServe(t *testing.T, s settings, dsn, listen, temporalMetrics, logPath string, m mode) (*serveProc, error) {
	args := []string{"serve", "--db", dsn, "--every", "2s", "--unsafe-short-interval", "--jitter", "0", "--run-at-start",
		"--grace", "48h", "--listen", listen, "--max-conns", "2", "--log-format", "json",
		"--temporal-metrics", temporalMetrics}
	args = append(args, m.flags()...)
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(s.tqs, args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, err
	}
	p := &serveProc{cmd: cmd, done: make(chan error, 1), listen: listen, logPath: logPath}
	go func() { p.done <- cmd.Wait(); f.Close() }()
	// Ready when the first pass has completed.
	deadline := time.Now().Add(time.Minute)
	for {
		c, err := p.counts()
		if err == nil && c.Passes > 0 {
			return p, nil
		}
		select {
		case err := <-p.done:
			return nil, fmt.Errorf("tqscavenger serve exited (%v):\n%s", err, tail(logPath, 20))
		case <-time.After(300 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			p.kill()
			return nil, fmt.Errorf("tqscavenger serve completed no pass in 1m (%v):\n%s", err, tail(logPath, 20))
		}
	}
}

// counts reads serve's /metrics.
func (p *serveProc) counts() (counts, error) {
	body, err := scrape("http://" + p.listen + "/metrics")
	if err != nil {
		return counts{}, err
	}
	c := counts{TasksDeleted: map[string]int64{}}
	for _, m := range parseProm(body) {
		v := int64(m.value)
		switch m.name {
		case "tqscavenger_passes_completed_total":
			c.Passes += int(v)
		case "tqscavenger_passes_failed_total":
			c.Passes += int(v)
			c.Failed += int(v)
		case "tqscavenger_tasks_deleted_total":
			c.TasksDeleted[m.labels["reason"]] += v
		case "tqscavenger_queues_deleted_total":
			c.QueuesDeleted += v
		case "tqscavenger_queues_kept_total":
			c.QueuesKept += v
		case "tqscavenger_pace":
			if m.value == 1 {
				c.Pace = m.labels["pace"]
			}
		case "tqscavenger_persistence_errors_total":
			if m.labels["kind"] == "permanent" {
				c.PermanentErrors += v
			}
		}
	}
	return c, nil
}

// stop reads the counters, then stops serve as systemd would (SIGTERM).
func (p *serveProc) stop() (counts, error) {
	c, err := p.counts()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case werr := <-p.done:
		if werr != nil && err == nil {
			err = fmt.Errorf("tqscavenger serve exited with %v", werr)
		}
	case <-time.After(45 * time.Second):
		p.kill()
		if err == nil {
			err = fmt.Errorf("tqscavenger serve did not stop within 45s of SIGTERM")
		}
	}
	return c, err
}

func (p *serveProc) kill() {
	_ = p.cmd.Process.Kill()
}

// libLoop runs passes in-process every 2 s with a Config the test controls:
// the way a broken scavenger (a clock ahead, no fence) is run, since the
// binary has no switch for that.
type libLoop struct {
	cancel context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex
	c      counts
	db     *sqlstore.DB
}

func startLibLoop(ctx context.Context, dsn string, cfg scavenger.Config) (*libLoop, error) {
	db, err := sqlstore.Open(ctx, dsn, sqlstore.Options{MaxConns: 2})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	l := &libLoop{cancel: cancel, done: make(chan struct{}), db: db}
	go func() {
		defer close(l.done)
		for {
			st, err := scavenger.New(db, cfg).Run(ctx)
			if ctx.Err() != nil {
				return
			}
			l.mu.Lock()
			l.c.addStats(st, err)
			l.mu.Unlock()
			select {
			case <-ctx.Done():
				return
			case <-time.After(2 * time.Second):
			}
		}
	}()
	return l, nil
}

func (l *libLoop) stop() (counts, error) {
	l.cancel()
	<-l.done
	l.db.Close()
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.c, nil
}

// passConfig is the Config of an in-process pass in mode m.
func passConfig(m mode, logPath string) (scavenger.Config, func()) {
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	var logger *slog.Logger
	closeFn := func() {}
	if err == nil {
		logger = slog.New(slog.NewJSONHandler(f, nil))
		closeFn = func() { f.Close() }
	}
	return m.config(scavenger.Config{Rules: scavenger.Rules{Grace: 48 * time.Hour}, Hooks: scavenger.Hooks{Logger: logger}}), closeFn
}

// hookStore passes every call on to next, except DeleteQueues when a hook
// is set. It spells out every method of store.Store, so that a method added
// to the contract is a compile error here, not a call that bypasses the
// hook.
type hookStore struct {
	next         store.Store
	deleteQueues func(ctx context.Context, t store.Table, fences []store.QueueFence) (int64, error)
}

func (h *hookStore) Tables(ctx context.Context) ([]store.Table, error) { return h.next.Tables(ctx) }

func (h *hookStore) ListQueues(ctx context.Context, t store.Table, after *store.QueueKey, limit int) ([]store.QueueRow, error) {
	return h.next.ListQueues(ctx, t, after, limit)
}

func (h *hookStore) GetQueue(ctx context.Context, t store.Table, q store.QueueKey) (store.QueueRow, error) {
	return h.next.GetQueue(ctx, t, q)
}

func (h *hookStore) ReadTasks(ctx context.Context, t store.Table, q store.QueueKey, after *store.TaskKey, limit int) ([]store.TaskRow, error) {
	return h.next.ReadTasks(ctx, t, q, after, limit)
}

func (h *hookStore) ScanTasks(ctx context.Context, t store.Table, after store.TaskPos, through store.QueueKey, limit int) ([]store.ScannedTask, error) {
	return h.next.ScanTasks(ctx, t, after, through, limit)
}

func (h *hookStore) ListTaskQueueIDs(ctx context.Context, t store.Table, after *store.QueueKey, limit int) ([]store.TaskQueueRef, error) {
	return h.next.ListTaskQueueIDs(ctx, t, after, limit)
}

func (h *hookStore) DeleteTaskSets(ctx context.Context, t store.Table, sets []store.TaskSet) (int64, error) {
	return h.next.DeleteTaskSets(ctx, t, sets)
}

func (h *hookStore) DeleteTasks(ctx context.Context, t store.Table, q store.QueueKey, r store.TaskRange, limit int) (int64, error) {
	return h.next.DeleteTasks(ctx, t, q, r, limit)
}

func (h *hookStore) DeleteOrphanTasks(ctx context.Context, t store.Table, q store.QueueKey, parents []store.QueueKey, keys []store.TaskKey) (int64, error) {
	return h.next.DeleteOrphanTasks(ctx, t, q, parents, keys)
}

func (h *hookStore) DeleteQueues(ctx context.Context, t store.Table, fences []store.QueueFence) (int64, error) {
	if h.deleteQueues != nil {
		return h.deleteQueues(ctx, t, fences)
	}
	return h.next.DeleteQueues(ctx, t, fences)
}

var _ store.Store = (*hookStore)(nil)

// hold is the deterministic fence race: the DeleteQueues call that carries
// the target queue's fence waits until released (the test releases it once
// matching has re-leased the queue), then goes to the store unchanged.
type hold struct {
	table   store.Table
	key     store.QueueKey
	held    chan store.QueueFence // receives the target's fence when held
	release chan struct{}
	once    sync.Once
	result  chan heldResult
	// read reads the target's row right after the held call returns,
	// before matching could notice anything and re-create it.
	read func(ctx context.Context) (rangeID int64, present bool, err error)
}

// heldResult is what the held call did.
type heldResult struct {
	batch   int64 // rows the whole held batch deleted
	rangeID int64 // the target's range_id just after it, if present
	present bool
	err     error
}

func newHold(t store.Table, key store.QueueKey) *hold {
	return &hold{table: t, key: key, held: make(chan store.QueueFence, 1), release: make(chan struct{}), result: make(chan heldResult, 1)}
}

func (h *hold) middleware(next store.Store) store.Store {
	return &hookStore{next: next, deleteQueues: func(ctx context.Context, t store.Table, fences []store.QueueFence) (int64, error) {
		if t == h.table {
			for _, f := range fences {
				if f.QueueKey.Compare(h.key) == 0 {
					first := false
					h.once.Do(func() { first = true })
					if !first {
						break
					}
					h.held <- f
					select {
					case <-h.release:
					case <-ctx.Done():
						return 0, ctx.Err()
					}
					n, err := next.DeleteQueues(ctx, t, fences)
					r := heldResult{batch: n, err: err}
					r.rangeID, r.present, _ = h.read(ctx)
					h.result <- r
					return n, err
				}
			}
		}
		return next.DeleteQueues(ctx, t, fences)
	}}
}

// noFence is a broken scavenger: its queue deletes drop the range_id
// condition, so a queue a matching host took since the listing is deleted
// anyway.
func noFence(raw *sql.DB, engine string) store.Middleware {
	return func(next store.Store) store.Store {
		return &hookStore{next: next, deleteQueues: func(ctx context.Context, t store.Table, fences []store.QueueFence) (int64, error) {
			table := "task_queues"
			if t == store.V2 {
				table = "task_queues_v2"
			}
			var n int64
			for _, f := range fences {
				res, err := raw.ExecContext(ctx, q(engine, "DELETE FROM "+table+" WHERE range_hash = ? AND task_queue_id = ?"), int64(f.RangeHash), f.ID)
				if err != nil {
					return n, err
				}
				k, _ := res.RowsAffected()
				n += k
			}
			return n, nil
		}}
	}
}

// q rewrites ? placeholders as $n for PostgreSQL.
func q(engine, s string) string {
	if engine != "postgres" {
		return s
	}
	var b strings.Builder
	n := 0
	for _, r := range s {
		if r == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// promSample is one line of a Prometheus text exposition.
type promSample struct {
	name   string
	labels map[string]string
	value  float64
}

func parseProm(body string) []promSample {
	var out []promSample
	sc := bufio.NewScanner(strings.NewReader(body))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		name, rest := line, ""
		labels := map[string]string{}
		if i := strings.IndexByte(line, '{'); i >= 0 {
			j := strings.LastIndexByte(line, '}')
			if j < i {
				continue
			}
			name, rest = line[:i], strings.TrimSpace(line[j+1:])
			for _, kv := range splitLabels(line[i+1 : j]) {
				k, v, ok := strings.Cut(kv, "=")
				if ok {
					labels[k] = strings.Trim(v, `"`)
				}
			}
		} else if i := strings.IndexByte(line, ' '); i >= 0 {
			name, rest = line[:i], strings.TrimSpace(line[i+1:])
		}
		if f := strings.Fields(rest); len(f) > 0 {
			if v, err := strconv.ParseFloat(f[0], 64); err == nil {
				out = append(out, promSample{name: name, labels: labels, value: v})
			}
		}
	}
	return out
}

// splitLabels splits a="x",b="y,z" at commas outside quotes.
func splitLabels(s string) []string {
	var out []string
	inQ, start := false, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '"':
			inQ = !inQ
		case ',':
			if !inQ {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}

func logPath(s settings, tag, name string) string {
	return filepath.Join(s.work, tag, name)
}
