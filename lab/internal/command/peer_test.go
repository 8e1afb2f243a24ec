package command

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tqscavenger/tqscavenger/lab/bench"
)

// TestPeerOptions: --peer takes an executable file (made absolute) and
// only in the idle-database comparison; --peer-flags needs it and leaves
// the lab's own flags of each pass alone.
func TestPeerOptions(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "temporal-scavenger")
	plain := filepath.Join(dir, "notes.txt")
	for f, mode := range map[string]os.FileMode{exe: 0o755, plain: 0o644} {
		if err := os.WriteFile(f, []byte("#!/bin/sh\n"), mode); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		name, peer, flags string
		live              bool
		want              []string // the peer's flags, if accepted
		refused           string   // in the error, if refused
	}{
		{name: "none", want: nil},
		{name: "peer", peer: exe, want: []string{}},
		{name: "flags", peer: exe, flags: "--persistence-max-qps 0 --max-conns=4", want: []string{"--persistence-max-qps", "0", "--max-conns=4"}},
		{name: "flags without peer", flags: "--timeout 1m", refused: "--peer-flags without --peer"},
		{name: "live", peer: exe, live: true, refused: "not with --live-load"},
		{name: "missing", peer: filepath.Join(dir, "nope"), refused: "no such file"},
		{name: "not executable", peer: plain, refused: "not an executable"},
		{name: "directory", peer: dir, refused: "not an executable"},
		{name: "db", peer: exe, flags: "--db sqlite:/x.db", refused: "--db is the lab's"},
		{name: "stats", peer: exe, flags: "--stats-json=/tmp/x", refused: "--stats-json=/tmp/x is the lab's"},
	} {
		o := bench.Options{Peer: c.peer}
		err := peerOptions(&o, c.flags, c.live)
		switch {
		case c.refused != "":
			if err == nil || !strings.Contains(err.Error(), c.refused) {
				t.Errorf("%s: %v, want an error with %q", c.name, err, c.refused)
			} else if _, ok := err.(usageError); !ok {
				t.Errorf("%s: %v is not a usage error", c.name, err)
			}
		case err != nil:
			t.Errorf("%s: %v", c.name, err)
		case !slices.Equal(o.PeerFlags, c.want) || c.peer != "" && !filepath.IsAbs(o.Peer):
			t.Errorf("%s: peer %q flags %q, want flags %q", c.name, o.Peer, o.PeerFlags, c.want)
		}
	}
}
