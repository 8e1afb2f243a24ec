package scavenger

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/tqscavenger/tqscavenger/store"
)

// TestReadFailed: a transient error of the rule's reads before the pass
// (a lost connection, a statement timeout, a cancelled pass) fails the
// pass as any other, so that the command exits as for the database (a
// retry may help); any other error refuses the rule (exit 2).
func TestReadFailed(t *testing.T) {
	for _, c := range []struct {
		name    string
		err     error
		refused bool
	}{
		{"transient", fmt.Errorf("read shards: %w", errors.Join(errors.New("conn reset"), store.ErrTransient)), false},
		{"statement timeout", fmt.Errorf("read executions: %w", errors.Join(store.ErrStatementTimeout, store.ErrTransient, context.DeadlineExceeded)), false},
		{"cancelled", fmt.Errorf("read executions: %w", context.Canceled), false},
		{"table missing", errors.New(`read shards: relation "shards" does not exist`), true},
		{"no privilege", fmt.Errorf("read executions: %w", store.ErrNoPrivilege), true},
	} {
		err := readFailed(c.err)
		if got := errors.Is(err, ErrClosedWorkflowsRefused); got != c.refused {
			t.Errorf("%s: refused %t, want %t (%v)", c.name, got, c.refused, err)
		}
		if !errors.Is(err, c.err) {
			t.Errorf("%s: %v does not wrap the cause", c.name, err)
		}
	}
}
