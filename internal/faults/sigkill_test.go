package faults

import (
	"math/rand/v2"
	"syscall"
	"testing"
	"time"

	"github.com/tqscavenger/tqscavenger/internal/testdb"
)

// TestSIGKILLThenRerun kills `run` with SIGKILL at pseudo-random points of
// its pass (the seed is fixed, so a failure reproduces), several times in
// a row on one database, then reruns it.
//
// Invariant: after every kill, nothing live is gone, no queue row with
// live tasks is gone, and no task is without its queue row (each
// statement is atomic, so a pass cut anywhere leaves nothing half done);
// the kernel or the server frees the dead process's lock, and the rerun
// exits 0 and finishes the job.
func TestSIGKILLThenRerun(t *testing.T) {
	for i, e := range []string{"sqlite", "postgres", "mysql"} {
		t.Run(e, func(t *testing.T) {
			t.Parallel()
			db := testdb.Open(t, engines[e])
			w := workload{dead: 150, live: 10, tasksPerQueue: 10}
			before := seedWorkload(t, db, w)
			rng := rand.New(rand.NewPCG(uint64(i), 0x5167))
			for kill := 0; kill < 4; kill++ {
				p := start(t, "run", "--db", dsnOf(db), "--progress", "never", "--wait-lock", "--list-page-size", "5", "--max-statements-per-second", "30")
				delay := time.Duration(100+rng.IntN(900)) * time.Millisecond
				select {
				case <-time.After(delay):
				case <-p.done:
				}
				p.cmd.Process.Signal(syscall.SIGKILL)
				code := p.wait(time.Minute)
				after := snapshot(t, db)
				tasks, queues := checkSafe(t, before, after)
				t.Logf("kill %d after %s (exit %d): %d tasks and %d queues gone so far", kill+1, delay, code, tasks, queues)
			}
			if code, out := tqs(t, time.Minute, "run", "--db", dsnOf(db), "--progress", "never", "--wait-lock"); code != 0 {
				t.Fatalf("rerun: exit %d:\n%s", code, out)
			}
			final := snapshot(t, db)
			checkSafe(t, before, final)
			checkFinished(t, final, w)
		})
	}
}
