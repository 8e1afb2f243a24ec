package daemon

// The series the alert rules and the dashboard (deploy/helm/tqscavenger/files)
// read beyond the pass counters: failures by cause, how long another
// instance has held the lock, the expired tasks the last completed pass
// left per table, and the schedule, mode and rate limits they are judged
// against.

import (
	"context"
	"errors"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tqscavenger/tqscavenger/scavenger"
	"github.com/tqscavenger/tqscavenger/store"
)

// CauseSchema is the cause of a pass whose schema check failed, beside
// scavenger's causes of a failed job.
const CauseSchema = "schema"

// failureCauses are the values of the cause label, each exported from the
// start so that increase() sees the first failure.
var failureCauses = []string{
	CauseSchema,
	string(scavenger.CauseLockLost),
	string(scavenger.CauseReadOnly),
	string(scavenger.CauseDiskFull),
	string(scavenger.CauseStatementTimeout),
	string(scavenger.CauseRetriesExhausted),
	string(scavenger.CauseError),
}

// failureCause classifies why a pass failed: a failed schema check, else
// the cause most of its failed jobs share, else its error's.
func failureCause(err error) string {
	var je *scavenger.JobsFailedError
	switch {
	case errors.Is(err, store.ErrSchema):
		return CauseSchema
	case errors.As(err, &je) && len(je.ByCause) > 0:
		causes := make([]scavenger.Cause, 0, len(je.ByCause))
		for c := range je.ByCause {
			causes = append(causes, c)
		}
		slices.Sort(causes)
		top := causes[0]
		for _, c := range causes[1:] {
			if je.ByCause[c] > je.ByCause[top] {
				top = c
			}
		}
		return string(top)
	}
	return string(scavenger.CauseOf(err))
}

// lockProbeTimeout bounds the probe a scrape makes of a lock held by
// another instance.
const lockProbeTimeout = 5 * time.Second

// lockWatch follows the lock as another instance holds it. A replica that
// finds the lock held only learns, at its next tick, that it is held
// again, not whether it was held all along: a standby replica of a daemon
// whose passes start at the same ticks finds it held at every tick. So
// while the last attempt found it held, each scrape probes it (a
// non-waiting take, released at once): the first probe that gets it ends
// the holding.
type lockWatch struct {
	// mu is held by a pass while it takes the lock, so that a probe never
	// takes it from under its own daemon's pass; a scrape that finds mu
	// busy reports the last value.
	mu    sync.Mutex
	since time.Time     // the first attempt that found it held; zero once free or ours
	last  atomic.Uint64 // the last value reported, as math.Float64bits
}

// lockAttempt records the outcome of a pass's attempt at the lock: held
// by another (locked), or not. The caller holds w.mu.
func (w *lockWatch) lockAttempt(at time.Time, locked bool) {
	switch {
	case !locked:
		w.since = time.Time{}
		w.last.Store(0)
	case w.since.IsZero():
		w.since = at
	}
}

// heldSeconds is how long another instance has held the lock, probing it
// if the last attempt or probe found it held.
func (d *Daemon) heldSeconds() float64 {
	w := &d.lock
	if !w.mu.TryLock() {
		return w.lastValue()
	}
	defer w.mu.Unlock()
	if w.since.IsZero() {
		w.last.Store(0)
		return 0
	}
	d.mu.Lock()
	r := d.cfg.Scavenger.Partition.Range()
	d.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), lockProbeTimeout)
	defer cancel()
	l, err := d.cfg.DB.LockRange(ctx, r, false)
	if err == nil {
		if err := l.Unlock(); err != nil {
			d.log.Warn("releasing the lock after a probe", "err", err)
		}
		w.since = time.Time{}
		w.last.Store(0)
		return 0
	}
	// Held still, or the probe failed (the database is down): the lock
	// was last seen held, and is counted held until seen free.
	held := d.clock.Now().Sub(w.since).Seconds()
	w.last.Store(math.Float64bits(held))
	return held
}

// lastValue is the last value reported, for a scrape while a pass holds
// w.mu.
func (w *lockWatch) lastValue() float64 { return math.Float64frombits(w.last.Load()) }

