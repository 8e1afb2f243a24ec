package pace

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"
)

// Config is what a Pacer is built from.
type Config struct {
	// Factor is how much slower than its baseline a window's median may
	// be before the pace backs off: more than 1.
	Factor float64
	// Workers is the most statements at once; BatchSize the pass's batch
	// size, the ceiling of the batch cap.
	Workers, BatchSize int
	// StuckAfter is how long a statement may run before it no longer
	// counts against the slots. Default 2s.
	StuckAfter time.Duration
	// WholeDatabase: the store's writes lock the whole database
	// (store.WholeDatabaseWriter, SQLite): one statement at a time, and
	// a duty cycle (controller.go).
	WholeDatabase bool
	// Full starts the Pacer at the full pace: no cap, no pause, no
	// adjustment (SetFull changes it).
	Full bool
	// Batch, if set, is the pass's batcher, whose cap the Pacer sets.
	Batch *Batcher
	// Logger receives the lines of backing off. Default slog.Default().
	Logger *slog.Logger
	// Stop, once closed, ends every wait: a waiting statement gets
	// ErrStopped.
	Stop <-chan struct{}
}

// Pacer is the gentle pace's controller for one pass, shared by all its
// calls: it gives each statement a slot (Run), feeds the statements'
// latencies, the probe's (StartProbe) and any outside signal's to the
// controller, and moves the levers the controller decides. At the full
// pace (SetFull) it passes every call straight on; it still counts the
// statements running, so that a pace changed mid-pass starts from the
// truth. It only ever adds waits.
type Pacer struct {
	factor float64
	log    *slog.Logger
	now    func() time.Time
	// sleep waits d, or until ctx ends (tests inject one).
	sleep func(ctx context.Context, d time.Duration)
	stop  <-chan struct{}
	batch *Batcher

	mu   sync.Mutex
	slot sync.Cond // a slot freed, allowed grew, the pace changed, or stop
	// full is the full pace: no cap, no pause, no adjustment.
	full bool
	// wholeDatabase is Config.WholeDatabase; alone, that the database
	// is proven to have no other user (alone.go).
	wholeDatabase, alone bool
	lim                  limits
	lv                   levers
	slots                slots
	rb                   rebase
	kinds                map[kind]*window
	probe                window
	signals              map[string]*window // outside signals: observeSignal
	// lastSignal is what the last window measured, lastRatio its median
	// over its baseline.
	lastSignal string
	lastRatio  float64
	// The tallies: windows that backed off, of them those at the floor,
	// quiet windows, and the least allowed and share reached.
	decreases, floorHits, increases int64
	minAllowed                      int
	minShare                        float64
	lastLog, lastHit                time.Time // of the back-off's log lines
	onWait                          func()    // a test's: called, under mu, when a statement starts waiting
}

// logEvery bounds the log lines of backing off.
const logEvery = 10 * time.Second

// New returns the Pacer of c, at the slow start: one statement at a time.
func New(c Config) *Pacer {
	p := &Pacer{
		factor: c.Factor, log: c.Logger, now: time.Now, sleep: sleepCtx, stop: c.Stop, batch: c.Batch,
		lim:   limits{workers: max(1, c.Workers), maxShare: 1, batchCeil: max(1, c.BatchSize)},
		lv:    levers{allowed: 1, share: 1, batchCap: max(1, c.BatchSize)},
		slots: slots{stuckAfter: c.StuckAfter, starts: map[uint64]time.Time{}},
		kinds: map[kind]*window{}, signals: map[string]*window{}, minAllowed: 1, minShare: 1,
	}
	if p.log == nil {
		p.log = slog.Default()
	}
	if p.slots.stuckAfter <= 0 {
		p.slots.stuckAfter = 2 * time.Second
	}
	if c.WholeDatabase {
		// One statement at a time, so that the share is the database's:
		// four slots each in it a quarter of the time would keep it busy.
		p.lim.maxShare, p.lv.share, p.lim.workers = sqliteDuty, sqliteDuty, 1
		p.wholeDatabase = true
	}
	p.rb.last = p.now()
	p.slot.L = &p.mu
	p.SetFull(c.Full)
	return p
}

