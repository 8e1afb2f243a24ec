package scavenger

import "github.com/tqscavenger/tqscavenger/internal/pace"

// PaceState is what the pace's controller is doing (Stats.Pace): for the
// status page, the metrics and the progress line.
type PaceState struct {
	// Mode is the pace in effect (it may change mid-pass: Tune).
	Mode PaceMode `json:"mode"`
	// InFlight is the statements running now; Allowed the most the
	// controller lets run at once (at PaceFull: Config.Workers).
	InFlight int `json:"in_flight"`
	Allowed  int `json:"allowed"`
	// Share is the fraction of its time a statement slot spends in the
	// database (1: no pauses).
	Share float64 `json:"share"`
	// BatchCap caps the batch sizes (Config.TaskBatchSize: no cap).
	BatchCap int `json:"batch_cap"`
	// Signal names what the last window measured ("probe", or the store
	// method of the pass's own statements) and Ratio is its median over
	// its quiet baseline (0: no window compared yet).
	Signal string  `json:"signal,omitempty"`
	Ratio  float64 `json:"ratio"`
	// Rebasing: the pass is re-measuring its baselines (a short pause,
	// then statements one at a time).
	Rebasing bool `json:"rebasing,omitempty"`
	// Alone: the SQLite database is proven to have no other user, so
	// the gentle pace's duty cycle is lifted (store.AloneProver).
	Alone bool `json:"alone,omitempty"`
	// Backoffs counts the windows that backed off; FloorHits those that
	// found harm with the pass already at its floor (it could not be
	// gentler).
	Backoffs  int64 `json:"backoffs"`
	FloorHits int64 `json:"floor_hits"`
}

// paceState is the PaceState of the Pacer's snapshot s.
func paceState(s pace.Snapshot) PaceState {
	mode := PaceGentle
	if s.Full {
		mode = PaceFull
	}
	return PaceState{
		Mode: mode, InFlight: s.InFlight, Allowed: s.Allowed, Share: s.Share, BatchCap: s.BatchCap,
		Signal: s.Signal, Ratio: s.Ratio, Rebasing: s.Rebasing, Alone: s.Alone,
		Backoffs: s.Backoffs, FloorHits: s.FloorHits,
	}
}
