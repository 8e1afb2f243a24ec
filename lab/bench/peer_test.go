package bench_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tqscavenger/tqscavenger/lab/bench"
	"github.com/tqscavenger/tqscavenger/sqlstore"
)

// peerBinary returns the temporal-scavenger executable TQS_LAB_PEER
// names, building it there from the interop module when the file does
// not exist yet (minutes with a cold build cache: Temporal's server
// packages); without TQS_LAB_PEER the test is skipped.
func peerBinary(t *testing.T) string {
	t.Helper()
	path := os.Getenv("TQS_LAB_PEER")
	if path == "" {
		t.Skip("the peer pass runs Temporal's own scavenger: set TQS_LAB_PEER to a temporal-scavenger executable (cd interop && go build ./cmd/temporal-scavenger), or to a path where the test builds it (minutes with a cold build cache)")
	}
	path, err := filepath.Abs(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		start := time.Now()
		cmd := exec.Command("go", "build", "-o", path, "./cmd/temporal-scavenger")
		cmd.Dir = filepath.Join("..", "..", "interop")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build ./cmd/temporal-scavenger in %s: %v\n%s", cmd.Dir, err, out)
		}
		t.Logf("built %s in %s", path, time.Since(start).Round(time.Second))
	} else if err != nil {
		t.Fatal(err)
	}
	return path
}

// TestPeerPass: with Options.Peer each case also runs Temporal's own
// scavenger on a copy of its seed, which leaves what Temporal's rules
// leave (everything behind a live head, nothing of all-expired), and the
// table sets it beside the default pass.
func TestPeerPass(t *testing.T) {
	peer := peerBinary(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	o := bench.Options{Engines: []sqlstore.Engine{sqlstore.SQLite}, Cases: []string{"all-expired", "live-head"}, Scale: 1000,
		Binaries: []bench.Binary{{Path: exe}}, Self: exe, Env: append(os.Environ(), childVar+"=1"), Dir: t.TempDir(), Log: logWriter{t},
		Peer: peer}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	rep, err := bench.Run(ctx, o)
	if err != nil {
		t.Fatalf("bench: %v", err)
	}
	for _, cr := range rep.Engines[0].Cases {
		c := cr.Case
		if len(cr.Warnings) > 0 {
			t.Errorf("%s: warnings %q", c.Name, cr.Warnings)
		}
		var peers []bench.PassResult
		for _, p := range cr.Passes {
			if p.Pass == bench.PassPeer {
				peers = append(peers, p)
			}
		}
		if len(peers) != 1 {
			t.Fatalf("%s: %d peer passes, want 1", c.Name, len(peers))
		}
		p := peers[0]
		want := bench.Rows{}
		if c.Name == "live-head" {
			want = bench.Rows{Tasks: c.Tasks(), Queues: int64(c.Queues)}
		}
		switch {
		case p.Err != nil:
			t.Errorf("%s: %v", c.Name, p.Err)
		case p.Left != want || p.Deleted.Tasks+p.Left.Tasks != c.Tasks() || p.Deleted.Queues+p.Left.Queues != int64(c.Queues):
			t.Errorf("%s: the peer deleted %+v and left %+v, want %+v left", c.Name, p.Deleted, p.Left, want)
		case p.Peer == nil || p.Peer.Calls <= 0 || p.Peer.Temporal != "1.32.1" || p.Peer.MaxQPS != 500 || p.Peer.Work <= 0 || p.Peer.Work > p.Wall:
			t.Errorf("%s: the peer's own report %+v (wall %s)", c.Name, p.Peer, p.Wall)
		}
	}
	var out bytes.Buffer
	bench.Print(&out, rep, false)
	t.Logf("\n%s", out.String())
	for _, s := range []string{"temporal-peer", "peer÷default", " calls", "temporal-peer is Temporal 1.32.1's own task queue scavenger"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("the table lacks %q", s)
		}
	}
}
