package scavenger

// Checkpoints: where a pass that died resumes.

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tqscavenger/tqscavenger/store"
)

// CheckpointVersion is the version of the Checkpoint layout this build
// writes and reads.
const CheckpointVersion = 1

// DefaultCheckpointInterval is how often, at most, a pass reports its
// positions to Config.Checkpoint while they advance.
const DefaultCheckpointInterval = time.Second

// Checkpoint is where a pass stands: positions only. It never holds a
// delete decision or a range_id (a queue re-created after the checkpoint
// restarts its task ids at 1, so a stored "delete up to X" would hit its
// new live tasks): a resumed pass reads and decides every row after the
// positions afresh. Each position is a low-water mark: every job of the
// rows at or before it finished, while jobs after it may have run or not
// (a failed or deferred job holds it back), so resuming from it redoes at
// most work that is safe to redo; beside it, the runs of rows after it
// whose jobs finished too (WalkPosition.Finished), which a resumed pass
// skips.
//
// It is a plain value: save it as JSON (tqscavenger run --checkpoint FILE
// does), or carry it as a Temporal activity's heartbeat details.
type Checkpoint struct {
	Version int `json:"version"`
	// Partition is the pass's partition, "I/N".
	Partition string `json:"partition"`
	// Settings is a digest of the settings that decide what is deleted
	// (see SettingsDigest).
	Settings string `json:"settings"`
	// Database is the store's identity (store.Identifier).
	Database string `json:"database"`
	// Walks are the positions of the pass's walks: the queue listing of
	// each table, then each table's orphan walk.
	Walks []WalkPosition `json:"walks"`
	// Checksum is Sum of the rest, written with it so that a damaged or
	// mixed-up checkpoint is refused (Verify). A checkpoint without one
	// (of a build before it, or with it removed) is refused too.
	Checksum string `json:"checksum,omitempty"`
}

// Walk names one walk of a pass.
type Walk string

// The walks of a pass.
const (
	WalkQueues  Walk = "queues"
	WalkOrphans Walk = "orphans"
)

// WalkPosition is the low-water mark of one walk.
type WalkPosition struct {
	Walk  Walk        `json:"walk"`
	Table store.Table `json:"table"`
	// Done: the walk and every job it made finished.
	Done bool `json:"done,omitempty"`
	// After is the key every row up to which is finished (nil: none
	// yet). A nil ID in it stands before every row of its hash.
	After *store.QueueKey `json:"after,omitempty"`
	// Finished are runs of rows after After whose work is finished too:
	// what the jobs beside the one that holds After back finished (the
	// workers run them side by side). In key order, disjoint, the first
	// ending after After (it may begin at or before it); at most
	// MaxFinishedRuns, those nearest After (the rest are
	// redone). A resumed walk skips the rows in them. Empty in checkpoints
	// of builds before it, which are accepted: their resume redoes those
	// rows, as they always did.
	Finished []KeyRange `json:"finished,omitempty"`
}

// KeyRange is a run of keys, First to Last, both included.
type KeyRange struct {
	First store.QueueKey `json:"first"`
	Last  store.QueueKey `json:"last"`
}

// Contains reports whether k lies in r.
func (r KeyRange) Contains(k store.QueueKey) bool {
	return r.First.Compare(k) <= 0 && k.Compare(r.Last) <= 0
}

// MaxFinishedRuns bounds the runs of finished rows a position records
// beyond its low-water mark (WalkPosition.Finished): the mark lags only
// behind the jobs in flight and those a failure or a deferral holds, so
// a handful of runs is the usual case (at most Workers-1 with a job per
// queue; a window's empty queues, which wait for their row's delete, add
// a gap each). The runs past the bound are redone by a resume; a
// position stays a few kilobytes, well inside a Temporal heartbeat. A
// checkpoint with more runs in a position was not written by a pass, and
// Fits refuses it.
const MaxFinishedRuns = 32

// finishedAt reports whether k lies in one of w's finished runs.
func (w WalkPosition) finishedAt(k store.QueueKey) bool { return inRuns(w.Finished, k) }

// inRuns reports whether k lies in one of runs, which are in key order.
func inRuns(runs []KeyRange, k store.QueueKey) bool {
	for _, r := range runs {
		if r.Contains(k) {
			return true
		}
		if k.Less(r.First) {
			return false
		}
	}
	return false
}

// String formats the position for logs and summaries: "queues v1 after
// 5/0a1b", "orphans v2 done", "queues v1 from the start", "queues v2
// after 5/0a1b, 2 runs beyond it finished".
func (w WalkPosition) String() string {
	var s string
	switch {
	case w.Done:
		return fmt.Sprintf("%s %s done", w.Walk, w.Table)
	case w.After != nil:
		s = fmt.Sprintf("%s %s after %s", w.Walk, w.Table, w.After)
	default:
		s = fmt.Sprintf("%s %s from the start", w.Walk, w.Table)
	}
	if n := len(w.Finished); n > 0 {
		s += fmt.Sprintf(", %d runs beyond it finished", n)
	}
	return s
}

// ErrCheckpointMismatch is wrapped by Run's error when Config.Resume was
// written by a pass over another database, partition or settings.
var ErrCheckpointMismatch = errors.New("checkpoint does not match this pass")

// SettingsDigest is the digest of c's Rules (see Rules.Digest): what a
// checkpoint's Settings holds.
func SettingsDigest(c Config) string { return c.Rules.Digest() }

