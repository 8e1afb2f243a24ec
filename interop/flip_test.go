package interop

// The other table version's queue rows (issue 26, docs/rules.md): beside a
// live Temporal only the row of the active table version (v1 with fairness
// off, v2 with it on) is kept fresh; matching writes the other row only
// while it drains it, and sets up a drain only for a new active row or one
// whose other_has_tasks is set. So the other rows tqscavenger deletes at
// the 48 h grace stay absent while matching runs, and a fairness flip
// re-creates them at range_id 1 and drains the old table.

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	persistencespb "go.temporal.io/server/api/persistence/v1"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// otherRows is what became of the other table version's queue rows that
// tqscavenger deleted in phase 2, of queues whose active row it kept (in
// active use: matching re-leased it after the restart).
type otherRows struct {
	table      string   // task_queues_v2 (fairness off) or task_queues
	deleted    int      // rows present before phase 2's pass, absent after it or at phase 2's end
	absent     int      // of these, still absent at phase 2's end
	recreated  []string // re-created by a drain: the active row had other_has_tasks set
	unexplain  []string // re-created though the active row said the other table is empty
	activeGone int      // deleted rows whose active row was deleted too (not counted above)
	// gone are the ids of every other-table row present before phase 2's
	// pass and absent at its end, whatever became of the active row: the
	// rows the fairness flip should re-create.
	gone map[string]bool
}

func (o otherRows) String() string {
	return fmt.Sprintf("%s rows of queues in active use deleted %d, absent at phase 2's end %d, re-created by a drain %d, re-created otherwise %d (and %d deleted with their active row)",
		o.table, o.deleted, o.absent, len(o.recreated), len(o.unexplain), o.activeGone)
}

// tablesOf returns the active and the other queue table of a run.
func tablesOf(fairness bool) (active, other string) {
	if fairness {
		return "task_queues_v2", "task_queues"
	}
	return "task_queues", "task_queues_v2"
}

// checkOtherRows checks phase 2's other-table rows: before is the
// inventory before the first pass, after the one right after it, end the
// one at phase 2's end with the server still running.
func (rep *report) checkOtherRows(before, after, end inventory) {
	active, other := tablesOf(rep.cfg.fairness)
	o := otherRows{table: other, gone: map[string]bool{}}
	byID := func(inv inventory, table string) map[string]queueRow {
		m := map[string]queueRow{}
		for _, r := range inv.queues[table] {
			m[string(r.id)] = r
		}
		return m
	}
	aBefore, aAfter, aEnd := byID(before, active), byID(after, active), byID(end, active)
	oAfter, oEnd := byID(after, other), byID(end, other)
	for _, r := range before.queues[other] {
		id := string(r.id)
		a, inAfter := oAfter[id]
		e, inEnd := oEnd[id]
		if !inEnd {
			o.gone[id] = true
		}
		if inAfter && inEnd && e.rangeID >= a.rangeID {
			continue // kept, or not deleted yet
		}
		// Deleted by the first pass (absent after it) or later by serve
		// (absent at the end, or there again at a lower range_id).
		// The active row was kept: after the pass it is the row of before
		// the restart, re-leased by matching (a higher range_id) or
		// untouched (the same aged last_update_time; a row deleted and
		// re-created restarts at range_id 1 with a fresh one), and at the
		// end it has not gone back in range_id.
		ab, ok1 := aBefore[id]
		aa, ok2 := aAfter[id]
		ae, ok3 := aEnd[id]
		kept := ok1 && ok2 && ok3 && ae.rangeID >= aa.rangeID &&
			(aa.rangeID > ab.rangeID || aa.rangeID == ab.rangeID && aa.info.GetLastUpdateTime().AsTime().Equal(ab.info.GetLastUpdateTime().AsTime()))
		if !kept {
			o.activeGone++
			continue
		}
		o.deleted++
		// A drain is set up when the active row is loaded with
		// other_has_tasks set (it is set only on a row created afresh):
		// the row as it was before the restart, after the pass, or now.
		flagged := ab.info.GetOtherHasTasks() || aa.info.GetOtherHasTasks() || ae.info.GetOtherHasTasks()
		why := fmt.Sprintf("%s type %d: %s range_id %d before, %d now (present %t); active row range_id %d -> %d, other_has_tasks %t/%t/%t (before, after the pass, now)",
			r.info.GetName(), r.info.GetTaskType(), other, r.rangeID, e.rangeID, inEnd, ab.rangeID, ae.rangeID,
			ab.info.GetOtherHasTasks(), aa.info.GetOtherHasTasks(), ae.info.GetOtherHasTasks())
		switch {
		case !inEnd:
			o.absent++
		case flagged:
			o.recreated = append(o.recreated, why)
		default:
			o.unexplain = append(o.unexplain, why)
		}
	}
	rep.other = o
	if o.deleted == 0 {
		rep.fail("phase 2: tqscavenger deleted no %s row of a queue in active use: the other-table check proves nothing", other)
	}
	for _, u := range o.unexplain {
		rep.fail("phase 2: matching re-created a deleted %s row though its queue's active row says the other table is empty (docs/rules.md says it does not): %s", other, u)
	}
}

