package scavenger

// The low-water marks of a pass's walks, and the checkpoints made of them.

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/tqscavenger/tqscavenger/executor"
	"github.com/tqscavenger/tqscavenger/store"
)

// checkpointer keeps the low-water mark of each walk of a pass and hands
// the pass's Checkpoint to Config.Checkpoint when a mark advances, at most
// every Config.CheckpointInterval (and at once when a walk is done). A nil
// checkpointer tracks nothing.
type checkpointer struct {
	fn       func(context.Context, Checkpoint) error
	interval time.Duration
	log      *slog.Logger
	base     Checkpoint // everything but the walks

	// writing serialises the calls of fn, each with a snapshot taken
	// under it, so that a later position is never overwritten by an
	// earlier one.
	writing sync.Mutex

	mu    sync.Mutex
	walks []*walkMark
	last  time.Time
	dirty bool
}

func newCheckpointer(cfg Config, id string) *checkpointer {
	if cfg.Checkpoint == nil {
		return nil
	}
	c := &checkpointer{
		fn: cfg.Checkpoint, interval: cfg.CheckpointInterval, log: cfg.Logger,
		base: Checkpoint{Version: CheckpointVersion, Partition: cfg.Partition.String(), Settings: SettingsDigest(cfg), Database: id},
	}
	return c
}

// walk returns the mark of walk w of table t, starting at from.
func (c *checkpointer) walk(from WalkPosition) *walkMark {
	if c == nil {
		return nil
	}
	m := &walkMark{c: c, pos: from}
	c.mu.Lock()
	c.walks = append(c.walks, m)
	c.mu.Unlock()
	return m
}

// changed notes that a mark moved and writes a checkpoint if the last one
// is older than the interval, or now.
func (c *checkpointer) changed(ctx context.Context, now bool) {
	c.mu.Lock()
	c.dirty = true
	due := now || time.Since(c.last) >= c.interval
	c.mu.Unlock()
	if due {
		c.flush(ctx)
	}
}

// flush writes the current positions if they changed since the last write.
func (c *checkpointer) flush(ctx context.Context) {
	if c == nil {
		return
	}
	c.writing.Lock()
	defer c.writing.Unlock()
	c.mu.Lock()
	if !c.dirty {
		c.mu.Unlock()
		return
	}
	cp := c.base
	for _, w := range c.walks {
		cp.Walks = append(cp.Walks, w.snapshot())
	}
	c.dirty, c.last = false, time.Now()
	c.mu.Unlock()
	if err := c.fn(ctx, cp); err != nil {
		// The pass's work is right without its checkpoint; a rerun would
		// redo more of it.
		c.log.Error("checkpoint not written", "err", err)
		c.mu.Lock()
		c.dirty = true
		c.mu.Unlock()
	}
}

// walkMark is the low-water mark of one walk: the walk reads pages of keys
// in key order, and its mark passes a page once every job made from the
// page's rows is done. A failed, deferred or dropped job holds it at the
// start of its page.
type walkMark struct {
	c *checkpointer
	// pos and pages are guarded by c.mu.
	pos   WalkPosition
	pages []*page
}

// page is the rows of one listing statement: jobs pending, and the last
// key once the page is sealed (all its jobs submitted).
type page struct {
	end     store.QueueKey
	pending int
	sealed  bool
}

// open starts a page.
func (m *walkMark) open() *page {
	if m == nil {
		return nil
	}
	pg := &page{}
	m.c.mu.Lock()
	m.pages = append(m.pages, pg)
	m.c.mu.Unlock()
	return pg
}

// track wraps j so that its page knows when it is done.
func (m *walkMark) track(pg *page, j executor.Job) executor.Job {
	if m == nil {
		return j
	}
	m.c.mu.Lock()
	pg.pending++
	m.c.mu.Unlock()
	return &trackedJob{Job: j, m: m, pg: pg}
}

// seal says that every job of pg is submitted; end is its last key.
func (m *walkMark) seal(ctx context.Context, pg *page, end store.QueueKey) {
	if m == nil {
		return
	}
	m.c.mu.Lock()
	pg.sealed, pg.end = true, end
	moved := m.advance()
	m.c.mu.Unlock()
	if moved {
		m.c.changed(ctx, false)
	}
}

// done says that the walk made every job and they all ended; it is done
// unless one failed or was dropped (its page is still pending).
func (m *walkMark) done(ctx context.Context) {
	if m == nil {
		return
	}
	m.c.mu.Lock()
	if len(m.pages) > 0 {
		m.c.mu.Unlock()
		return
	}
	m.pos.Done = true
	m.c.mu.Unlock()
	m.c.changed(ctx, true)
}

func (m *walkMark) jobDone(ctx context.Context, pg *page) {
	m.c.mu.Lock()
	pg.pending--
	moved := m.advance()
	m.c.mu.Unlock()
	if moved {
		m.c.changed(ctx, false)
	}
}

// advance moves pos past the finished pages at the head; c.mu is held.
func (m *walkMark) advance() bool {
	moved := false
	for len(m.pages) > 0 && m.pages[0].sealed && m.pages[0].pending == 0 {
		k := m.pages[0].end
		m.pos.After = &k
		m.pages[0] = nil
		m.pages = m.pages[1:]
		moved = true
	}
	return moved
}

// snapshot returns pos; c.mu is held.
func (m *walkMark) snapshot() WalkPosition {
	p := m.pos
	if p.After != nil {
		k := *p.After
		p.After = &k
	}
	return p
}

// trackedJob is a job whose Done moves its walk's mark.
type trackedJob struct {
	executor.Job
	m  *walkMark
	pg *page
}

func (j *trackedJob) Run(ctx context.Context) executor.Status {
	s := j.Job.Run(ctx)
	if s == executor.Done {
		j.m.jobDone(ctx, j.pg)
	}
	return s
}
