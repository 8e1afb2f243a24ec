package bench

import (
	"context"
	"database/sql"
	"math"
	"runtime"
	"sync"
	"testing"

	"github.com/tqscavenger/tqscavenger/sqlstore"
)

// TestParseRunDelay: schedstat's second field, and what is refused.
func TestParseRunDelay(t *testing.T) {
	for _, c := range []struct {
		line string
		want int64
		ok   bool
	}{
		{"365428836 1368068414 274\n", 1368068414, true},
		{"0 0 0", 0, true},
		{"365428836", 0, false},
		{"", 0, false},
		{"1 x 2", 0, false},
	} {
		got, err := parseRunDelay([]byte(c.line))
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("%q: %d, %v; want %d, ok %v", c.line, got, err, c.want, c.ok)
		}
	}
	if n, err := readRunDelay("/proc/self/schedstat"); err != nil || n < 0 {
		t.Errorf("this process's run delay: %d, %v", n, err)
	}
}

// TestRunDelaysSince: only the tasks that lived through the span count,
// and not those skip names.
func TestRunDelaysSince(t *testing.T) {
	start := runDelays{"7@100": 1e9, "8@100": 2e9, "9@100": 0, "10@50": 5e9}
	end := runDelays{
		"7@100":  1.5e9,  // +0.5 s
		"8@100":  2.25e9, // +0.25 s, but skipped
		"9@300":  4e9,    // pid 9 reused: another task
		"11@400": 3e9,    // started within the span
		"10@50":  5e9,    // waited no more
	}
	if got, want := end.since(start, map[int]bool{8: true}), 0.5; math.Abs(got-want) > 1e-9 {
		t.Errorf("%.3fs, want %.3fs", got, want)
	}
}

// TestWaitClass: pg_stat_activity's wait events as the sampler counts them.
func TestWaitClass(t *testing.T) {
	for _, c := range []struct{ typ, event, want string }{
		{"", "", "CPU"},
		{"LWLock", "WALWrite", "WAL"},
		{"LWLock", "WALInsert", "WAL"},
		{"LWLock", "WALBufMapping", "WAL"},
		{"IO", "WALSync", "WAL"},
		{"IO", "WALWrite", "WAL"},
		{"IO", "DataFileRead", "IO"},
		{"LWLock", "BufferContent", "LWLock"},
		{"Lock", "transactionid", "Lock"},
		{"Client", "ClientRead", "other"},
		{"IPC", "SyncRep", "other"},
	} {
		if got := waitClass(c.typ, c.event); got != c.want {
			t.Errorf("%s/%s: %q, want %q", c.typ, c.event, got, c.want)
		}
	}
}

// TestCostRunDelay: the server's CPU-bound work beside more of it than
// it has CPUs waits for a CPU, and the sampler counts it; on PostgreSQL
// those sessions' time is sampled as CPU.
func TestCostRunDelay(t *testing.T) {
	for _, c := range []struct {
		e    sqlstore.Engine
		busy string
	}{
		{sqlstore.Postgres, "SELECT count(*) FROM generate_series(1, 3000000)"},
		{sqlstore.MySQL, "SELECT BENCHMARK(1500000, MD5('tqscavenger'))"},
	} {
		t.Run(string(c.e), func(t *testing.T) {
			dsn, db := costServer(t, c.e)
			ctx := context.Background()
			// Sessions opened before the span: they live through it.
			n := 3 * max(2, runtime.NumCPU())
			conns := make([]*sql.Conn, n)
			for i := range conns {
				conn, err := db.Conn(ctx)
				if err != nil {
					t.Fatal(err)
				}
				defer conn.Close()
				if err := conn.PingContext(ctx); err != nil {
					t.Fatal(err)
				}
				conns[i] = conn
			}
			s, err := startCost(ctx, c.e, dsn, passIdent{Pids: []int{-1}})
			if err != nil {
				t.Fatal(err)
			}
			var wg sync.WaitGroup
			for _, conn := range conns {
				wg.Go(func() {
					if _, err := conn.ExecContext(ctx, c.busy); err != nil {
						t.Error(err)
					}
				})
			}
			wg.Wait()
			cost := stopCost(t, s)
			if cost.RunDelay == nil || *cost.RunDelay < 0.05 {
				t.Errorf("%s, want a run delay of at least 0.05 s with %d busy sessions", describeCost(cost), n)
			}
			if c.e == sqlstore.Postgres && cost.Waits["CPU"] < 0.05 {
				t.Errorf("waits %v, want CPU at least 0.05 s", cost.Waits)
			}
		})
	}
}