// partitionIDs are the task_queue_ids of every partition (Temporal's
// default 4) and subqueue (up to 8) of an activity queue.
func partitionIDs(ns uuid.UUID, names []string) map[string]string {
	ids := map[string]string{}
	for _, n := range names {
		for p := 0; p < 4; p++ {
			pn := n
			if p > 0 {
				pn = fmt.Sprintf("/_sys/%s/%d", n, p)
			}
			for k := 0; k < 8; k++ {
				ids[string(queueID(ns, pn, 2, k))] = n
			}
		}
	}
	return ids
}

// flip is what phase 3, the fairness flip, found.
type flip struct {
	ran                bool
	queues             int // activity queues flipped
	v1Backlog          int // their tasks in the v1 table before fairness went on
	v2Backlog          int // their tasks in the v2 table before it went off again
	gone               int // v2 rows tqscavenger deleted in phase 2, absent before the flip
	recreatedAt1       int // of these, re-created at range_id 1 once fairness was on
	recreatedLater     int // re-created and taken over again since (range_id > 1)
	tookOn, tookOff    time.Duration
	drainedV1, drained bool
}

func (f flip) String() string {
	if !f.ran {
		return "not run"
	}
	return fmt.Sprintf("%d activity queues; v1 backlog %d tasks, drained after fairness on %t (%s); v2 rows tqscavenger deleted %d, re-created at range_id 1 with fairness on %d (and at a higher one %d); v2 backlog %d tasks, drained after fairness off %t (%s)",
		f.queues, f.v1Backlog, f.drainedV1, f.tookOn.Round(time.Second), f.gone, f.recreatedAt1, f.recreatedLater, f.v2Backlog, f.drained, f.tookOff.Round(time.Second))
}

