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
// every Config.CheckpointInterval (and at once when a walk is done). An
// advance within the interval of the last write is written when the
// interval is over, even if nothing moves after it: a position is never
// held back longer than the interval. A nil checkpointer tracks nothing.
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
	// timer writes an advance held back by the interval; stopped says
	// the pass ended (no timer is armed after it). pending counts the
	// timers' writes running, for stop to wait on.
	timer   *time.Timer
	stopped bool
	pending sync.WaitGroup
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
	wait := c.interval - time.Since(c.last)
	due := now || wait <= 0
	if !due && c.timer == nil && !c.stopped {
		c.pending.Add(1)
		c.timer = time.AfterFunc(wait, func() {
			defer c.pending.Done()
			c.mu.Lock()
			c.timer = nil
			c.mu.Unlock()
			c.flush(ctx)
		})
	}
	c.mu.Unlock()
	if due {
		c.flush(ctx)
	}
}

// stop ends the timed writes: none is armed after it, and those running
// have returned. The pass's last write comes after it (flush).
func (c *checkpointer) stop() {
	if c == nil {
		return
	}
	c.mu.Lock()
	c.stopped = true
	if c.timer != nil && c.timer.Stop() {
		c.timer = nil
		c.pending.Done()
	}
	c.mu.Unlock()
	c.pending.Wait()
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
	cp.Checksum = cp.Sum()
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
// in key order, and its mark passes a key once the work of its row is
// done (for a queue row: its tasks, and its row's delete if it is to go).
// The mark moves a queue at a time, inside a page and inside a window of
// queues. It is one low-water mark over the jobs that run side by side, so
// a pass that dies redoes at most the queues finished past its first
// unfinished one: up to one per worker (Pace.Workers), measured 0-4 at 4
// workers beside a real Temporal (interop TestWorkerOnTemporal). A failed,
// deferred or dropped job holds it at the key before its first unfinished
// row.
type walkMark struct {
	c *checkpointer
	// pos and pages are guarded by c.mu.
	pos   WalkPosition
	pages []*page
	// ended: the walk listed its last page; the mark is done once it
	// passes every row of it.
	ended bool
}

// page is the rows of one listing statement, in key order, and which of
// them are finished; sealed once every job of the page is submitted.
type page struct {
	keys []store.QueueKey
	done []bool
	// next is the first key not yet passed by the mark.
	next   int
	sealed bool
}

// A rowMark is the mark's handle on one listed row: finished passes it.
// The zero rowMark (no checkpoints) does nothing.
type rowMark struct {
	m  *walkMark
	pg *page
	i  int
}

// open starts a page of the rows keys, in key order; last: the walk lists
// no row after them (see end).
func (m *walkMark) open(keys []store.QueueKey, last bool) *page {
	if m == nil {
		return nil
	}
	pg := &page{keys: keys, done: make([]bool, len(keys))}
	m.c.mu.Lock()
	m.pages = append(m.pages, pg)
	m.ended = last
	m.c.mu.Unlock()
	return pg
}

// row returns the handle of row i of pg.
func (m *walkMark) row(pg *page, i int) rowMark {
	if m == nil {
		return rowMark{}
	}
	return rowMark{m: m, pg: pg, i: i}
}

// finished says the work of the row is done.
func (r rowMark) finished(ctx context.Context) {
	if r.m == nil {
		return
	}
	r.m.c.mu.Lock()
	r.pg.done[r.i] = true
	moved := r.m.advance()
	r.m.c.mu.Unlock()
	if moved {
		r.m.c.changed(ctx, false)
	}
}

// track wraps j, the job of rows rs, so that they are finished when it is
// done.
func (m *walkMark) track(j executor.Job, rs ...rowMark) executor.Job {
	if m == nil {
		return j
	}
	return &trackedJob{Job: j, rows: rs}
}

// seal says that every job of pg is submitted.
func (m *walkMark) seal(ctx context.Context, pg *page) {
	if m == nil {
		return
	}
	m.c.mu.Lock()
	pg.sealed = true
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

// end says that the walk lists no more rows (open's last says it of a
// page): the mark is done once every row listed is finished (advance),
// before the walk's own done, so that a checkpoint never holds the key of
// the walk's last row as an open position (the pass may have deleted
// that row, and a position past the table's last row is refused on
// resume: checkPositions).
func (m *walkMark) end(ctx context.Context) {
	if m == nil {
		return
	}
	m.c.mu.Lock()
	m.ended = true
	moved := m.advance()
	m.c.mu.Unlock()
	if moved {
		m.c.changed(ctx, true)
	}
}

// advance moves pos past the finished rows at the head, drops the sealed
// pages it passed whole, and makes pos done once the walk ended and every
// page is passed; c.mu is held.
func (m *walkMark) advance() bool {
	moved := false
	for len(m.pages) > 0 {
		pg := m.pages[0]
		for pg.next < len(pg.keys) && pg.done[pg.next] {
			k := pg.keys[pg.next]
			m.pos.After = &k
			pg.next++
			moved = true
		}
		if !pg.sealed || pg.next < len(pg.keys) {
			break
		}
		m.pages[0] = nil
		m.pages = m.pages[1:]
	}
	// Done at once with the last row's position: a checkpoint never
	// holds the walk's last row as an open position. The last page's
	// rows may all be finished before it is sealed (rows of queues out of
	// scope, a job fast enough); its rows are all its work.
	finished := len(m.pages) == 0 || (len(m.pages) == 1 && m.pages[0].next == len(m.pages[0].keys))
	if m.ended && finished && !m.pos.Done {
		m.pos.Done, moved = true, true
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

// trackedJob is a job whose Done finishes its rows.
type trackedJob struct {
	executor.Job
	rows []rowMark
}

func (j *trackedJob) Run(ctx context.Context) executor.Status {
	s := j.Job.Run(ctx)
	if s == executor.Done {
		for _, r := range j.rows {
			r.finished(ctx)
		}
	}
	return s
}
