package daemon

import (
	"maps"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/tqscavenger/tqscavenger/scavenger"
	"github.com/tqscavenger/tqscavenger/store"
)

// tables are the table versions every per-table series is exported for,
// so that rate() sees a zero before the first deletion.
var tables = []store.Table{store.V1, store.V2}

// tableTotals are the counts of one table version over finished passes.
type tableTotals struct {
	queuesListed, queuesProcessed, queuesDeleted, tasksProcessed, badRows int64
	tasksDeleted                                                          map[scavenger.Reason]int64
	// What dry runs would have deleted: apart, so that the deleted
	// series count only rows that went.
	wouldQueues int64
	wouldTasks  map[scavenger.Reason]int64
}

// totals are the counts of finished passes. The metrics add the running
// pass's counts to them, so every counter moves while a pass runs.
type totals struct {
	started, completed, failed        int64
	interrupted                       int64
	skippedLockHeld, skippedLockError int64

	// tables are the per-table counts, counts the pass-wide ones; the
	// series read both.
	tables map[store.Table]*tableTotals
	counts scavenger.Counts

	// dryRuns counts finished dry runs by outcome; they are not in
	// started, completed, failed or interrupted.
	dryRuns map[Outcome]int64
}

func newTotals() totals {
	t := totals{tables: map[store.Table]*tableTotals{}, dryRuns: map[Outcome]int64{}}
	for _, tb := range tables {
		t.tables[tb] = &tableTotals{tasksDeleted: map[scavenger.Reason]int64{}, wouldTasks: map[scavenger.Reason]int64{}}
	}
	return t
}

// add folds a pass's counts into t.
func (t *totals) add(s scavenger.Stats) {
	for _, tb := range tables {
		ts, tt := s.Tables[tb], t.tables[tb]
		tt.queuesListed += ts.QueuesListed
		tt.queuesProcessed += ts.QueuesProcessed
		tt.queuesDeleted += ts.QueuesDeleted
		tt.tasksProcessed += ts.TasksProcessed
		tt.badRows += ts.BadRows
		for r, n := range ts.TasksDeleted {
			tt.tasksDeleted[r] += n
		}
		tt.wouldQueues += ts.WouldDeleteQueues
		for r, n := range ts.WouldDeleteTasks {
			tt.wouldTasks[r] += n
		}
	}
	t.counts.Add(s.Counts)
}

// clone returns a deep copy of t.
func (t totals) clone() totals {
	c := t
	c.tables = map[store.Table]*tableTotals{}
	for tb, tt := range t.tables {
		x := *tt
		x.tasksDeleted, x.wouldTasks = maps.Clone(tt.tasksDeleted), maps.Clone(tt.wouldTasks)
		c.tables[tb] = &x
	}
	c.dryRuns = maps.Clone(t.dryRuns)
	return c
}

// metricsView is what one scrape reads, taken under the daemon's lock.
type metricsView struct {
	totals   totals // finished passes plus the running one
	running  bool
	pass     scavenger.Stats // the running pass, or the last one that ran
	lastRun  *PassRecord
	lastOK   *PassRecord
	lastDry  *PassRecord // the last completed dry run
	next     time.Time
	shutdown bool
	loaded   time.Time
	reloads  map[string]int64
}

func (d *Daemon) metricsView() metricsView {
	d.mu.Lock()
	v := metricsView{totals: d.totals.clone(), next: d.next, lastRun: d.lastRun, lastOK: d.lastOK, lastDry: d.lastDryOK, loaded: d.loaded, reloads: maps.Clone(d.reloads)}
	v.shutdown = d.state == Stopping || d.state == Stopped
	cur := d.current
	if cur != nil {
		// Read the running pass under the lock: finish folds its final
		// counts into the totals and clears it in one critical section,
		// so a scrape counts each deletion exactly once.
		v.running = true
		v.pass = cur.Stats()
		v.totals.add(v.pass)
	} else if d.lastRun != nil {
		v.pass = d.lastRun.Stats
	}
	d.mu.Unlock()
	return v
}

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc("tqscavenger_"+name, help, labels, nil)
}

// collector exports the daemon's counts. It reads them at scrape time, so
// counters move during a pass, not only at its end.
type collector struct {
	d *Daemon

	passesStarted, passesCompleted, passesFailed, passesInterrupted, passesSkipped *prometheus.Desc
	queuesListed, queuesProcessed, queuesDeleted, queuesKept                       *prometheus.Desc
	tasksProcessed, tasksDeleted, orphansFound, badRows                            *prometheus.Desc
	jobsDeferred, jobsDropped, persistenceErrors                                   *prometheus.Desc

	inProgress, passQueuesListed, passQueuesProcessed        *prometheus.Desc
	lastDuration, lastSuccess, expiredRemaining, orphansLeft *prometheus.Desc
	nextPass                                                 *prometheus.Desc
	configLoaded, configReloads                              *prometheus.Desc

	dryRunPasses, dryRunQueues, dryRunTasks, dryRunLastSuccess *prometheus.Desc
}

