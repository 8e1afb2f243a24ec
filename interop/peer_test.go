package interop

// cmd/temporal-scavenger, the lab's peer, on each engine: one pass of
// Temporal's own task queue scavenger over a seeded database deletes what
// Temporal's rules delete (expired tasks up to the first live one, idle
// empty queues past the 48 h grace, never its own scanner's queue nor
// the v2 tables) and says so in its summary. Runs under plain `go test`
// (no Temporal server): SQLite always, PostgreSQL and MariaDB with
// TQS_TEST_POSTGRES / TQS_TEST_MYSQL. It builds the command once (about
// half a minute with Temporal's packages already in the build cache,
// minutes cold) unless TQS_INTEROP_PEER_BIN names a build of it.

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/tqscavenger/tqscavenger/internal/testdb"
	"github.com/tqscavenger/tqscavenger/seed"
	"github.com/tqscavenger/tqscavenger/sqlstore"
	"github.com/tqscavenger/tqscavenger/store"
)

var peerBin struct {
	once sync.Once
	path string
	err  error
}

// peerBinary returns the temporal-scavenger command: TQS_INTEROP_PEER_BIN,
// or a build of ./cmd/temporal-scavenger made once per test process.
func peerBinary(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("TQS_INTEROP_PEER_BIN"); p != "" {
		return p
	}
	peerBin.once.Do(func() {
		dir, err := os.MkdirTemp("", "tqs-peer-")
		if err != nil {
			peerBin.err = err
			return
		}
		peerBin.path = filepath.Join(dir, "temporal-scavenger")
		peerBin.err = goBuild(".", peerBin.path, "./cmd/temporal-scavenger")
	})
	if peerBin.err != nil {
		t.Fatal(peerBin.err)
	}
	return peerBin.path
}

// peerSummary is the part of the command's JSON summary the test reads.
type peerSummary struct {
	Complete       bool     `json:"complete"`
	OK             bool     `json:"ok"`
	WallSeconds    float64  `json:"wall_seconds"`
	WorkSeconds    float64  `json:"work_seconds"`
	TasksDeleted   int64    `json:"tasks_deleted"`
	QueuesDeleted  int64    `json:"queues_deleted"`
	TasksProcessed int64    `json:"tasks_processed"`
	RowsBefore     peerRows `json:"rows_before"`
	RowsAfter      peerRows `json:"rows_after"`
	Error          string   `json:"error"`
}

// peerRows are the summary's row counts of the four task tables.
type peerRows struct {
	TaskQueues   *int64 `json:"task_queues"`
	Tasks        *int64 `json:"tasks"`
	TaskQueuesV2 *int64 `json:"task_queues_v2"`
	TasksV2      *int64 `json:"tasks_v2"`
}

// runPeer runs the command on dsn with args and decodes its summary.
func runPeer(t *testing.T, dsn string, args ...string) peerSummary {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, peerBinary(t), append([]string{"--db", dsn, "--timeout", "4m"}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("temporal-scavenger --db %s: %v\nstdout: %s\nstderr: %s", sqlstore.Redact(dsn), err, stdout.Bytes(), stderr.Bytes())
	}
	var s peerSummary
	if err := json.Unmarshal(stdout.Bytes(), &s); err != nil {
		t.Fatalf("summary: %v\n%s", err, stdout.Bytes())
	}
	return s
}

// The peer's seeded queues, and what Temporal 1.32.1's scavenger must
// leave of each (its batches are 16 tasks, taskBatchSize).
var peerSeed = []struct {
	spec   seed.Spec
	tasks  int // tasks left per queue
	queues int // queue rows left
}{
	// Expired and idle for 72 h: every task, then the queue.
	{seed.Spec{NamePrefix: "idle", Queues: 3, TasksPerQueue: 20, Expired: 1, IdleAge: 72 * time.Hour}, 0, 0},
	// A full batch of expired tasks, then live ones (no expiry): the
	// batch goes, the live tasks and their queue stay.
	{seed.Spec{NamePrefix: "live", Queues: 1, TasksPerQueue: 32, Expired: 0.5, NoExpiry: 0.5, IdleAge: 72 * time.Hour}, 16, 1},
	// Expired but updated an hour ago: the tasks go, the queue is within
	// the grace.
	{seed.Spec{NamePrefix: "recent", Queues: 1, TasksPerQueue: 5, Expired: 1, IdleAge: time.Hour}, 0, 1},
	// A live task at the head: nothing behind it goes.
	{seed.Spec{NamePrefix: "head", Queues: 1, TasksPerQueue: 10, Expired: 0.9, NoExpiry: 0.1, Layout: seed.LiveFirst, IdleAge: 72 * time.Hour}, 10, 1},
	// Idle and empty: the queue goes.
	{seed.Spec{NamePrefix: "empty", Queues: 2, IdleAge: 72 * time.Hour}, 0, 0},
	// Temporal's own scanner queue is never deleted.
	{seed.Spec{NamePrefix: "temporal-sys-tl-scanner", Queues: 1, IdleAge: 72 * time.Hour}, 0, 1},
	// The fairness tables are not the v1 TaskManager's: untouched.
	{seed.Spec{Table: store.V2, NamePrefix: "fair", Queues: 2, TasksPerQueue: 5, Expired: 1, IdleAge: 72 * time.Hour}, 5, 2},
}

