package scavenger

// The low-water marks of a pass's walks, and the checkpoints made of them.

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/tqscavenger/tqscavenger/internal/executor"
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
	m := &walkMark{c: c, pos: from, carried: from.Finished}
	m.pos.Finished = nil
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

// flush writes the current positions if they changed since the last
// write, and reports whether it wrote them.
func (c *checkpointer) flush(ctx context.Context) bool {
	if c == nil {
		return false
	}
	c.writing.Lock()
	defer c.writing.Unlock()
	c.mu.Lock()
	if !c.dirty {
		c.mu.Unlock()
		return false
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
		return false
	}
	return true
}

// walkMark is the low-water mark of one walk: the walk reads pages of keys
// in key order, and its mark passes a key once the work of its row is
// done (for a queue row: its tasks, and its row's delete if it is to go).
// The mark moves a queue at a time, inside a page and inside a window of
// queues. A failed, deferred or dropped job holds it at the key before its
// first unfinished row. The jobs run side by side (Pace.Workers), so rows
// after that one finish too: each snapshot records them as runs beyond
// the mark (WalkPosition.Finished), and a resumed walk skips them, so a
// pass that dies redoes only the rows unfinished at its last checkpoint
// (before them, one low-water mark alone redid up to one queue per
// worker: 0-4 at 4 workers beside a real Temporal).
type walkMark struct {
	c *checkpointer
	// pos, pages, carried and listed are guarded by c.mu. pos.Finished is
	// nil: snapshot computes the runs.
	pos   WalkPosition
	pages []*page
	// carried are the finished runs of the position the walk resumed
	// from; listed is the last key of the last page opened (nil: none).
	// The runs of rows not listed yet are still finished, and each
	// snapshot carries them on; the rows listed in them are finished as
	// their page opens (the walk skips them), so they are in the pages'
	// runs.
	carried []KeyRange
	listed  *store.QueueKey
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
// no row after them (see end). The rows in the carried runs are finished
// already: a snapshot taken before the walk has skipped them (row's
// finished) holds them as finished, as the position it resumed from did.
func (m *walkMark) open(keys []store.QueueKey, last bool) *page {
	if m == nil {
		return nil
	}
	pg := &page{keys: keys, done: make([]bool, len(keys))}
	m.c.mu.Lock()
	for i, k := range keys {
		pg.done[i] = inRuns(m.carried, k)
	}
	m.pages = append(m.pages, pg)
	if len(keys) > 0 {
		k := keys[len(keys)-1]
		m.listed = &k
	}
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

// finished says the work of the row is done: the mark passes it, or it
// joins the finished runs beyond the mark.
func (r rowMark) finished(ctx context.Context) {
	if r.m == nil {
		return
	}
	r.m.c.mu.Lock()
	r.pg.done[r.i] = true
	r.m.advance()
	r.m.c.mu.Unlock()
	// Moved or not, the position changed: a row past the mark is one
	// more of its finished runs.
	r.m.c.changed(ctx, false)
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

// snapshot returns pos with the finished runs beyond it; c.mu is held.
func (m *walkMark) snapshot() WalkPosition {
	p := m.pos
	if p.After != nil {
		k := *p.After
		p.After = &k
	}
	if !p.Done {
		p.Finished = m.runs()
	}
	return p
}

// runs returns the runs of finished rows beyond the mark: those of the
// pages listed (the rows after pg.next of each, in key order: a row not
// finished ends a run), then the carried runs that reach past the last
// row listed; merged where they overlap, at most MaxFinishedRuns, those
// nearest the mark first. c.mu is held.
func (m *walkMark) runs() []KeyRange {
	var out []KeyRange
	open := false // the last run of out takes the next finished row
	for _, pg := range m.pages {
		for i := pg.next; i < len(pg.keys); i++ {
			switch {
			case !pg.done[i]:
				open = false
			case open:
				out[len(out)-1].Last = pg.keys[i]
			default:
				out = append(out, KeyRange{First: pg.keys[i], Last: pg.keys[i]})
				open = true
			}
		}
	}
	for _, r := range m.carried {
		if m.listed != nil && !m.listed.Less(r.Last) {
			continue // listed whole: its rows are in the pages' runs, or passed
		}
		if n := len(out); n > 0 && r.First.Compare(out[n-1].Last) <= 0 {
			// It overlaps the last run (rows of it listed and skipped):
			// every row of both is finished, so every row of their union.
			out[n-1].Last = r.Last
			continue
		}
		out = append(out, r)
	}
	if len(out) > MaxFinishedRuns {
		out = out[:MaxFinishedRuns]
	}
	return out
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
