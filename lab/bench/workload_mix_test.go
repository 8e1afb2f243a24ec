package bench

import (
	"context"
	"slices"
	"testing"
	"time"
)

// TestWorkloadMix runs each lab workload's mix on a SQLite database and
// counts the kinds of the operations it issued: each mix issues what its
// doc says, and the lab's default mix is the one its figures were taken
// with (the same calls, in the same order).
func TestWorkloadMix(t *testing.T) {
	const steps = 120 // a multiple of every mix's length
	for _, tc := range []struct {
		workload LiveWorkload
		// want counts each kind per steps operations.
		want map[opKind]int
		// readsAtMost is the reads' share at most, as one in N.
		readsAtMost int
		order       opMix
	}{
		{workload: WorkloadLab, want: map[opKind]int{opAppend: 36, opRead: 36, opComplete: 24, opUpdate: 12, opLease: 12},
			order: opMix{opAppend, opRead, opAppend, opRead, opComplete, opUpdate, opAppend, opRead, opComplete, opLease}},
		{workload: WorkloadLabWrites, want: map[opKind]int{opAppend: 40, opLease: 20, opUpdate: 20, opRead: 20, opComplete: 20}, readsAtMost: 6},
		{workload: WorkloadLabReads, want: map[opKind]int{opAppend: 20, opRead: 80, opComplete: 10, opUpdate: 10}},
	} {
		t.Run(string(tc.workload), func(t *testing.T) {
			mix := mixOf(tc.workload)
			if steps%len(mix) != 0 {
				t.Fatalf("%d steps are not whole rounds of a mix of %d", steps, len(mix))
			}
			ctx := context.Background()
			srv := &sqliteServer{dir: t.TempDir()}
			dsn, err := srv.create(ctx, "mix")
			if err != nil {
				t.Fatal(err)
			}
			// One queue: every operation is the next of its mix.
			w, err := openWorkload(ctx, dsn, 1, 1, mix)
			if err != nil {
				t.Fatal(err)
			}
			defer w.close()
			got := map[opKind]int{}
			var seq []opKind
			for i := range steps {
				s := w.do(ctx, i, time.Now())
				if !s.ok {
					t.Fatalf("operation %d (%s) failed: %v", i, s.kind, w.firstErr)
				}
				got[s.kind]++
				seq = append(seq, s.kind)
			}
			for _, k := range []opKind{opLease, opAppend, opRead, opComplete, opUpdate} {
				if got[k] != tc.want[k] {
					t.Errorf("%d %s operations in %d, want %d (all: %v)", got[k], k, steps, tc.want[k], got)
				}
			}
			if tc.readsAtMost > 0 && got[opRead]*tc.readsAtMost > steps {
				t.Errorf("%d reads in %d operations, want one in %d at most", got[opRead], steps, tc.readsAtMost)
			}
			if tc.order != nil && !slices.Equal(seq[:len(tc.order)], []opKind(tc.order)) {
				t.Errorf("the mix's order is %v, want %v", seq[:len(tc.order)], tc.order)
			}
			// The ledger held: the queue holds what it appended less what
			// it completed, every task a read may have read.
			if n := w.ledgerTasks(); n < 0 {
				t.Errorf("the ledger holds %d tasks", n)
			}
			if left, _, err := countRows(ctx, dsn); err != nil || left.Tasks != w.ledgerTasks() {
				t.Errorf("the database holds %d tasks (%v), the ledger %d", left.Tasks, err, w.ledgerTasks())
			}
		})
	}
	if mixOf(WorkloadPgbench) != nil || mixOf("nope") != nil {
		t.Error("a mix for a workload that is not the lab's")
	}
}
