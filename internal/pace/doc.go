// Package pace is how fast a pass of package scavenger goes: the gentle
// pace's controller, the signals it watches and their baselines, the
// slots that bound the statements in flight, the rate limits and the
// adaptive batch size. Package scavenger wires it in (its store
// middleware feeds every statement through Pacer.Run; Config's pace
// fields set it up; Stats.Pace is made from a Snapshot) and this package
// knows nothing of scavenger: latencies go in, slots, pauses and batch
// caps come out.
//
// The gentle pace watches what the pass's statements do to the database
// and backs off when it gets slower, so that a cluster under load keeps
// its latency while the pass takes longer. It only ever adds waits,
// inside the rate limits: it slows a pass below them, never above. At the
// full pace the Pacer passes every call straight on.
//
// One file, one job:
//
//   - controller.go: the back-off, AIMD within a floor, and the SQLite
//     duty cycle; decide is a pure function of a window's median and its
//     signal's baseline (no clock, no I/O).
//   - baseline.go: windows of samples, their medians, and the quiet
//     baselines they are compared with; the kinds of statement.
//   - slots.go: the statements in flight and the most allowed at once.
//   - rebase.go: the re-measure of the baselines every 30 seconds.
//   - pacer.go: the Pacer, the controller's state shared by a pass's
//     calls, and its Snapshot.
//   - signals.go: what the Pacer is told, each sample judged by its
//     signal's windows.
//   - statements.go, probe.go, temporal.go (with promtext.go): the
//     signal sources, the pass's own statements (Run), the probe
//     connection (StartProbe) and Temporal's persistence_latency
//     (StartTemporalMetrics); alone.go, the proof that a whole-database
//     writer's database has no other user (StartAloneWatch), which lifts
//     the duty cycle; background.go, how each runs beside a pass.
//   - limit.go: the token-bucket rate limits (Limiter).
//   - batcher.go: the adaptive batch size (Batcher), the controller's
//     third lever.
package pace

import "errors"

// ErrStopped is returned by a wait (Limiter.Wait, Pacer.Run) that ended
// because its stop channel was closed: the caller is shutting down. The
// caller's package gives it its own name (scavenger.ErrShutdown).
var ErrStopped = errors.New("pace: stopped")
