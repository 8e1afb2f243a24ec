package cli

import (
	"encoding/json"
	"testing"

	"github.com/tqscavenger/tqscavenger/scavenger"
)

// TestStatsMap: run's --output json and --stats-json keep their keys and
// values: every count under the name run has always written it, a dry
// run's would_delete apart, nothing more.
func TestStatsMap(t *testing.T) {
	counted := func(dryRun bool) scavenger.Stats {
		var st scavenger.Stats
		st.DryRun = dryRun
		st.QueuesListed, st.QueuesProcessed, st.QueuesDeleted, st.QueuesKept = 1, 2, 3, 4
		st.TasksProcessed, st.TasksDeleted, st.TasksExpiredLeft, st.TasksRunNotFound = 5, 6, 7, 8
		st.OrphansFound, st.OrphansLeft, st.TasksUnknown, st.QueuesUnknown = 9, 10, 11, 12
		st.BadRowCount, st.Errors, st.Retries, st.Dropped, st.Deferred = 13, 14, 15, 16, 17
		st.WouldDeleteTasks, st.WouldDeleteQueues = 18, 19
		return st
	}
	for _, tt := range []struct {
		name string
		st   scavenger.Stats
		want string
	}{
		{"zero", scavenger.Stats{}, `{"bad_rows":0,"cause":"","deferred":0,"dropped":0,"dry_run":false,"elapsed_seconds":0,"errors":0,"failures_by_cause":{},"orphans_found":0,"outcome":"","queues_deleted":0,"queues_kept":0,"queues_listed":0,"queues_processed":0,"queues_unknown":0,"resumed":false,"resumed_from":null,"retries":0,"statements":20,"tasks_deleted":0,"tasks_expired_left":0,"tasks_processed":0,"tasks_run_not_found":0,"tasks_unknown":0}`},
		{"pass", counted(false), `{"bad_rows":13,"cause":"","deferred":17,"dropped":16,"dry_run":false,"elapsed_seconds":0,"errors":14,"failures_by_cause":{},"orphans_found":9,"outcome":"","queues_deleted":3,"queues_kept":4,"queues_listed":1,"queues_processed":2,"queues_unknown":12,"resumed":false,"resumed_from":null,"retries":15,"statements":20,"tasks_deleted":6,"tasks_expired_left":7,"tasks_processed":5,"tasks_run_not_found":8,"tasks_unknown":11}`},
		{"dry run", counted(true), `{"bad_rows":13,"cause":"","deferred":17,"dropped":16,"dry_run":true,"elapsed_seconds":0,"errors":14,"failures_by_cause":{},"orphans_found":9,"outcome":"","queues_deleted":3,"queues_kept":4,"queues_listed":1,"queues_processed":2,"queues_unknown":12,"resumed":false,"resumed_from":null,"retries":15,"statements":20,"tasks_deleted":6,"tasks_expired_left":7,"tasks_processed":5,"tasks_run_not_found":8,"tasks_unknown":11,"would_delete":{"queues":19,"tasks":18}}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m := statsMap(tt.st, 20)
			if _, ok := m["pace"]; !ok {
				t.Error("no pace")
			}
			delete(m, "pace") // PaceState's, not counts
			b, err := json.Marshal(m)
			if err != nil || string(b) != tt.want {
				t.Errorf("JSON = %s, %v\nwant   %s", b, err, tt.want)
			}
			for k, v := range m {
				switch k {
				case "dry_run", "outcome", "cause", "resumed", "resumed_from", "failures_by_cause", "elapsed_seconds", "pace", "would_delete":
				default:
					if _, ok := v.(int64); !ok {
						t.Errorf("%s is a %T, want int64", k, v)
					}
				}
			}
		})
	}
}
