//go:build !tqs_notemporal

package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"go.temporal.io/api/serviceerror"
)

// TestDialCause: the causes of a failed dial that no local server here
// can produce (refused credentials, no answer in time) are said in words
// too, and every one keeps exit status 4.
func TestDialCause(t *testing.T) {
	tf := &temporalFlags{origins: map[string]origin{"temporal-address": {fromFile, "temporal-address in /etc/tqs.yaml"}}}
	for _, c := range []struct {
		err  error
		says string
	}{
		{fmt.Errorf("failed reaching server: %w", errors.New("rpc error: code = Unauthenticated desc = bad key")), "it refused the credentials; check the API key"},
		{fmt.Errorf("failed reaching server: %w", serviceerror.NewPermissionDenied("no", "")), "it refused the credentials"},
		{fmt.Errorf("failed reaching server: %w", serviceerror.NewDeadlineExceeded("context deadline exceeded")), "no answer within 30s"},
		{fmt.Errorf("failed reaching server: %w", context.DeadlineExceeded), "no answer within 30s"},
		{fmt.Errorf("failed reaching server: %w", errors.New(`connection error: desc = "transport: Error while dialing: dial unix /run/t.sock: connect: no such file or directory"`)),
			"dial unix /run/t.sock: connect: no such file or directory; check the address"},
	} {
		err := tf.dialError("fe:7233", c.err)
		msg := err.Error()
		if !strings.HasPrefix(msg, "cannot reach the Temporal frontend fe:7233 (temporal-address in /etc/tqs.yaml): ") || !strings.Contains(msg, c.says) {
			t.Errorf("%v: %s, want it to say %q", c.err, msg, c.says)
		}
		if exitStatus(err) != ExitUnavailable || !errors.Is(err, c.err) {
			t.Errorf("%v: exit status %d, wraps it %t", c.err, exitStatus(err), errors.Is(err, c.err))
		}
	}
}