// SetFull sets the pace, and wakes the statements waiting for a slot so
// that they see it. Full pace lifts the cap on batch sizes that gentle
// set (its next batch is as large as the batcher allows); back at gentle,
// the cap is where gentle left it.
func (p *Pacer) SetFull(full bool) {
	p.mu.Lock()
	p.full = full
	if p.batch != nil {
		if full {
			p.batch.setCap(0)
		} else {
			p.batch.setCap(p.lv.batchCap)
		}
	}
	p.slot.Broadcast()
	p.mu.Unlock()
}

// setAlone sets whether a whole-database writer's database is proven to
// have no other user: alone, the duty cycle's cap on the share is lifted
// (and the share starts at 1); no longer alone, it is back.
func (p *Pacer) setAlone(alone bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.wholeDatabase || p.alone == alone {
		return
	}
	p.alone = alone
	if alone {
		p.lim.maxShare, p.lv.share, p.rb.saved.share = 1, 1, 1
	} else {
		p.lim.maxShare = sqliteDuty
		p.lv.share, p.rb.saved.share = min(p.lv.share, sqliteDuty), min(p.rb.saved.share, sqliteDuty)
	}
	p.slot.Broadcast()
}

// setBatchCap sets the cap of the pass's batch sizes (under mu).
func (p *Pacer) setBatchCap(n int) {
	p.lv.batchCap = n
	if p.batch != nil {
		p.batch.setCap(n)
	}
}

// Snapshot is what the Pacer is doing, and what it did.
type Snapshot struct {
	// Full: the full pace.
	Full bool
	// InFlight is the statements running now; Allowed the most it lets
	// run at once (at the full pace: Config.Workers).
	InFlight, Allowed int
	// Share is the fraction of its time a statement slot spends in the
	// database (1: no pauses).
	Share float64
	// BatchCap caps the batch sizes (Config.BatchSize: no cap).
	BatchCap int
	// Signal names what the last window measured ("probe", an outside
	// signal, or the store method of the pass's own statements) and Ratio
	// is its median over its baseline (0: no window compared yet).
	Signal string
	Ratio  float64
	// Rebasing: the pass is re-measuring its baselines.
	Rebasing bool
	// Alone: the store's database is proven to have no other user, so
	// the whole-database writer's duty cycle is lifted (alone.go).
	Alone bool
	// Backoffs counts the windows that backed off; FloorHits those that
	// found harm with the pass already at its floor; Increases the quiet
	// windows.
	Backoffs, FloorHits, Increases int64
	// MinAllowed and MinShare are the least allowed and share reached.
	MinAllowed int
	MinShare   float64
}

// Snapshot returns the Pacer's state.
func (p *Pacer) Snapshot() Snapshot {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := Snapshot{
		InFlight: p.slots.running(), Allowed: p.lv.allowed, Share: p.lv.share, BatchCap: p.lv.batchCap,
		Signal: p.lastSignal, Ratio: p.lastRatio, Rebasing: p.rb.on, Alone: p.alone,
		Backoffs: p.decreases, FloorHits: p.floorHits, Increases: p.increases,
		MinAllowed: p.minAllowed, MinShare: p.minShare,
	}
	if p.full {
		s.Full, s.Allowed, s.Share, s.BatchCap, s.Rebasing = true, p.lim.workers, 1, p.lim.batchCeil, false
	}
	return s
}

// Methods returns the store methods whose statements the Pacer has
// observed, sorted.
func (p *Pacer) Methods() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	seen := map[string]bool{}
	for k := range p.kinds {
		seen[k.method] = true
	}
	return slices.Sorted(maps.Keys(seen))
}
