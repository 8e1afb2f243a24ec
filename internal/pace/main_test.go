package pace

import (
	"io"
	"log/slog"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// feed observes n windows of ScanTasks statements of 100 rows at lat.
func feed(p *Pacer, n int, lat time.Duration) {
	for range n * windowSize {
		p.observe("ScanTasks", 100, lat, false)
	}
}

func bitsLen(n int) int {
	k := 0
	for ; n > 0; n >>= 1 {
		k++
	}
	return k
}
