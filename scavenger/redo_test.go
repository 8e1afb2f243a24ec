package scavenger_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/tqscavenger/tqscavenger/internal/testdb"
	"github.com/tqscavenger/tqscavenger/scavenger"
	"github.com/tqscavenger/tqscavenger/seed"
	"github.com/tqscavenger/tqscavenger/sqlstore"
	"github.com/tqscavenger/tqscavenger/store"
)

// processedLog collects the "queue processed" debug records of a pass:
// the queues it processed, by table and key.
type processedLog struct {
	mu   sync.Mutex
	keys map[string]int
	// stop is called once stopAt queues are processed (0: never).
	stopAt int
	stop   func()
}

func (l *processedLog) Enabled(context.Context, slog.Level) bool { return true }
func (l *processedLog) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *processedLog) WithGroup(string) slog.Handler            { return l }
func (l *processedLog) Handle(_ context.Context, r slog.Record) error {
	if r.Message != "queue processed" {
		return nil
	}
	var table, queue string
	r.Attrs(func(a slog.Attr) bool {
		switch a.Key {
		case "table":
			table = a.Value.String()
		case "queue":
			queue = a.Value.String()
		}
		return true
	})
	l.mu.Lock()
	l.keys[table+" "+queue]++
	if len(l.keys) == l.stopAt {
		l.stop()
	}
	l.mu.Unlock()
	return nil
}

func (l *processedLog) set() map[string]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[string]int, len(l.keys))
	for k, n := range l.keys {
		out[k] = n
	}
	return out
}

// covered counts the queue rows of before (each table's keys, in key
// order) that cp's queue walks pass: at or before a position, or in one
// of its finished runs (a done walk passes every row).
func covered(cp scavenger.Checkpoint, before map[store.Table][]store.QueueKey) int {
	n := 0
	for _, w := range cp.Walks {
		if w.Walk != scavenger.WalkQueues {
			continue
		}
		for _, k := range before[w.Table] {
			in := w.Done || (w.After != nil && !w.After.Less(k))
			for _, r := range w.Finished {
				in = in || r.Contains(k)
			}
			if in {
				n++
			}
		}
	}
	return n
}

