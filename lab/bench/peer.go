package bench

// This file owns the peer pass: Temporal's own task queue scavenger, run
// by the interop module's temporal-scavenger command (Temporal 1.32.1's
// service/worker/scanner/taskqueue as a library, over Temporal's SQL
// plugins), on a copy of the same seed as the other passes.

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"
)

// PassPeer is Temporal's own scavenger (Options.Peer): the real thing
// beside the temporal pass, tqscavenger's imitation of it.
const PassPeer Pass = "temporal-peer"

// PeerResult is what only the peer pass reports.
type PeerResult struct {
	// Temporal is the version of Temporal's server the peer is built of.
	Temporal string
	// Work is from the start of its pass to the end of its last
	// persistence call. Its wall time adds Temporal's executor poll: the
	// pass checks once a minute whether its queued work is done.
	Work time.Duration
	// Calls counts its persistence calls (TaskManager requests: a page of
	// queues, a batch of tasks read or deleted, a queue deleted), where
	// the other passes count SQL statements.
	Calls int64
	// MaxQPS is the worker's persistence rate limit it ran at
	// (worker.persistenceMaxQPS; 0: none).
	MaxQPS int
}

// peerStats are the fields of temporal-scavenger's summary that only the
// peer has; the counts every pass has come through readStats.
type peerStats struct {
	Temporal    string  `json:"temporal_server_version"`
	WorkSeconds float64 `json:"work_seconds"`
	Calls       *int64  `json:"persistence_calls_total"`
	Settings    struct {
		MaxQPS int `json:"persistence_max_qps"`
	} `json:"settings"`
}

// checkPeer checks that Options.Peer, if set, is a file.
func (o *Options) checkPeer() error {
	if o.Peer == "" {
		if len(o.PeerFlags) > 0 {
			return errors.New("bench: flags for the peer, but no peer")
		}
		return nil
	}
	fi, err := os.Stat(o.Peer)
	if err != nil {
		return fmt.Errorf("bench: the peer: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("bench: the peer %s is not a file", o.Peer)
	}
	return nil
}

// passes lists the passes of c, the peer's last when there is one.
func (r *runner) passes(c Case) []Pass {
	ps := c.passes()
	if r.o.Peer != "" {
		ps = append(ps, PassPeer)
	}
	return ps
}

// peerArgs is the peer's command line on the copy dsn. It takes no
// --now: Temporal's scavenger reads the real clock, and the cases seed
// no task that expires within hours of seeding (only expired ones and
// ones without expiry) and no queue near the 48 h grace.
func (r *runner) peerArgs(dsn, statsFile string) []string {
	args := []string{r.o.Peer, "--db", dsn, "--stats-json", statsFile, "--log-level", "error"}
	return append(args, r.o.PeerFlags...)
}

// readPeer reads the peer's own fields from its summary.
func readPeer(path string) (*PeerResult, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var st peerStats
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("the peer's summary %s: %w", path, err)
	}
	if st.Calls == nil {
		return nil, fmt.Errorf("the peer's summary %s has no persistence_calls_total: is it temporal-scavenger?", path)
	}
	return &PeerResult{
		Temporal: st.Temporal,
		Work:     time.Duration(st.WorkSeconds * float64(time.Second)),
		Calls:    *st.Calls,
		MaxQPS:   st.Settings.MaxQPS,
	}, nil
}