func newCollector(d *Daemon) *collector {
	return &collector{
		d:                 d,
		passesStarted:     desc("passes_started_total", "Passes started (the lock was taken and the schema checked); dry runs are counted in dry_run_passes_total."),
		passesCompleted:   desc("passes_completed_total", "Passes that completed."),
		passesFailed:      desc("passes_failed_total", "Passes that failed: a job failed after its retries, or the pass could not run."),
		passesInterrupted: desc("passes_interrupted_total", "Passes stopped by a shutdown before they were done."),
		passesSkipped:     desc("passes_skipped_total", "Scheduled passes not run: lock_held (another tqscavenger holds the lock) or lock_error.", "reason"),
		queuesListed:      desc("queues_listed_total", "Queue rows listed.", "table"),
		queuesProcessed:   desc("queues_processed_total", "Queues whose tasks were scavenged.", "table"),
		queuesDeleted:     desc("queues_deleted_total", "Idle, empty queue rows deleted (dry runs: see dry_run_queues_would_delete_total).", "table"),
		queuesKept:        desc("queues_kept_total", "Queue deletes refused because a matching host took the queue since it was listed."),
		tasksProcessed:    desc("tasks_processed_total", "Task rows examined.", "table"),
		tasksDeleted:      desc("tasks_deleted_total", "Task rows deleted, by reason: expired, below_ack_level, orphan, closed_workflow or run_deleted (dry runs: see dry_run_tasks_would_delete_total).", "table", "reason"),
		orphansFound:      desc("orphan_tasks_found_total", "Task rows found without a queue row."),
		badRows:           desc("bad_rows_total", "Rows skipped because they could not be decoded; they are kept.", "table"),
		jobsDeferred:      desc("jobs_deferred_total", "Times a queue job yielded its worker to other queues."),
		jobsDropped:       desc("jobs_dropped_total", "Queue jobs dropped for the pass because the deferred list was full."),
		persistenceErrors: desc("persistence_errors_total", "Store errors: transient (retried) or permanent (the queue job failed).", "kind"),

		inProgress:          desc("pass_in_progress", "1 while a pass runs."),
		passQueuesListed:    desc("pass_queues_listed", "Queues listed so far by the running pass, or by the last one."),
		passQueuesProcessed: desc("pass_queues_processed", "Queues done so far by the running pass, or by the last one."),
		lastDuration:        desc("last_pass_duration_seconds", "Duration of the last pass that ran, completed or not."),
		lastSuccess:         desc("last_success_timestamp_seconds", "End of the last completed pass, in Unix seconds; 0 before the first."),
		expiredRemaining:    desc("tasks_expired_remaining", "Expired tasks the last completed pass examined and left (behind a live task)."),
		orphansLeft:         desc("orphan_tasks_remaining", "Orphaned tasks the last completed pass found and left (not expired)."),
		nextPass:            desc("next_pass_timestamp_seconds", "When the next pass is due, in Unix seconds; 0 while a pass runs."),
		configLoaded:        desc("config_loaded_timestamp_seconds", "When the configuration in effect was loaded (start, or the last applied reload), in Unix seconds."),
		configReloads:       desc("config_reloads_total", "Reloads of the configuration (SIGHUP), by result: applied, invalid (a bad file or value) or needs_restart.", "result"),

		dryRunPasses:      desc("dry_run_passes_total", "Dry runs (--dry-run) that ended, by outcome: completed, completed_with_bad_rows, failed or interrupted. They delete nothing and are not in the passes_* series.", "outcome"),
		dryRunQueues:      desc("dry_run_queues_would_delete_total", "Queue rows dry runs would have deleted (nothing was deleted).", "table"),
		dryRunTasks:       desc("dry_run_tasks_would_delete_total", "Task rows dry runs would have deleted (nothing was deleted), by reason.", "table", "reason"),
		dryRunLastSuccess: desc("dry_run_last_success_timestamp_seconds", "End of the last completed dry run, in Unix seconds; 0 before the first."),
	}
}

