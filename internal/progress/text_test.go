package progress

import (
	"strings"
	"testing"
	"time"

	"github.com/tqscavenger/tqscavenger/scavenger"
)

func TestText(t *testing.T) {
	listed := scavenger.Stats{ListingDone: true, Counts: scavenger.Counts{QueuesListed: 2000, QueuesProcessed: 500, QueuesDeleted: 400,
		TasksProcessed: 42000, TasksDeleted: 41500}, Elapsed: 10 * time.Second}
	listing := listed
	listing.ListingDone = false
	dry := listed
	dry.DryRun, dry.TasksDeleted, dry.QueuesDeleted, dry.WouldDeleteTasks, dry.WouldDeleteQueues = true, 0, 0, 41500, 400
	gentle := listed
	gentle.Pace = scavenger.PaceState{Mode: scavenger.PaceGentle, InFlight: 1, Allowed: 2, Share: 0.25, Ratio: 1.5, FloorHits: 1}
	full := listed
	full.Pace = scavenger.PaceState{Mode: scavenger.PaceFull, InFlight: 4, Allowed: 4, Share: 1}
	for _, c := range []struct {
		name  string
		st    scavenger.Stats
		dry   bool
		width int
		want  string
	}{
		{"wide", listed, false, 200, "500/2000 queues done (25%), 41500 tasks deleted, 4150/s, ~30s left, 400 queues deleted, 42000 tasks examined, 10s elapsed"},
		{"120 columns", listed, false, 119, "500/2000 queues done (25%), 41500 tasks deleted, 4150/s, ~30s left, 400 queues deleted, 42000 tasks examined"},
		{"70 columns", listed, false, 69, "500/2000 queues done (25%), 41500 tasks deleted, 4150/s, ~30s left"},
		{"50 columns", listed, false, 49, "500/2000 queues done (25%), 41500 tasks deleted"},
		{"20 columns", listed, false, 20, "500/2000 queues done"},
		{"listing", listing, false, 69, "500/2000+ queues done, 41500 tasks deleted, 4150/s"},
		{"dry run", dry, true, 75, "dry run: 500/2000 queues done (25%), would delete 41500 tasks, ~30s left"},
		{"gentle, wide", gentle, false, 250, "500/2000 queues done (25%), 41500 tasks deleted, 4150/s, ~30s left, 400 queues deleted, 42000 tasks examined, 10s elapsed, pace gentle 1/2 at once 25% busy 1.5x baseline (at its floor)"},
		{"gentle, 120 columns: the pace goes first", gentle, false, 119, "500/2000 queues done (25%), 41500 tasks deleted, 4150/s, ~30s left, 400 queues deleted, 42000 tasks examined"},
		{"full, wide", full, false, 200, "500/2000 queues done (25%), 41500 tasks deleted, 4150/s, ~30s left, 400 queues deleted, 42000 tasks examined, 10s elapsed, pace full"},
		{"dry run, wide", dry, true, 200, "dry run: 500/2000 queues done (25%), would delete 41500 tasks, 4150/s, ~30s left, would delete 400 queues, 42000 tasks examined, 10s elapsed"},
	} {
		got := Text(c.st, c.dry, c.width)
		if got != c.want {
			t.Errorf("%s:\n got %q\nwant %q", c.name, got, c.want)
		}
		if len(got) > c.width {
			t.Errorf("%s: %d columns, more than %d", c.name, len(got), c.width)
		}
		if strings.ContainsAny(got, "\r\n\x1b") {
			t.Errorf("%s: control characters in %q", c.name, got)
		}
	}
}
