package faults

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tqscavenger/tqscavenger/internal/testdb"
	"github.com/tqscavenger/tqscavenger/sqlstore"
)

// TestCountsWithPausedNetwork: the network between run and its server
// stops answering just as the server answers a DELETE it ran (a proxy
// holds the answer and everything after it), and comes back only after
// the run has ended; the held answer is never delivered.
//
// Invariant: deleted + unknown (--stats-json) is at least what went, for
// tasks and queue rows, on every server; nothing live is deleted; the
// process exits within exitBound of its last log line once the pass has
// ended (no pool close or cancel request waits on a dead connection).
func TestCountsWithPausedNetwork(t *testing.T) {
	const exitBound = 5 * time.Second
	for _, e := range servers {
		t.Run(string(e), func(t *testing.T) {
			t.Parallel()
			db := testdb.Open(t, e)
			before := seedWorkload(t, db, workload{dead: 60, live: 10, tasksPerQueue: 50})
			px := newProxy(t, db.DSN().URL.Host)
			held := px.pauseAtDelete(e == sqlstore.Postgres)
			stats := filepath.Join(t.TempDir(), "stats.json")
			// No statement timeout: the lock's check, on the same network,
			// is what stops the pass, cancelling the held delete.
			p := start(t, "run", "--db", px.via(dsnOf(db)), "--progress", "never", "--retry-for", "4s",
				"--list-page-size", "5", "--task-batch-size", "100", "--workers", "4", "--stats-json", stats, "--log-format", "json")
			<-held
			code := p.wait(stallBound)
			ended := time.Now()
			px.resume()
			var st struct {
				Outcome       string `json:"outcome"`
				TasksDeleted  int64  `json:"tasks_deleted"`
				TasksUnknown  int64  `json:"tasks_unknown"`
				QueuesDeleted int64  `json:"queues_deleted"`
				QueuesUnknown int64  `json:"queues_unknown"`
			}
			b, err := os.ReadFile(stats)
			if err != nil {
				t.Fatalf("exit %d without --stats-json: %v", code, err)
			}
			if err := json.Unmarshal(b, &st); err != nil {
				t.Fatal(err)
			}
			after := snapshot(t, db)
			tasksGone, queuesGone := checkSafe(t, before, after)
			last := lastLogTime(t, p)
			t.Logf("exit %d (%s), %s after its last log line; tasks %d deleted + %d unknown, %d went; queues %d deleted + %d unknown, %d went",
				code, st.Outcome, ended.Sub(last).Round(time.Millisecond), st.TasksDeleted, st.TasksUnknown, tasksGone, st.QueuesDeleted, st.QueuesUnknown, queuesGone)
			if st.TasksDeleted+st.TasksUnknown < int64(tasksGone) {
				t.Errorf("tasks: %d deleted + %d unknown < %d that went: the pass under-reports", st.TasksDeleted, st.TasksUnknown, tasksGone)
			}
			if st.QueuesDeleted+st.QueuesUnknown < int64(queuesGone) {
				t.Errorf("queues: %d deleted + %d unknown < %d that went: the pass under-reports", st.QueuesDeleted, st.QueuesUnknown, queuesGone)
			}
			if d := ended.Sub(last); d > exitBound {
				t.Errorf("the process exited %s after its last log line (bound %s)", d, exitBound)
			}
		})
	}
}

// lastLogTime is the time of the last JSON log line of p.
func lastLogTime(t *testing.T, p *proc) time.Time {
	t.Helper()
	var last time.Time
	for _, l := range strings.Split(p.output(), "\n") {
		var m struct {
			Time time.Time `json:"time"`
		}
		if json.Unmarshal([]byte(l), &m) == nil && !m.Time.IsZero() {
			last = m.Time
		}
	}
	if last.IsZero() {
		t.Fatal("no JSON log line")
	}
	return last
}