// Describe implements prometheus.Collector.
func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{
		c.passesStarted, c.passesCompleted, c.passesFailed, c.passesInterrupted, c.passesSkipped,
		c.queuesListed, c.queuesProcessed, c.queuesDeleted, c.queuesKept,
		c.tasksProcessed, c.tasksDeleted, c.orphansFound, c.badRows,
		c.jobsDeferred, c.jobsDropped, c.persistenceErrors,
		c.inProgress, c.passQueuesListed, c.passQueuesProcessed,
		c.lastDuration, c.lastSuccess, c.expiredRemaining, c.orphansLeft, c.nextPass,
		c.configLoaded, c.configReloads,
		c.dryRunPasses, c.dryRunQueues, c.dryRunTasks, c.dryRunLastSuccess,
	} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *collector) Collect(ch chan<- prometheus.Metric) {
	v := c.d.metricsView()
	t := v.totals
	counter := func(d *prometheus.Desc, n int64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(n), labels...)
	}
	gauge := func(d *prometheus.Desc, x float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, x, labels...)
	}
	counter(c.passesStarted, t.started)
	counter(c.passesCompleted, t.completed)
	counter(c.passesFailed, t.failed)
	counter(c.passesInterrupted, t.interrupted)
	counter(c.passesSkipped, t.skippedLockHeld, "lock_held")
	counter(c.passesSkipped, t.skippedLockError, "lock_error")
	for _, tb := range tables {
		tt, name := t.tables[tb], tb.String()
		counter(c.queuesListed, tt.queuesListed, name)
		counter(c.queuesProcessed, tt.queuesProcessed, name)
		counter(c.queuesDeleted, tt.queuesDeleted, name)
		counter(c.tasksProcessed, tt.tasksProcessed, name)
		counter(c.badRows, tt.badRows, name)
		for _, r := range scavenger.Reasons {
			counter(c.tasksDeleted, tt.tasksDeleted[r], name, string(r))
		}
		counter(c.dryRunQueues, tt.wouldQueues, name)
		for _, r := range scavenger.Reasons {
			counter(c.dryRunTasks, tt.wouldTasks[r], name, string(r))
		}
	}
	for _, o := range []Outcome{Completed, CompletedBadRows, Failed, Interrupted} {
		counter(c.dryRunPasses, t.dryRuns[o], string(o))
	}
	counter(c.queuesKept, t.counts.QueuesKept)
	counter(c.orphansFound, t.counts.OrphansFound)
	counter(c.jobsDeferred, t.counts.Deferred)
	counter(c.jobsDropped, t.counts.Dropped)
	counter(c.persistenceErrors, t.counts.Retries, "transient")
	counter(c.persistenceErrors, t.counts.Errors, "permanent")

	running := 0.0
	if v.running {
		running = 1
	}
	gauge(c.inProgress, running)
	gauge(c.passQueuesListed, float64(v.pass.QueuesListed))
	gauge(c.passQueuesProcessed, float64(v.pass.QueuesProcessed))
	var dur, success, expLeft, orphLeft, next float64
	if v.lastRun != nil {
		dur = v.lastRun.Duration().Seconds()
	}
	if v.lastOK != nil {
		success = unixSeconds(v.lastOK.End)
		expLeft = float64(v.lastOK.Stats.TasksExpiredLeft)
		orphLeft = float64(v.lastOK.Stats.OrphansLeft)
	}
	if !v.next.IsZero() && !v.shutdown {
		next = unixSeconds(v.next)
	}
	gauge(c.lastDuration, dur)
	gauge(c.lastSuccess, success)
	gauge(c.expiredRemaining, expLeft)
	gauge(c.orphansLeft, orphLeft)
	gauge(c.nextPass, next)
	gauge(c.configLoaded, unixSeconds(v.loaded))
	dry := 0.0
	if v.lastDry != nil {
		dry = unixSeconds(v.lastDry.End)
	}
	gauge(c.dryRunLastSuccess, dry)
	for _, r := range reloadResults {
		counter(c.configReloads, v.reloads[r], r)
	}
}

func unixSeconds(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }

// newRegistry returns a registry with the daemon's metrics and the usual
// Go runtime and process metrics.
func newRegistry(d *Daemon) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	build := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "tqscavenger_build_info",
		Help: "The running build: always 1, with its version, VCS revision and Go version as labels.",
	}, []string{"version", "revision", "goversion"})
	b := d.cfg.Build
	build.WithLabelValues(b.Version, b.Revision, b.GoVersion).Set(1)
	reg.MustRegister(
		build,
		newCollector(d),
		newPaceCollector(d),
		newAlertCollector(d),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return reg
}

// Registry returns the registry /metrics serves, for tests and for
// embedding the metrics in another server.
func (d *Daemon) Registry() *prometheus.Registry { return d.reg }
