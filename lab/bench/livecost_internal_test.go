package bench

import (
	"strings"
	"testing"
	"time"

	"github.com/tqscavenger/tqscavenger/sqlstore"
)

// TestLiveCostFigures: a phase's database-side figures are its rounds'
// medians, the server's CPU and log beyond the same repetition's no-pass
// rate; the table prints the median over repetitions with the rounds'
// min–max, and a figure no round measured as "n/a" with its reason in
// the notes.
func TestLiveCostFigures(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	i := func(v int64) *int64 { return &v }
	cost := func(span time.Duration, pass, server *float64, wal *int64, why map[string]string) LiveRoundCost {
		return LiveRoundCost{Cost: Cost{Engine: sqlstore.Postgres, Span: span, PassCPU: pass, ServerCPU: server, WALBytes: wal, BlockedSeconds: f(0), Why: why}}
	}
	rep := func(k float64) []LiveFigure {
		return []LiveFigure{
			// No pass: 0.5 s of CPU and 1 MB of WAL per second.
			{Phase: LiveNone, Costs: []LiveRoundCost{cost(2*time.Second, f(0), f(1), i(2e6), nil), cost(4*time.Second, f(0), f(2), i(4e6), nil)}},
			// Three rounds of 2 s: beyond 1 s of CPU and 2 MB.
			{Phase: LiveDefault, Costs: []LiveRoundCost{
				cost(2*time.Second, f(0.1*k), f(1.5), i(5e6), nil),
				cost(2*time.Second, f(0.3*k), f(1+k), i(3e6), nil),
				cost(2*time.Second, f(0.2*k), nil, i(4e6), map[string]string{"ServerCPU": "the postmaster is gone"}),
			}},
			{Phase: LiveFull, Costs: []LiveRoundCost{cost(time.Second, nil, nil, nil, map[string]string{"PassCPU": "no privilege", "ServerCPU": "no privilege", "WALBytes": "no privilege"})}},
		}
	}
	reps := [][]LiveFigure{rep(1), rep(2), rep(3)}
	for _, figs := range reps {
		setDB(figs)
	}
	d := reps[0][1].DB
	if d.PassCPU.Median != 0.2 || len(d.PassCPU.Rounds) != 3 || d.ServerCPU.Median != 0.5 || len(d.ServerCPU.Rounds) != 2 ||
		d.ServerCPU.Why != "the postmaster is gone" || d.LogMB.Median != 2 || d.LogMB.Rounds[0] != 3 {
		t.Errorf("default, repetition 1: %+v", d)
	}
	var notes []string
	for _, tc := range []struct {
		col  int
		j    int
		want string
	}{
		{0, 1, "0.40 (0.10–0.90)"}, // medians 0.2, 0.4, 0.6; rounds 0.1 to 0.9
		{1, 1, "0.50 (0.50–3.00)"}, // rounds 0.5 and 1, 2 or 3: medians 0.5
		{2, 1, "2.0 (1.0–3.0)"},
		{3, 1, "0.00"},
		{0, 0, "—"},
		{0, 2, "n/a"},
	} {
		c := dbColumns(sqlstore.Postgres)[tc.col]
		if got := dbCell(c, column(reps, tc.j), &notes); got != tc.want {
			t.Errorf("%s, %s: %q, want %q", c.name, reps[0][tc.j].Phase, got, tc.want)
		}
	}
	joined := strings.Join(notes, "\n")
	for _, want := range []string{"pass CPU s, full: n/a: no privilege", "server CPU s over no pass, default: n/a in some rounds: the postmaster is gone"} {
		if !strings.Contains(joined, want) {
			t.Errorf("notes without %q:\n%s", want, joined)
		}
	}
	// Without a no-pass phase, the server's figures have no rate to be
	// over.
	figs := rep(1)[1:]
	setDB(figs)
	if d := figs[0].DB; d.ServerCPU.ok() || !strings.Contains(d.ServerCPU.Why, "no no-pass phase") || !d.PassCPU.ok() {
		t.Errorf("without a no-pass phase: %+v", d)
	}
}