// fairnessFlip is phase 3 of a fairness-off run, with the server running
// and the workers of phase 2: the activity queues get a backlog in the v1
// table with their workers stopped, fairness goes on (the dynamic config
// file; matching unloads its queues on the change), the workers come back
// and the backlog is served from v1 by the v2 manager's drain; then a
// backlog in the v2 table, fairness off again, and it is served from v2.
// Checked: each backlog is drained from the old table, every workflow
// completes (phase "phase3"), and in the scavenged run the v2 root rows
// tqscavenger deleted are re-created at range_id 1. The control does the
// same, so that Temporal's error kinds can be compared.
func (rep *report) fairnessFlip(ctx context.Context, t *testing.T, ts *temporalServer, db *engineDB, wl *workload, ns uuid.UUID) {
	f := &rep.flip
	f.ran = true
	acts := wl.q.act
	f.queues = len(acts)
	ids := partitionIDs(ns, acts)
	// tasks returns the keys of the activity queues' tasks in table.
	tasks := func(table string) map[string]bool {
		rows, err := readTaskRows(ctx, db.raw, table)
		if err != nil {
			t.Fatalf("%s: %v", ts.tag, err)
		}
		m := map[string]bool{}
		for _, r := range rows {
			if _, ok := ids[string(r.id)]; ok {
				m[fmt.Sprintf("%x/%d/%d", r.id, r.pass, r.taskID)] = true
			}
		}
		return m
	}
	// waitFor polls table until ok holds of its tasks; false after a
	// minute.
	waitFor := func(table string, ok func(map[string]bool) bool) bool {
		deadline := time.Now().Add(time.Minute)
		for {
			if ok(tasks(table)) {
				return true
			}
			if time.Now().After(deadline) || ctx.Err() != nil {
				return false
			}
			time.Sleep(300 * time.Millisecond)
		}
	}
	// backlog stops the activity workers and starts a workflow per
	// activity queue; it returns the new tasks, once each is in table.
	backlog := func(round int, table string) map[string]bool {
		wl.w.stop(acts...)
		old := tasks(table)
		for i, a := range acts {
			sp := spec{ID: fmt.Sprintf("p3-%d-%02d", round, i), Steps: []step{{Queue: a, StartTimeout: 20 * time.Minute}}}
			if err := wl.startWorkflow(ctx, "phase3", pick(wl.q.wf, i), sp, 0); err != nil {
				t.Fatalf("%s: %v", ts.tag, err)
			}
		}
		fresh := map[string]bool{}
		if !waitFor(table, func(m map[string]bool) bool {
			for k := range m {
				if !old[k] {
					fresh[k] = true
				}
			}
			return len(fresh) >= len(acts)
		}) {
			rep.fail("phase 3: %d of the %d activity tasks of the backlog reached %s", len(fresh), len(acts), table)
		}
		return fresh
	}
	// drained waits until none of the backlog is left in table.
	drained := func(table string, backlog map[string]bool) bool {
		return waitFor(table, func(m map[string]bool) bool {
			for k := range backlog {
				if m[k] {
					return false
				}
			}
			return true
		})
	}
	f.gone = len(rep.other.gone)

	// Fairness on: the v1 backlog is served by the drain.
	b1 := backlog(1, "tasks")
	f.v1Backlog = len(b1)
	start := time.Now()
	if err := ts.setFairness(ctx, true); err != nil {
		t.Fatalf("%s: %v", ts.tag, err)
	}
	if err := wl.w.startAll(acts, activitiesOnly); err != nil {
		t.Fatalf("%s: %v", ts.tag, err)
	}
	wl.waitPhase(ctx, "phase3")
	f.drainedV1 = drained("tasks", b1)
	f.tookOn = time.Since(start)
	if !f.drainedV1 {
		rep.fail("phase 3: with fairness on, the v1 table still holds tasks of the backlog: the old table was not drained")
	}
	rows, err := readQueueRows(ctx, db.raw, "task_queues_v2")
	if err != nil {
		t.Fatalf("%s: %v", ts.tag, err)
	}
	for _, r := range rows {
		switch {
		case !rep.other.gone[string(r.id)]:
		case r.rangeID == 1:
			f.recreatedAt1++
		default:
			f.recreatedLater++
		}
	}
	if rep.cfg.kind != noScavenger && f.recreatedAt1 == 0 {
		rep.fail("phase 3: with fairness on, none of the %d v2 rows tqscavenger had deleted was re-created at range_id 1 (%d at a higher one)", f.gone, f.recreatedLater)
	}

	// Fairness off again: the v2 backlog is served by the drain.
	b2 := backlog(2, "tasks_v2")
	f.v2Backlog = len(b2)
	start = time.Now()
	if err := ts.setFairness(ctx, false); err != nil {
		t.Fatalf("%s: %v", ts.tag, err)
	}
	if err := wl.w.startAll(acts, activitiesOnly); err != nil {
		t.Fatalf("%s: %v", ts.tag, err)
	}
	wl.waitPhase(ctx, "phase3")
	f.drained = drained("tasks_v2", b2)
	f.tookOff = time.Since(start)
	if !f.drained {
		rep.fail("phase 3: with fairness off again, the v2 table still holds tasks of the backlog: it was not drained")
	}
	rep.phase3 = wl.outcome("phase3")
}

