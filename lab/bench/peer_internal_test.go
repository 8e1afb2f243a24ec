package bench

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestPeerRules: the peer leaves what Temporal's rules leave, runs once
// per case after the others, and its figures reach the table.
func TestPeerRules(t *testing.T) {
	live := Cases()[1].Scaled(100) // 10×1k behind a live head
	if got, want := live.want(PassPeer), (Rows{Tasks: 10_000, Queues: 10}); got != want {
		t.Errorf("live-head peer: want() = %+v, want %+v (nothing behind a live head)", got, want)
	}
	if got := Cases()[0].Scaled(100).want(PassPeer); got != (Rows{}) {
		t.Errorf("all-expired peer: want() = %+v, want nothing left", got)
	}
	r := &runner{o: Options{Peer: "/bin/peer", PeerFlags: []string{"--persistence-max-qps", "0"}}}
	if ps := r.passes(live); ps[len(ps)-1] != PassPeer {
		t.Errorf("passes %v: the peer is not last", ps)
	}
	if ps := (&runner{}).passes(live); len(ps) != len(live.passes()) {
		t.Errorf("passes %v without a peer", ps)
	}
	if got := strings.Join(r.peerArgs("sqlite:/c.db", "/s.json"), " "); got != "/bin/peer --db sqlite:/c.db --stats-json /s.json --log-level error --persistence-max-qps 0" {
		t.Errorf("peer args: %s", got)
	}

	cr := &CaseReport{Case: Cases()[0], Passes: []PassResult{
		{Pass: PassDefault, Binary: "old", Wall: 2 * time.Second},
		{Pass: PassDefault, Binary: "new", Wall: time.Second},
		{Pass: PassPeer, Wall: 60 * time.Second, Peer: &PeerResult{Work: 3 * time.Second, Calls: 128, MaxQPS: 500, Temporal: "1.32.1"}},
	}}
	if got, want := ratio(cr, PassPeer, ""), "peer÷old default 30.00 (work 3s, ÷ 1.50), peer÷new default 60.00 (work 3s, ÷ 3.00)"; got != want {
		t.Errorf("peer ratio %q, want %q", got, want)
	}
	cr.Passes[2].TimedOut = true
	if got := ratio(cr, PassPeer, ""); got != "peer÷old default > 30.00, peer÷new default > 60.00" {
		t.Errorf("timed-out peer ratio %q", got)
	}
	if note := peerNote(EngineReport{Cases: []CaseReport{*cr}}); !strings.Contains(note, "Temporal 1.32.1's own") || !strings.Contains(note, "500 calls/s") {
		t.Errorf("note %q", note)
	}
}

// TestReadPeer: the peer's summary gives its own fields; a summary of
// another program is refused.
func TestReadPeer(t *testing.T) {
	dir := t.TempDir()
	good, other := filepath.Join(dir, "peer.json"), filepath.Join(dir, "tqs.json")
	os.WriteFile(good, []byte(`{"temporal_server_version":"1.32.1","work_seconds":1.5,"persistence_calls_total":42,"settings":{"persistence_max_qps":0},"tasks_deleted":9}`), 0o644)
	os.WriteFile(other, []byte(`{"statements":3,"tasks_deleted":9}`), 0o644)
	p, err := readPeer(good)
	if err != nil || *p != (PeerResult{Temporal: "1.32.1", Work: 1500 * time.Millisecond, Calls: 42}) {
		t.Errorf("readPeer: %+v, %v", p, err)
	}
	if _, err := readPeer(other); err == nil || !strings.Contains(err.Error(), "is it temporal-scavenger?") {
		t.Errorf("readPeer of another summary: %v", err)
	}
	for _, o := range []Options{{PeerFlags: []string{"-x"}}, {Peer: filepath.Join(dir, "nope")}, {Peer: dir}} {
		if err := o.checkPeer(); err == nil {
			t.Errorf("checkPeer(%+v) accepted", o)
		}
	}
}
