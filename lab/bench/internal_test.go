package bench

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/tqscavenger/tqscavenger/sqlstore"
)

func TestScaled(t *testing.T) {
	for _, c := range []struct {
		name        string
		scale       int
		size        string
		tasks, expd int64
	}{
		{"all-expired", 1, "1k×1k", 1_000_000, 1_000_000},
		{"all-expired", 100, "10×1k", 10_000, 10_000},
		{"all-expired", 3000, "1×1k", 1000, 1000},
		{"live-head", 10, "100×1k", 100_000, 50_000},
		{"one-queue", 1000, "1×1k", 1000, 1000},
		{"one-queue", 3, "1×333k", 333_334, 333_334},
		{"idle-queues", 100, "10k×0", 0, 0},
	} {
		cs, err := selectCases([]string{c.name}, c.scale)
		if err != nil {
			t.Fatal(err)
		}
		got := cs[0]
		if got.Size() != c.size || got.Tasks() != c.tasks || got.ExpiredTasks() != c.expd {
			t.Errorf("%s ÷%d: %s, %d tasks, %d expired; want %s, %d, %d", c.name, c.scale, got.Size(), got.Tasks(), got.ExpiredTasks(), c.size, c.tasks, c.expd)
		}
	}
	if _, err := selectCases([]string{"nope"}, 1); err == nil || !strings.Contains(err.Error(), "all-expired") {
		t.Errorf("unknown case: %v, want an error listing the cases", err)
	}
}

func TestWantAndVerify(t *testing.T) {
	live := Cases()[1].Scaled(100) // 10×1k behind a live head
	all := Rows{Tasks: 10_000, Queues: 10}
	half := Rows{Tasks: 5000, Queues: 10}
	for p, want := range map[Pass]Rows{PassDefault: all, PassTemporal: all, PassPastLiveHead: half, PassRaw: half} {
		if got := live.want(p); got != want {
			t.Errorf("live-head %s: want() = %+v, want %+v", p, got, want)
		}
	}
	if got := Cases()[4].Scaled(100).want(PassTemporal); got != (Rows{}) {
		t.Errorf("idle-queues temporal: want() = %+v, want nothing left", got)
	}

	ok := []PassResult{
		{Pass: PassDefault, Left: all, TaskIDSum: 7},
		{Pass: PassTemporal, Left: all, TaskIDSum: 7},
		{Pass: PassPastLiveHead, Left: half, Deleted: Rows{Tasks: 5000}, TaskIDSum: 3},
		{Pass: PassRaw, Left: half, Deleted: Rows{Tasks: 5000}, TaskIDSum: 3},
		{Pass: PassTemporal, TimedOut: true}, // not checked
	}
	if ws := verify(live, ok); len(ws) != 0 {
		t.Errorf("verify: %q, want no warnings", ws)
	}
	bad := append([]PassResult(nil), ok...)
	bad[1].Left, bad[1].Deleted = half, Rows{Tasks: 4000} // deleted behind the head, and miscounted
	bad[3].TaskIDSum = 4                                  // same count as past-live-head, other tasks
	ws := strings.Join(verify(live, bad), "\n")
	for _, w := range []string{"temporal left 5000 tasks", "temporal reported deleting 4000", "left different ones"} {
		if !strings.Contains(ws, w) {
			t.Errorf("verify warnings lack %q:\n%s", w, ws)
		}
	}
}

