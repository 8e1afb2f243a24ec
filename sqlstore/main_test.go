package sqlstore_test

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/tqscavenger/tqscavenger/internal/testdb"
)

// TestMain checks, after a run that passed, that no test left a goroutine
// behind.
func TestMain(m *testing.M) {
	code := m.Run()
	testdb.StopTLSServers() // before the leak check: they have goroutines
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}
