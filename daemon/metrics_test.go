package daemon

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tqscavenger/tqscavenger/scavenger"
	"github.com/tqscavenger/tqscavenger/store"
)

// countedStats returns a pass's stats with every count set, each to its
// own multiple of k, so that a count exported under the wrong series, or
// left out of the totals, shows.
func countedStats(k int64) scavenger.Stats {
	var st scavenger.Stats
	st.QueuesListed, st.QueuesProcessed, st.QueuesDeleted, st.QueuesKept = 1*k, 2*k, 3*k, 4*k
	st.TasksProcessed, st.TasksDeleted, st.TasksExpiredLeft, st.TasksRunNotFound = 5*k, 6*k, 7*k, 8*k
	st.OrphansFound, st.OrphansLeft, st.TasksUnknown, st.QueuesUnknown = 9*k, 10*k, 11*k, 12*k
	st.BadRowCount, st.Errors, st.Retries, st.Dropped, st.Deferred = 13*k, 14*k, 15*k, 16*k, 17*k
	st.WouldDeleteTasks, st.WouldDeleteQueues = 18*k, 19*k
	st.Tables = map[store.Table]scavenger.TableStats{}
	for i, tb := range tables {
		n := 100 * k * int64(i+1)
		ts := scavenger.TableStats{
			QueuesListed: n + 1, QueuesProcessed: n + 2, QueuesDeleted: n + 3, TasksProcessed: n + 4, BadRows: n + 5,
			WouldDeleteQueues: n + 6, TasksExpiredLeft: n + 7, TasksRunNotFound: n + 8,
			TasksDeleted: map[scavenger.Reason]int64{}, WouldDeleteTasks: map[scavenger.Reason]int64{},
		}
		for j, r := range scavenger.Reasons {
			ts.TasksDeleted[r], ts.WouldDeleteTasks[r] = n+10+int64(j), n+20+int64(j)
		}
		st.Tables[tb] = ts
	}
	return st
}

// TestMetricsCounts: the metrics export the counts of finished passes,
// summed, each under its series and labels, and the last completed
// pass's remaining counts.
func TestMetricsCounts(t *testing.T) {
	d := &Daemon{totals: newTotals()}
	d.totals.add(countedStats(1))
	d.totals.add(countedStats(2))
	d.lastOK = &PassRecord{Stats: countedStats(1)}
	d.lastRun = d.lastOK
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(newCollector(d))
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, mf := range mfs {
		switch name := mf.GetName(); name {
		case "tqscavenger_config_loaded_timestamp_seconds", "tqscavenger_last_pass_duration_seconds", "tqscavenger_last_success_timestamp_seconds":
			continue // times
		}
		for _, m := range mf.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			v := m.GetCounter().GetValue() + m.GetGauge().GetValue()
			lines = append(lines, fmt.Sprintf("%s{%s} %g", mf.GetName(), strings.Join(labels, ","), v))
		}
	}
	slices.Sort(lines)
	got := strings.Join(lines, "\n")
	want := strings.TrimSpace(`
tqscavenger_bad_rows_total{table=v1} 310
tqscavenger_bad_rows_total{table=v2} 610
tqscavenger_config_reloads_total{result=applied} 0
tqscavenger_config_reloads_total{result=invalid} 0
tqscavenger_config_reloads_total{result=needs_restart} 0
tqscavenger_dry_run_last_success_timestamp_seconds{} 0
tqscavenger_dry_run_passes_total{outcome=completed_with_bad_rows} 0
tqscavenger_dry_run_passes_total{outcome=completed} 0
tqscavenger_dry_run_passes_total{outcome=failed} 0
tqscavenger_dry_run_passes_total{outcome=interrupted} 0
tqscavenger_dry_run_queues_would_delete_total{table=v1} 312
tqscavenger_dry_run_queues_would_delete_total{table=v2} 612
tqscavenger_dry_run_tasks_would_delete_total{reason=below_ack_level,table=v1} 342
tqscavenger_dry_run_tasks_would_delete_total{reason=below_ack_level,table=v2} 642
tqscavenger_dry_run_tasks_would_delete_total{reason=closed_workflow,table=v1} 346
tqscavenger_dry_run_tasks_would_delete_total{reason=closed_workflow,table=v2} 646
tqscavenger_dry_run_tasks_would_delete_total{reason=expired,table=v1} 340
tqscavenger_dry_run_tasks_would_delete_total{reason=expired,table=v2} 640
tqscavenger_dry_run_tasks_would_delete_total{reason=orphan,table=v1} 344
tqscavenger_dry_run_tasks_would_delete_total{reason=orphan,table=v2} 644
tqscavenger_dry_run_tasks_would_delete_total{reason=run_deleted,table=v1} 348
tqscavenger_dry_run_tasks_would_delete_total{reason=run_deleted,table=v2} 648
tqscavenger_jobs_deferred_total{} 51
tqscavenger_jobs_dropped_total{} 48
tqscavenger_next_pass_timestamp_seconds{} 0
tqscavenger_orphan_tasks_found_total{} 27
tqscavenger_orphan_tasks_remaining{} 10
tqscavenger_pass_in_progress{} 0
tqscavenger_pass_queues_listed{} 1
tqscavenger_pass_queues_processed{} 2
tqscavenger_passes_completed_total{} 0
tqscavenger_passes_failed_total{} 0
tqscavenger_passes_interrupted_total{} 0
tqscavenger_passes_skipped_total{reason=lock_error} 0
tqscavenger_passes_skipped_total{reason=lock_held} 0
tqscavenger_passes_started_total{} 0
tqscavenger_persistence_errors_total{kind=permanent} 42
tqscavenger_persistence_errors_total{kind=transient} 45
tqscavenger_queues_deleted_total{table=v1} 306
tqscavenger_queues_deleted_total{table=v2} 606
tqscavenger_queues_kept_total{} 12
tqscavenger_queues_listed_total{table=v1} 302
tqscavenger_queues_listed_total{table=v2} 602
tqscavenger_queues_processed_total{table=v1} 304
tqscavenger_queues_processed_total{table=v2} 604
tqscavenger_tasks_deleted_total{reason=below_ack_level,table=v1} 322
tqscavenger_tasks_deleted_total{reason=below_ack_level,table=v2} 622
tqscavenger_tasks_deleted_total{reason=closed_workflow,table=v1} 326
tqscavenger_tasks_deleted_total{reason=closed_workflow,table=v2} 626
tqscavenger_tasks_deleted_total{reason=expired,table=v1} 320
tqscavenger_tasks_deleted_total{reason=expired,table=v2} 620
tqscavenger_tasks_deleted_total{reason=orphan,table=v1} 324
tqscavenger_tasks_deleted_total{reason=orphan,table=v2} 624
tqscavenger_tasks_deleted_total{reason=run_deleted,table=v1} 328
tqscavenger_tasks_deleted_total{reason=run_deleted,table=v2} 628
tqscavenger_tasks_expired_remaining{} 7
tqscavenger_tasks_processed_total{table=v1} 308
tqscavenger_tasks_processed_total{table=v2} 608
`)
	if got != want {
		t.Errorf("metrics:\n%s\nwant:\n%s", got, want)
	}
}