func TestTemporalPeer(t *testing.T) {
	peerBinary(t) // build once, before the parallel subtests
	for _, e := range testdb.Engines {
		t.Run(string(e), func(t *testing.T) {
			t.Parallel()
			dsn := testdb.DSN(t, e)
			checkPeerPass(t, e, dsn)
		})
	}
	// Temporal's own SQLite schema, created by its sqlite plugin (the
	// setup connect attribute) on a first, empty pass.
	t.Run("sqlite-temporal-schema", func(t *testing.T) {
		t.Parallel()
		path := filepath.Join(t.TempDir(), "temporal.db")
		empty := runPeer(t, "sqlite:"+path, "--connect-attr", "mode=rwc", "--connect-attr", "setup=true")
		if !empty.OK || empty.TasksDeleted != 0 || empty.QueuesDeleted != 0 {
			t.Fatalf("pass over Temporal's empty schema: %+v", empty)
		}
		checkPeerPass(t, sqlstore.SQLite, "sqlite:"+path)
	})
}

// checkPeerPass seeds peerSeed into the database of dsn, runs one pass of
// the peer and checks what it left and what it said.
func checkPeerPass(t *testing.T, e sqlstore.Engine, dsn string) {
	ctx := context.Background()
	db := testdb.OpenDSN(t, dsn)
	now := time.Now()
	var wantTasks, wantQueues, seededTasks, seededQueues int64
	for _, s := range peerSeed {
		s.spec.Now = now
		if _, err := seed.Write(ctx, db, s.spec); err != nil {
			t.Fatal(err)
		}
		if s.spec.Table == store.V2 {
			continue
		}
		seededTasks += int64(s.spec.Queues * s.spec.TasksPerQueue)
		seededQueues += int64(s.spec.Queues)
		wantTasks += int64(s.spec.Queues * s.tasks)
		wantQueues += int64(s.queues)
	}
	names := map[string]string{} // task_queue_id → name, before the pass
	raw := testdb.SQL(t, db)
	before, err := readQueueRows(ctx, raw, "task_queues")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range before {
		names[string(r.id)] = r.info.GetName()
	}

	sum := runPeer(t, dsn)
	t.Logf("%s: %.2fs wall, %.3fs of work: deleted %d tasks and %d queues", e, sum.WallSeconds, sum.WorkSeconds, sum.TasksDeleted, sum.QueuesDeleted)
	if !sum.Complete || !sum.OK || sum.Error != "" {
		t.Errorf("summary: complete %t, ok %t, error %q", sum.Complete, sum.OK, sum.Error)
	}
	if sum.TasksDeleted != seededTasks-wantTasks || sum.QueuesDeleted != seededQueues-wantQueues {
		t.Errorf("Temporal reported deleting %d tasks and %d queues, want %d and %d", sum.TasksDeleted, sum.QueuesDeleted, seededTasks-wantTasks, seededQueues-wantQueues)
	}
	for _, c := range []struct {
		name      string
		got       *int64
		want      int64
		wantAfter int64
		after     *int64
	}{
		{"task_queues", sum.RowsBefore.TaskQueues, seededQueues, wantQueues, sum.RowsAfter.TaskQueues},
		{"tasks", sum.RowsBefore.Tasks, seededTasks, wantTasks, sum.RowsAfter.Tasks},
		{"task_queues_v2", sum.RowsBefore.TaskQueuesV2, 2, 2, sum.RowsAfter.TaskQueuesV2},
		{"tasks_v2", sum.RowsBefore.TasksV2, 10, 10, sum.RowsAfter.TasksV2},
	} {
		if c.got == nil || c.after == nil || *c.got != c.want || *c.after != c.wantAfter {
			t.Errorf("%s: summary's rows before %v and after %v, want %d and %d", c.name, ptr(c.got), ptr(c.after), c.want, c.wantAfter)
		}
	}

	// What is left, read with Temporal's protobuf types.
	queues, err := readQueueRows(ctx, raw, "task_queues")
	if err != nil {
		t.Fatal(err)
	}
	tasks, err := readTaskRows(ctx, raw, "tasks")
	if err != nil {
		t.Fatal(err)
	}
	leftQueues := map[string]bool{}
	for _, q := range queues {
		leftQueues[q.info.GetName()] = true
	}
	leftTasks := map[string]int{}
	liveLeft := 0
	for _, r := range tasks {
		name := names[string(r.id)]
		leftTasks[name]++
		exp := r.info.GetData().GetExpiryTime()
		if name == "live-0" && (exp == nil || exp.AsTime().Unix() <= 0) {
			liveLeft++
		}
		if exp != nil && exp.AsTime().Unix() > 0 && exp.AsTime().Before(now) && name != "head-0" {
			t.Errorf("expired task %d of %s left", r.taskID, name)
		}
	}
	for _, s := range peerSeed {
		if s.spec.Table == store.V2 {
			continue
		}
		for i := range s.spec.Queues {
			name := s.spec.NamePrefix + "-" + strconv.Itoa(i)
			if leftTasks[name] != s.tasks {
				t.Errorf("%s: %d tasks left, want %d", name, leftTasks[name], s.tasks)
			}
			if want := s.queues > 0; leftQueues[name] != want {
				t.Errorf("%s: queue row left %t, want %t", name, leftQueues[name], want)
			}
		}
	}
	if liveLeft != 16 {
		t.Errorf("live-0: %d live tasks left, want its 16", liveLeft)
	}
}

func ptr(p *int64) any {
	if p == nil {
		return nil
	}
	return *p
}
