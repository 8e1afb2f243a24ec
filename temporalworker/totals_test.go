package temporalworker

import (
	"encoding/json"
	"testing"

	"github.com/tqscavenger/tqscavenger/scavenger"
)

// countedStats returns a pass's stats with every count set, each to its
// own multiple of k, so that a count written under the wrong key, or
// left out of a sum, shows.
func countedStats(dryRun bool, k int64) scavenger.Stats {
	var st scavenger.Stats
	st.DryRun = dryRun
	st.QueuesListed, st.QueuesProcessed, st.QueuesDeleted, st.QueuesKept = 1*k, 2*k, 3*k, 4*k
	st.TasksProcessed, st.TasksDeleted, st.TasksExpiredLeft, st.TasksRunNotFound = 5*k, 6*k, 7*k, 8*k
	st.OrphansFound, st.OrphansLeft, st.TasksUnknown, st.QueuesUnknown = 9*k, 10*k, 11*k, 12*k
	st.BadRowCount, st.Errors, st.Retries, st.Dropped, st.Deferred = 13*k, 14*k, 15*k, 16*k, 17*k
	st.WouldDeleteTasks, st.WouldDeleteQueues = 18*k, 19*k
	return st
}

// TestTotalsJSON: a worker's totals are written as every earlier build
// wrote them (heartbeats and results live on in workflow histories, and
// a retry reads an earlier build's heartbeat): the same keys, in the same
// order, the same ones left out; they read back the same; and Add sums
// every count.
func TestTotalsJSON(t *testing.T) {
	for _, tt := range []struct {
		name   string
		totals Totals
		want   string
	}{
		{"zero", Totals{}, `{"queues_listed":0,"queues_processed":0,"queues_deleted":0,"queues_kept":0,"tasks_processed":0,"tasks_deleted":0,"tasks_expired_left":0,"orphans_found":0,"orphans_left":0}`},
		{"dry run, nothing counted", totalsOf(scavenger.Stats{DryRun: true}), `{"queues_listed":0,"queues_processed":0,"queues_deleted":0,"queues_kept":0,"tasks_processed":0,"tasks_deleted":0,"tasks_expired_left":0,"orphans_found":0,"orphans_left":0,"would_delete":{"tasks":0,"queues":0}}`},
		{"pass", totalsOf(countedStats(false, 1)), `{"queues_listed":1,"queues_processed":2,"queues_deleted":3,"queues_kept":4,"tasks_processed":5,"tasks_deleted":6,"tasks_expired_left":7,"orphans_found":9,"orphans_left":10,"tasks_run_not_found":8,"tasks_unknown":11,"queues_unknown":12,"bad_rows":13,"failed_jobs":14,"retries":15,"dropped":16}`},
		{"dry run", totalsOf(countedStats(true, 1)), `{"queues_listed":1,"queues_processed":2,"queues_deleted":3,"queues_kept":4,"tasks_processed":5,"tasks_deleted":6,"tasks_expired_left":7,"orphans_found":9,"orphans_left":10,"tasks_run_not_found":8,"tasks_unknown":11,"queues_unknown":12,"bad_rows":13,"failed_jobs":14,"retries":15,"dropped":16,"would_delete":{"tasks":18,"queues":19}}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b, err := json.Marshal(tt.totals)
			if err != nil || string(b) != tt.want {
				t.Errorf("JSON = %s, %v\nwant   %s", b, err, tt.want)
			}
			var back Totals
			if err := json.Unmarshal([]byte(tt.want), &back); err != nil {
				t.Fatal(err)
			}
			if b, _ := json.Marshal(back); string(b) != tt.want {
				t.Errorf("read back and written again: %s\nwant %s", b, tt.want)
			}
		})
	}
	for _, dry := range []bool{false, true} {
		var sum Totals
		sum.Add(totalsOf(countedStats(dry, 1)))
		sum.Add(totalsOf(countedStats(dry, 2)))
		got, _ := json.Marshal(sum)
		want, _ := json.Marshal(totalsOf(countedStats(dry, 3)))
		if string(got) != string(want) {
			t.Errorf("dry run %v: Add: %s\nwant %s", dry, got, want)
		}
	}
}
