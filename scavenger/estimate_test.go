package scavenger_test

import (
	"testing"
	"time"

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