// TestResumeRedoesAtMostOneQueue: a pass whose 4 workers run queue jobs
// side by side, one of them held in its first queue (the first v2 row in
// key order) while the others finish queue after queue, is stopped
// mid-walk. Its checkpoints pass every queue its counts call processed
// but one at most (the counts a worker's heartbeat carries beside them:
// what a retry from that heartbeat redoes, the bound), and the
// pass resumed from its last checkpoint processes again at most one queue
// the stopped pass processed; it then leaves the rows a clean pass
// leaves. With one low-water mark alone (the build before finished runs)
// the position stays before the held queue: every queue the other
// workers finished was redone.
func TestResumeRedoesAtMostOneQueue(t *testing.T) {
	ctx := context.Background()
	seedIt := func(db *sqlstore.DB) {
		for _, s := range []seed.Spec{
			{Table: store.V2, NamePrefix: "multi", Queues: 30, TasksPerQueue: 10, Subqueues: 2, Expired: 0.7, Layout: seed.Shuffled, Seed: 4, IdleAge: time.Hour},
			{Table: store.V2, NamePrefix: "gone", Queues: 10, TasksPerQueue: 4, Subqueues: 2, Expired: 1, IdleAge: 72 * time.Hour},
			{NamePrefix: "single", Queues: 40, TasksPerQueue: 10, Expired: 0.5, Layout: seed.Shuffled, Seed: 5, IdleAge: 72 * time.Hour},
			{NamePrefix: "dead", Queues: 60, TasksPerQueue: 30, Expired: 1, IdleAge: 72 * time.Hour},
		} {
			s.Now = now
			if _, err := seed.Write(ctx, db, s); err != nil {
				t.Fatal(err)
			}
		}
	}
	clean := testdb.Open(t, sqlstore.SQLite)
	seedIt(clean)
	if _, err := scavenger.New(clean, baseConfig()).Run(ctx); err != nil {
		t.Fatal(err)
	}
	want := digest(t, clean)

	db := testdb.Open(t, sqlstore.SQLite)
	seedIt(db)
	before := map[store.Table][]store.QueueKey{store.V1: listKeys(t, db, store.V1), store.V2: listKeys(t, db, store.V2)}
	held := before[store.V2][0]
	release := make(chan struct{})
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	var (
		mu sync.Mutex
		// last is the pass's last checkpoint; worst the most queues the
		// counts read at a checkpoint (as a heartbeat reads them) were
		// ahead of its positions.
		last  *scavenger.Checkpoint
		worst int64
		s     *scavenger.Scavenger
	)
	cfg := baseConfig()
	// Two workers: one waits on the held queue, the other processes.
	// With more, what the others finish between a checkpoint and the
	// counts read after it is a matter of timing (FlushCheckpoint), as in
	// the whole pass below.
	cfg.Workers = 2
	cfg.CheckpointInterval = 1 // every advance
	// The pass is stopped once it processed 12 queues, all while the
	// held one waits.
	log1 := &processedLog{keys: map[string]int{}, stopAt: 12, stop: stop}
	cfg.Logger = slog.New(log1)
	cfg.Middleware = []store.Middleware{hooked(func(ctx context.Context, c call) error {
		if c.op == "read" && string(c.queue.ID) == string(held.ID) && c.queue.RangeHash == held.RangeHash {
			select {
			case <-release:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return nil
	})}
	cfg.Checkpoint = func(_ context.Context, cp scavenger.Checkpoint) error {
		n := s.Stats().QueuesProcessed // after the positions, as a heartbeat reads them
		mu.Lock()
		defer mu.Unlock()
		c := cp
		last = &c
		if ahead := n - int64(covered(cp, before)); ahead > worst {
			worst = ahead
		}
		return nil
	}
	s = scavenger.New(db, cfg)
	st, err := s.Run(runCtx)
	close(release)
	first := log1.set()
	if err == nil || len(first) < 12 {
		t.Fatalf("the pass was not stopped mid-walk: %v (%d queues processed)", err, st.QueuesProcessed)
	}
	mu.Lock()
	final, ahead := last, worst
	mu.Unlock()
	if final == nil {
		t.Errorf("the pass stopped after processing %d queues wrote no checkpoint: a retry redoes them all", len(first))
	}
	if ahead > 1 {
		t.Errorf("a checkpoint's counts called %d queues processed beyond its positions: a retry from it redoes them, want at most 1", ahead)
	}

	// Resumed from the stopped pass's last checkpoint. Each of its own
	// checkpoints passes every row the one it resumed from passes (the
	// rows left then): a retry from it redoes none of them. A checkpoint
	// written while the listing skips a page's rows of the finished runs
	// must hold them as finished already.
	cfg = baseConfig()
	cfg.Workers = 4
	cfg.Resume = final // none: from the start
	log2 := &processedLog{keys: map[string]int{}}
	cfg.Logger = slog.New(log2)
	left := map[store.Table][]store.QueueKey{store.V1: listKeys(t, db, store.V1), store.V2: listKeys(t, db, store.V2)}
	passed := 0
	if final != nil {
		passed = covered(*final, left)
	}
	lost := 0
	cfg.CheckpointInterval = 1 // every change
	cfg.Checkpoint = func(_ context.Context, cp scavenger.Checkpoint) error {
		mu.Lock()
		defer mu.Unlock()
		lost = max(lost, passed-covered(cp, left))
		return nil
	}
	st2, err := scavenger.New(db, cfg).Run(ctx)
	mu.Lock()
	if lost > 0 {
		t.Errorf("a checkpoint of the resumed pass passes %d fewer of the rows left than the checkpoint it resumed from (%d): a retry from it redoes them", lost, passed)
	}
	mu.Unlock()
	if err != nil || st2.Outcome != scavenger.Completed {
		t.Fatalf("resumed pass: %v %v", st2.Outcome, err)
	}
	again := 0
	for k := range log2.set() {
		if first[k] > 0 {
			again++
			t.Logf("processed again: %s", k)
		}
	}
	t.Logf("the stopped pass processed %d queues, the resumed one %d, %d of them again (resumed from %v; a checkpoint's counts were at most %d queues ahead of it)", len(first), st2.QueuesProcessed, again, st2.ResumedFrom, ahead)
	if again > 1 {
		t.Errorf("the resumed pass processed %d queues the stopped pass had processed: want at most 1", again)
	}
	if got := digest(t, db); got != want {
		t.Errorf("stopped and resumed leaves %s, a clean pass %s", got, want)
	}

	// A whole pass, a checkpoint at every advance: a window's queues
	// left empty wait for their rows' delete, and are counted only then.
	// One worker: with more, the counts read after the positions are also
	// ahead by what the other workers finish in between (FlushCheckpoint),
	// which is a matter of timing: at the whole share (a SQLite file
	// proven alone) two finished in between where the duty cycle's pauses
	// had left none.
	db = testdb.Open(t, sqlstore.SQLite)
	seedIt(db)
	worst = 0
	cfg = baseConfig()
	cfg.Workers = 1
	cfg.TaskBatchSize = 64 // several scans per window, rows deleted between
	cfg.CheckpointInterval = 1
	cfg.Checkpoint = func(_ context.Context, cp scavenger.Checkpoint) error {
		n := s.Stats().QueuesProcessed
		mu.Lock()
		defer mu.Unlock()
		if ahead := n - int64(covered(cp, before)); ahead > worst {
			worst = ahead
		}
		return nil
	}
	s = scavenger.New(db, cfg)
	if _, err := s.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if worst > 1 {
		t.Errorf("whole pass: a checkpoint's counts called %d queues processed beyond its positions: want at most 1", worst)
	}
}