// setFairness rewrites the server's dynamic config with fairness on or off
// and waits until the server has read it (it logs "Updated dynamic config"
// on each change it reads; it reads the file every 10 s).
func (ts *temporalServer) setFairness(ctx context.Context, on bool) error {
	log := ts.logPaths[len(ts.logPaths)-1]
	const line = "Updated dynamic config"
	seen := func() int {
		b, _ := os.ReadFile(log)
		return strings.Count(string(b), line)
	}
	n := seen()
	if err := os.WriteFile(ts.dynPath, []byte(dynamicConfig(on)), 0o644); err != nil {
		return err
	}
	deadline := time.Now().Add(time.Minute)
	for seen() == n {
		if time.Now().After(deadline) {
			return fmt.Errorf("the server did not read the dynamic config (fairness %s) within 1m", onOff(on))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	return nil
}

// TestCheckOtherRows checks the rule for the other table version's rows
// deleted in phase 2: absent at the end is the contract; back again only
// by a drain (the active row's other_has_tasks set); back otherwise fails;
// a row deleted with its active row is not counted. It needs no server.
func TestCheckOtherRows(t *testing.T) {
	aged := timestamppb.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	fresh := timestamppb.New(time.Date(2026, 1, 4, 0, 0, 0, 0, time.UTC))
	row := func(table, name string, rangeID int64, lut *timestamppb.Timestamp, other bool) queueRow {
		return queueRow{table: table, id: []byte(name), rangeID: rangeID,
			info: &persistencespb.TaskQueueInfo{Name: name, TaskType: 2, LastUpdateTime: lut, OtherHasTasks: other}}
	}
	inv := func(rows ...queueRow) inventory {
		i := inventory{queues: map[string][]queueRow{}}
		for _, r := range rows {
			i.queues[r.table] = append(i.queues[r.table], r)
		}
		return i
	}
	const v1, v2 = "task_queues", "task_queues_v2"
	for _, c := range []struct {
		name               string
		before, after, end inventory
		want               func(otherRows) bool
		wantFail           bool
	}{
		{"deleted, stays absent",
			inv(row(v1, "q", 3, aged, false), row(v2, "q", 2, aged, false)),
			inv(row(v1, "q", 4, fresh, false)),
			inv(row(v1, "q", 4, fresh, false)),
			func(o otherRows) bool { return o.deleted == 1 && o.absent == 1 }, false},
		{"deleted, re-created by a drain",
			inv(row(v1, "q", 3, aged, true), row(v2, "q", 2, aged, false)),
			inv(row(v1, "q", 4, fresh, true)),
			inv(row(v1, "q", 4, fresh, false), row(v2, "q", 1, fresh, true)),
			func(o otherRows) bool { return o.deleted == 1 && len(o.recreated) == 1 }, false},
		{"deleted, re-created without a drain",
			inv(row(v1, "q", 3, aged, false), row(v2, "q", 2, aged, false)),
			inv(row(v1, "q", 4, fresh, false)),
			inv(row(v1, "q", 4, fresh, false), row(v2, "q", 1, fresh, false)),
			func(o otherRows) bool { return len(o.unexplain) == 1 }, true},
		{"deleted with its active row (re-created at range_id 1)",
			inv(row(v1, "q", 1, aged, false), row(v2, "q", 1, aged, false)),
			inv(row(v1, "q", 1, fresh, true)),
			inv(row(v1, "q", 1, fresh, false), row(v2, "q", 1, fresh, true)),
			func(o otherRows) bool { return o.activeGone == 1 && o.deleted == 0 }, true}, // and nothing deleted of a queue in active use: proves nothing
		{"kept",
			inv(row(v1, "q", 3, aged, false), row(v2, "q", 2, aged, false)),
			inv(row(v1, "q", 4, fresh, false), row(v2, "q", 2, aged, false)),
			inv(row(v1, "q", 4, fresh, false), row(v2, "q", 2, aged, false)),
			func(o otherRows) bool { return o.deleted == 0 && o.activeGone == 0 }, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			rep := &report{cfg: runConfig{engine: "postgres", kind: realServe}}
			rep.checkOtherRows(c.before, c.after, c.end)
			if !c.want(rep.other) {
				t.Errorf("got %s", rep.other)
			}
			if (len(rep.problems) > 0) != c.wantFail {
				t.Errorf("problems %q, want failed %t", rep.problems, c.wantFail)
			}
		})
	}
}
