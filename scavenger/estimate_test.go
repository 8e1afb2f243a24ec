package scavenger_test

import (
	"testing"
	"time"

	"github.com/tqscavenger/tqscavenger/internal/fixture"
	"github.com/tqscavenger/tqscavenger/scavenger"
)

func TestStatsProgress(t *testing.T) {
	for _, c := range []struct {
		name string
		st   scavenger.Stats
		want scavenger.Estimate
	}{
		{"nothing yet", scavenger.Stats{}, scavenger.Estimate{}},
		{"listing", scavenger.Stats{Counts: scavenger.Counts{QueuesListed: 1000, QueuesProcessed: 250, TasksDeleted: 5000}, Elapsed: 2 * time.Second},
			scavenger.Estimate{Done: 250, Listed: 1000, Percent: 25, Rate: 2500}},
		{"listed", scavenger.Stats{ListingDone: true, Counts: scavenger.Counts{QueuesListed: 2000, QueuesProcessed: 500, TasksDeleted: 41500}, Elapsed: 10 * time.Second},
			scavenger.Estimate{Done: 500, Listed: 2000, Final: true, Percent: 25, Rate: 4150, Left: 30 * time.Second, HasLeft: true}},
		{"finishing", scavenger.Stats{ListingDone: true, Counts: scavenger.Counts{QueuesListed: 10, QueuesProcessed: 10}, Elapsed: time.Second},
			scavenger.Estimate{Done: 10, Listed: 10, Final: true, Percent: 100}},
		{"listed, none done", scavenger.Stats{ListingDone: true, Counts: scavenger.Counts{QueuesListed: 10}, Elapsed: time.Second},
			scavenger.Estimate{Listed: 10, Final: true}},
	} {
		got := c.st.Progress()
		if got != c.want {
			t.Errorf("%s: Progress = %+v, want %+v", c.name, got, c.want)
		}
		if fin := got.Finishing(); fin != (c.name == "finishing") {
			t.Errorf("%s: Finishing = %v", c.name, fin)
		}
	}
}

// simulated is a pass over queues holding tasks[i] tasks each, a queue
// taking perQueue and a task perTask, sampled every step; each sample is
// the pass's counts then and the true time left.
func simulated(tasks []int64, perQueue, perTask, step time.Duration, backlogShare float64) (samples []scavenger.Stats, truth []time.Duration) {
	var total time.Duration
	var backlog int64
	for _, n := range tasks {
		total += perQueue + time.Duration(n)*perTask
		backlog += n
	}
	started := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	for at := step; at < total; at += step {
		st := scavenger.Stats{Started: started, Elapsed: at, ListingDone: true, TasksBacklog: int64(float64(backlog) * backlogShare)}
		st.QueuesListed = int64(len(tasks))
		var spent time.Duration
		for _, n := range tasks {
			c := perQueue + time.Duration(n)*perTask
			if spent+c > at {
				// Inside this queue: its tasks examined so far.
				st.TasksProcessed += min(n, int64((at-spent)/perTask))
				break
			}
			spent += c
			st.QueuesProcessed++
			st.TasksProcessed += n
			st.TasksBacklogDone += int64(float64(n) * backlogShare)
		}
		samples, truth = append(samples, st), append(truth, total-at)
	}
	return samples, truth
}

// TestEstimatorTruthful is issue 42's finding 4: the time left counts the
// tasks that remain as well as the queues, learns what each takes, and
// never counts down past zero. The queue count alone, as before, is off by
// more than 2x on the skewed passes (checked, so the test can tell).
func TestEstimatorTruthful(t *testing.T) {
	skewed := make([]int64, 1000) // 900 empty queues, then 100 of 200 tasks
	for i := 900; i < 1000; i++ {
		skewed[i] = 200
	}
	deepFirst := make([]int64, 1000) // the deep queues first
	for i := range 100 {
		deepFirst[i] = 200
	}
	uniform := make([]int64, 1000)
	for i := range uniform {
		uniform[i] = 20
	}
	for _, c := range []struct {
		name         string
		tasks        []int64
		backlogShare float64
		queueOnlyOff bool // the queue count alone is off by more than 2x
	}{
		{"skewed, backlog exact", skewed, 1, true},
		{"skewed, backlog under-reported", skewed, 0.85, true},
		{"deep queues first", deepFirst, 1, true},
		{"uniform", uniform, 1, false},
		{"no backlog counts", uniform, 0, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			samples, truth := simulated(c.tasks, 20*time.Millisecond, 4*time.Millisecond, 250*time.Millisecond, c.backlogShare)
			var e scavenger.Estimator
			worstOld := 1.0
			for i, st := range samples {
				got := e.Update(st)
				if !got.HasLeft {
					if !got.Finishing() {
						t.Fatalf("at %s: no estimate, not finishing: %+v", st.Elapsed, got)
					}
					continue
				}
				if got.Left < time.Second {
					t.Fatalf("at %s: ~%s left", st.Elapsed, got.Left)
				}
				// From a quarter of the pass on (the estimate has seen
				// some of each kind of work), within 2x of the truth,
				// give or take a second.
				if st.Elapsed > (st.Elapsed+truth[i])/4 {
					lo, hi := truth[i]/2-time.Second, 2*truth[i]+time.Second
					if got.Left < lo || got.Left > hi {
						t.Errorf("at %s: ~%s left, truly %s", st.Elapsed, got.Left, truth[i])
					}
					if st.QueuesProcessed > 0 {
						old := time.Duration(float64(st.Elapsed) * float64(st.QueuesListed-st.QueuesProcessed) / float64(st.QueuesProcessed))
						r := max(float64(old)/float64(truth[i]), float64(truth[i])/float64(max(old, 1)))
						worstOld = max(worstOld, r)
					}
				}
			}
			if (worstOld > 2) != c.queueOnlyOff {
				t.Errorf("the queue count alone was off by up to %.1fx; want off by more than 2x: %t", worstOld, c.queueOnlyOff)
			}
		})
	}
}

// TestBacklogOfFixture: a pass over a real Temporal database sums its
// queue rows' approximate_backlog_count (2,931 over the subqueues of its
// v1 rows, for 3,446 task rows; its v2 rows count none), and the estimate
// scales it by the tasks the pass examines of the queues done: in the
// default mode only up to each subqueue's first live task.
func TestBacklogOfFixture(t *testing.T) {
	st := fixturePass(t, fixture.Path(t, "temporal-1.32-aged72h"), scavenger.Config{Rules: scavenger.Rules{DryRun: true}})
	if st.TasksBacklog != 2931 || st.TasksBacklogDone != st.TasksBacklog {
		t.Fatalf("backlog %d, of the queues done %d: want 2931 both", st.TasksBacklog, st.TasksBacklogDone)
	}
	t.Logf("tasks examined %d, backlog counts %d", st.TasksProcessed, st.TasksBacklog)
}