// Digest is a digest of the rules, defaults filled in: every setting that
// decides what a pass deletes (the mode, the grace, the protected
// prefixes, the opt-in rules, the scope and whether it is a dry run). The
// clock is not in it (a pass resumed later sees later expiries, as a pass
// that ran longer would), nor is anything that only changes how fast
// (Pace). Its text is fixed: a checkpoint of an earlier build of the same
// rules is accepted.
func (r Rules) Digest() string {
	r = r.withDefaults()
	tables := slices.Clone(r.Tables)
	slices.Sort(tables)
	ns := make([]string, len(r.Namespaces))
	for i, n := range r.Namespaces {
		ns[i] = hex.EncodeToString(n[:])
	}
	slices.Sort(ns)
	prefixes := slices.Clone(r.ProtectedPrefixes)
	slices.Sort(prefixes)
	var b strings.Builder
	fmt.Fprintf(&b, "compat=%q\ngrace=%d\nunsafe_short_grace=%t\nprotected=%q\ndry_run=%t\n", r.Compat, r.Grace, r.UnsafeShortGrace, prefixes, r.DryRun)
	fmt.Fprintf(&b, "past_live_head=%t\nbelow_ack_level=%t\norphans=%q\ntables=%v\nnamespaces=%q\nqueue_glob=%q\n",
		r.PastLiveHead, r.BelowAckLevel, r.Orphans, tables, ns, r.QueueGlob)
	if r.ClosedWorkflows {
		// Only when on: with the rule off the text, and so old
		// checkpoints' digests, are unchanged.
		fmt.Fprintf(&b, "closed_workflows=true\nclosed_workflows_global=%t\ncluster_name=%q\n", r.ClosedWorkflowsGlobal, r.ClusterName)
		if r.ClosedDeletedRuns {
			// Only when on, as above: a checkpoint of a pass without it
			// keeps its digest.
			b.WriteString("closed_deleted_runs=true\n")
		}
	}
	sum := sha256.Sum256([]byte(b.String()))
	return "sha256:" + hex.EncodeToString(sum[:16])
}

// Fits reports why cp does not belong to a pass of cfg over the database
// id (an error wrapping ErrCheckpointMismatch; ErrCheckpointUnverified if
// its checksum does not verify), or nil if the pass may resume from it:
// its checksum present and matching (Verify), of this build's version, of
// the same database, partition and rules (SettingsDigest), its positions
// and their finished runs inside the partition, the runs in key order
// and at most MaxFinishedRuns. It is the one test of whether a checkpoint
// belongs to a pass: Begin asks it of Config.Resume before the pass
// starts (a host that would rather start afresh asks it first), and Run
// again. Only the pass itself can tell whether a position lies past its
// table's last row (Run refuses such a checkpoint before any work, with
// ErrCheckpointMismatch too).
func (cp *Checkpoint) Fits(cfg Config, id string) error {
	if err := cp.Verify(); err != nil {
		return err
	}
	switch {
	case cp.Version != CheckpointVersion:
		return fmt.Errorf("%w: it is of version %d, this build reads version %d", ErrCheckpointMismatch, cp.Version, CheckpointVersion)
	case cp.Database != id:
		return fmt.Errorf("%w: it was written against another database (%s, this one is %s)", ErrCheckpointMismatch, cp.Database, id)
	case cp.Partition != cfg.Partition.String():
		return fmt.Errorf("%w: it is of partition %s, this pass is of %s", ErrCheckpointMismatch, cp.Partition, cfg.Partition)
	case cp.Settings != SettingsDigest(cfg):
		return fmt.Errorf("%w: it was written with other settings of what to delete (mode, grace, protected prefixes, rules, scope or dry run)", ErrCheckpointMismatch)
	}
	for _, w := range cp.Walks {
		if (w.Walk != WalkQueues && w.Walk != WalkOrphans) || (w.Table != store.V1 && w.Table != store.V2) {
			return fmt.Errorf("%w: unknown walk %q of table %s", ErrCheckpointMismatch, w.Walk, w.Table)
		}
		if w.After != nil && !cfg.Partition.Range().Contains(w.After.RangeHash) {
			return fmt.Errorf("%w: position %s lies outside partition %s", ErrCheckpointMismatch, w.After, cfg.Partition)
		}
		if len(w.Finished) > MaxFinishedRuns {
			// A pass never writes more: each listed row of the resume
			// would scan them all (finishedAt).
			return fmt.Errorf("%w: walk %s: a pass records at most %d finished runs", ErrCheckpointMismatch, w, MaxFinishedRuns)
		}
		for i, r := range w.Finished {
			switch {
			case r.Last.Less(r.First):
				return fmt.Errorf("%w: walk %s: finished run %s-%s ends before it starts", ErrCheckpointMismatch, w, r.First, r.Last)
			case i == 0 && w.After != nil && !w.After.Less(r.Last):
				return fmt.Errorf("%w: walk %s: finished run %s-%s ends at or before the position", ErrCheckpointMismatch, w, r.First, r.Last)
			case i > 0 && !w.Finished[i-1].Last.Less(r.First):
				return fmt.Errorf("%w: walk %s: finished run %s-%s does not follow the run before it (runs are in key order, disjoint)", ErrCheckpointMismatch, w, r.First, r.Last)
			case !cfg.Partition.Range().Contains(r.First.RangeHash) || !cfg.Partition.Range().Contains(r.Last.RangeHash):
				return fmt.Errorf("%w: walk %s: finished run %s-%s lies outside partition %s", ErrCheckpointMismatch, w, r.First, r.Last, cfg.Partition)
			}
		}
	}
	return nil
}

// position returns cp's position of walk w of table t, or the zero one.
func (cp *Checkpoint) position(w Walk, t store.Table) WalkPosition {
	if cp != nil {
		for _, p := range cp.Walks {
			if p.Walk == w && p.Table == t {
				return p
			}
		}
	}
	return WalkPosition{Walk: w, Table: t}
}