// alertCollector exports the series the alerts need.
type alertCollector struct {
	d                                                  *Daemon
	failedByCause, lockHeld, expiredLeft, interval, pl *prometheus.Desc
	maxDeletes, maxStatements, kept                    *prometheus.Desc
}

func newAlertCollector(d *Daemon) *alertCollector {
	return &alertCollector{
		d:             d,
		failedByCause: desc("passes_failed_by_cause_total", "Passes that failed, by cause: schema (the schema check), lock_lost, read_only, disk_full, statement_timeout, retries_exhausted or error (the cause most of its failed jobs share); sums to passes_failed_total.", "cause"),
		lockHeld:      desc("lock_held_seconds", "How long another instance has held the lock this one's last attempt found held, as last probed (each scrape probes it while held); 0 once it was seen free or taken."),
		expiredLeft:   desc("tasks_expired_left", "Expired tasks the last completed pass examined and left, by table (behind a live task: by design without --past-live-head).", "table"),
		kept:          desc("tasks_kept", "Tasks the last completed pass examined and kept for a reason an operator may act on, by table and reason: run_not_found (the closed-workflow rule found no executions row for the task's run: without --closed-deleted-runs, or the miss unproven).", "table", "reason"),
		interval:      desc("schedule_interval_seconds", "Time between two scheduled passes, the largest jitter added: what the alerts judge the last success's age against."),
		pl:            desc("past_live_head", "1 if passes delete expired tasks behind a live one (--past-live-head), where none should be left; else 0."),
		maxDeletes:    desc("max_deletes_per_second", "The cap on rows deleted per second in effect (--max-deletes-per-second); 0 for none."),
		maxStatements: desc("max_statements_per_second", "The cap on statements per second in effect (--max-statements-per-second); 0 for none."),
	}
}

// Describe implements prometheus.Collector.
func (c *alertCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.failedByCause, c.lockHeld, c.expiredLeft, c.interval, c.pl, c.maxDeletes, c.maxStatements, c.kept} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *alertCollector) Collect(ch chan<- prometheus.Metric) {
	d := c.d
	held := d.heldSeconds()
	d.mu.Lock()
	byCause := make(map[string]int64, len(d.failedByCause))
	for k, v := range d.failedByCause {
		byCause[k] = v
	}
	var left map[store.Table]scavenger.TableStats
	if d.lastOK != nil {
		left = d.lastOK.Stats.Tables
	}
	interval := Interval(d.cfg.Schedule, d.clock.Now()) + d.cfg.Jitter
	pastLiveHead := d.cfg.Scavenger.PastLiveHead
	maxDeletes, maxStatements := d.cfg.Scavenger.MaxDeletesPerSecond, d.cfg.Scavenger.MaxStatementsPerSecond
	d.mu.Unlock()

	for _, cause := range failureCauses {
		ch <- prometheus.MustNewConstMetric(c.failedByCause, prometheus.CounterValue, float64(byCause[cause]), cause)
	}
	ch <- prometheus.MustNewConstMetric(c.lockHeld, prometheus.GaugeValue, held)
	for _, tb := range tables {
		ch <- prometheus.MustNewConstMetric(c.expiredLeft, prometheus.GaugeValue, float64(left[tb].TasksExpiredLeft), tb.String())
		ch <- prometheus.MustNewConstMetric(c.kept, prometheus.GaugeValue, float64(left[tb].TasksRunNotFound), tb.String(), "run_not_found")
	}
	ch <- prometheus.MustNewConstMetric(c.interval, prometheus.GaugeValue, interval.Seconds())
	pl := 0.0
	if pastLiveHead {
		pl = 1
	}
	ch <- prometheus.MustNewConstMetric(c.pl, prometheus.GaugeValue, pl)
	ch <- prometheus.MustNewConstMetric(c.maxDeletes, prometheus.GaugeValue, maxDeletes)
	ch <- prometheus.MustNewConstMetric(c.maxStatements, prometheus.GaugeValue, maxStatements)
}
