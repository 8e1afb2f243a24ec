package pace

import "time"

// The back-off, AIMD within a floor. The pass runs at most `allowed`
// statements at once (between 1 and Config.Workers) and, after each,
// pauses for its latency × (1/share − 1) before the next takes the slot:
// share is the fraction of time a slot spends in the database. A window
// whose median exceeds Config.Factor × its signal's baseline, and the
// baseline by at least minHarm, halves
// allowed, share and the batch size's cap (multiplicative decrease:
// smaller statements are shorter bursts); a quiet window raises share by
// 1/8, then allowed by one, then the batch cap by an eighth of
// Config.BatchSize (additive increase).
//
// The floor keeps a gentle pass moving whatever the signals say: at least
// one statement in flight, share at least minShare, no pause longer than
// maxPause, batches of at least a quarter of Config.BatchSize (and
// minBatch rows). A pass at the floor that still sees harm logs that it
// cannot be gentler (Snapshot.FloorHits counts it): at the floor a gentle
// pass takes at most 1/minShare = 4 times as long as it would one
// statement at a time without pauses, and its batches are at most 4
// times smaller. (A floor of 1/8 and 64-row batches, the first choice,
// let a pass beside a loaded PostgreSQL run past the lab's 3-minute bound
// where the full pace took seconds: 1,000-row deletes became 64-row ones,
// 16 times the statements, each followed by 7 times its time.)
//
// On a store whose write takes a lock on the whole database (SQLite:
// Config.WholeDatabase) the pass runs one statement at a time with its
// share capped at sqliteDuty: it holds the database (its one connection)
// at most that share of the time, leaving the writer lock free the rest.
const (
	minShare = 1.0 / 4
	maxPause = time.Second
	minBatch = 64
	// minHarm is the least slowdown that counts as harm, whatever the
	// ratio: on an idle database a 135 µs statement that takes 365 µs is
	// jitter, and backing off for it made an idle SQLite pass 4.5 times
	// slower than the full pace.
	minHarm = time.Millisecond
	// sqliteDuty is the most of the time a gentle pass holds a SQLite
	// database.
	sqliteDuty = 0.25
)

// levers are what the controller moves.
type levers struct {
	// allowed is the most statements at once; share the fraction of its
	// time a slot spends in the database; batchCap the cap of the batch
	// sizes.
	allowed  int
	share    float64
	batchCap int
}

// limits bound the levers from above.
type limits struct {
	// workers is Config.Workers (1 on a whole-database writer);
	// maxShare is 1, or sqliteDuty; batchCeil is Config.BatchSize.
	workers   int
	maxShare  float64
	batchCeil int
}

// minBatch is the floor of the batch cap: a quarter of the batch size,
// at least minBatch rows (never above the batch size).
func (l limits) minBatch() int {
	return min(l.batchCeil, max(minBatch, l.batchCeil/4))
}

// decision is what decide made of a window.
type decision struct {
	levers levers
	// harm: the median was over factor × baseline, and the levers were
	// halved; atFloor: they were already at the floor, so the pass could
	// not be gentler.
	harm, atFloor bool
}

// decide is the controller: the levers after a window whose median was
// median, of a signal whose quiet baseline is baseline. It is a pure
// function of its inputs: no clock, no I/O, no state.
func decide(lv levers, lim limits, factor float64, median, baseline time.Duration) decision {
	if float64(median) > factor*float64(baseline) && median-baseline >= minHarm {
		atFloor := lv.allowed == 1 && lv.share <= minShare && lv.batchCap <= lim.minBatch()
		return decision{levers: levers{
			allowed:  max(1, lv.allowed/2),
			share:    max(minShare, lv.share/2),
			batchCap: max(lim.minBatch(), lv.batchCap/2),
		}, harm: true, atFloor: atFloor}
	}
	switch {
	case lv.share < lim.maxShare:
		lv.share = min(lim.maxShare, lv.share+1.0/8)
	case lv.allowed < lim.workers:
		lv.allowed++
	case lv.batchCap < lim.batchCeil:
		lv.batchCap = min(lim.batchCeil, lv.batchCap+max(1, lim.batchCeil/8))
	}
	return decision{levers: lv}
}

// pauseFor is the pause after a statement of d at share: within the floor.
func pauseFor(d time.Duration, share float64) time.Duration {
	if share >= 1 || d <= 0 {
		return 0
	}
	return min(time.Duration(float64(d)*(1/share-1)), maxPause)
}