func TestPrint(t *testing.T) {
	c := Cases()[3].Scaled(1000)
	rep := &Report{Scale: 1000, Repeat: 3, Engines: []EngineReport{{Engine: sqlstore.SQLite, Cases: []CaseReport{{
		Case: c,
		Passes: []PassResult{
			{Pass: PassDefault, Wall: 2 * time.Second, Deleted: Rows{Tasks: 1000, Queues: 1}, Statements: 1234, MaxRSS: 30 << 20},
			{Pass: PassTemporal, Wall: 10 * time.Second, TimedOut: true, Deleted: Rows{Tasks: 10}},
			{Pass: PassRaw, Wall: time.Second, Deleted: Rows{Tasks: 1000, Queues: 1}},
		},
		Listing: &Listing{PageSize: 10, Pages: 100, First: time.Millisecond, Last: 1100 * time.Microsecond},
	}}}, {Engine: sqlstore.MySQL, Err: errTest}}}
	var b strings.Builder
	Print(&b, rep, true)
	out := b.String()
	for _, want := range []string{
		"### sqlite (sizes divided by 1000, median of 3 runs)",
		"| one-queue | 1×1k | default | 2s | 501 | 1,000 + 1 | 1,234 | 30.0 MB | default÷raw 2.00 |",
		"| > 10s |", "temporal÷default > 5.00",
		"last 10% ÷ first 10% = 1.10",
		"temporal was stopped after 10s",
		"### mysql", "not measured: test",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

type testError string

func (e testError) Error() string { return string(e) }

const errTest = testError("test")

func TestFormat(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1k", 1500: "1500", 12_345: "12k", 100_000: "100k", 1_000_000: "1M", 1_234_567: "1.23M"} {
		if got := count64(n); got != want {
			t.Errorf("count64(%d) = %q, want %q", n, got, want)
		}
	}
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 1_234_567: "1,234,567", -1000: "-1,000"} {
		if got := thousands(n); got != want {
			t.Errorf("thousands(%d) = %q, want %q", n, got, want)
		}
	}
	first, last := tenths([]time.Duration{5, 1, 1, 1, 1, 1, 1, 1, 1, 9, 2, 2, 2, 2, 2, 2, 2, 2, 5, 7})
	if first != 3 || last != 6 {
		t.Errorf("tenths = %d, %d; want 3 and 6 (the medians of {5, 1} and {5, 7})", first, last)
	}
}

func TestCmpMySQL(t *testing.T) {
	b := &sqlBuf{engine: sqlstore.MySQL}
	b.cmp(taskCols, []any{1, 2, 3}, ">=")
	want := "(range_hash > ? OR (range_hash = ? AND (task_queue_id > ? OR (task_queue_id = ? AND task_id >= ?))))"
	if b.String() != want || len(b.args) != 5 {
		t.Errorf("MySQL cmp: %s %v\nwant %s", b.String(), b.args, want)
	}
	b = &sqlBuf{engine: sqlstore.Postgres}
	b.cmp(queueCols, []any{1, 2}, "<=")
	if want := "(range_hash, task_queue_id) <= ($1, $2)"; b.String() != want {
		t.Errorf("PostgreSQL cmp: %s, want %s", b.String(), want)
	}
}

// TestOffered: the phases are offered Share of the capacity, or Rate,
// which wins; a share outside 0 < share ≤ 1 is refused, and the printed
// table says what was offered.
func TestOffered(t *testing.T) {
	for _, tc := range []struct {
		name    string
		lo      LiveOptions
		want    float64 // of a capacity of 1000/s
		title   string  // in the printed title
		refused bool
	}{
		{name: "default half", lo: LiveOptions{}, want: 500, title: "offered 0.5 × capacity"},
		{name: "80 %", lo: LiveOptions{Share: 0.8}, want: 800, title: "offered 0.8 × capacity"},
		{name: "all", lo: LiveOptions{Share: 1}, want: 1000, title: "offered 1 × capacity"},
		{name: "rate wins", lo: LiveOptions{Share: 0.8, Rate: 300}, want: 300, title: "offered 300 operations/s (--live-rate)"},
		{name: "negative", lo: LiveOptions{Share: -0.5}, refused: true},
		{name: "above one", lo: LiveOptions{Share: 1.01}, refused: true},
		{name: "NaN", lo: LiveOptions{Share: math.NaN()}, refused: true},
	} {
		lo := tc.lo.withDefaults()
		err := lo.check()
		if tc.refused {
			if err == nil || !strings.Contains(err.Error(), "want 0 < share ≤ 1") {
				t.Errorf("%s: %v, want a refusal", tc.name, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if got := lo.offered(1000); got != tc.want {
			t.Errorf("%s: offered %v, want %v", tc.name, got, tc.want)
		}
		rep := &LiveReport{Repeat: 1, Options: lo, Engines: []LiveEngine{{Engine: sqlstore.Postgres, Case: Cases()[0].Scaled(100),
			Capacity: 1000, Offered: lo.offered(1000), Reps: [][]LiveFigure{{{Phase: LiveNone, Samples: 10}}}}}}
		var b strings.Builder
		PrintLive(&b, rep, true)
		if !strings.Contains(b.String(), "### postgres live load, all-expired 10×1k, lab workload "+tc.title) || !strings.Contains(b.String(), "open loop ("+strings.TrimPrefix(tc.title, "offered ")+")") {
			t.Errorf("%s: the output does not say %q:\n%s", tc.name, tc.title, b.String())
		}
	}
}
