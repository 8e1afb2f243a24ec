package temporalworker

import (
	"errors"
	"fmt"
	"time"

	"github.com/tqscavenger/tqscavenger/scavenger"
	"github.com/tqscavenger/tqscavenger/wire"
)

// Defaults of a PassDescription's zero fields.
const (
	// DefaultHeartbeatTimeout is how long a partition activity may go
	// without a heartbeat before Temporal retries it elsewhere.
	DefaultHeartbeatTimeout = time.Minute
	// DefaultPartitionTimeout bounds one attempt of a partition activity.
	DefaultPartitionTimeout = 6 * time.Hour
	// DefaultMaxAttempts bounds a partition activity's attempts: retries
	// are bounded, as every retry of a pass is.
	DefaultMaxAttempts = 10
)

// PassDescription is a pass as the workflow's input: what it does and for
// which database, never how to reach it. It lives in Temporal's history,
// so it holds no DSN, host or password; each worker connects with its own
// settings and checks DatabaseIdentity against the database it reaches.
// Zero fields mean the scavenger's defaults (scavenger.Config).
type PassDescription struct {
	// DatabaseIdentity is the identity of the database the pass is meant
	// for (store.Identifier, as sqlstore.DB.Identity gives it; `tqscavenger schedule create` reads it
	// from the database). Required: a worker connected to another
	// database refuses the pass.
	DatabaseIdentity string `json:"database_identity"`
	// Partitions is N: the pass runs as N activities, each over one range
	// of the range_hash space. Default 1.
	Partitions int `json:"partitions,omitempty"`

	// Rules are what is deleted: scavenger.Config's, under the JSON
	// names of their tags, except Namespaces.
	scavenger.Rules
	// Namespaces are the rules' namespaces as UUIDs: this field, not the
	// one of Rules (which the JSON codec does not see behind it), is the
	// description's, so that a bad one is refused by Validate, with
	// ErrBadDescription, rather than by the codec.
	Namespaces []string `json:"namespaces,omitempty"`
	// Now pins the pass's clock (reruns on copies of a database, tests).
	// Zero: each worker's clock.
	Now time.Time `json:"now,omitzero"`

	// Pace is how hard: the fields of scavenger.Pace with a JSON name
	// (workers, batch sizes, the rate limits, the pace's Mode), per
	// partition activity, except the rate limits, which are for the
	// whole pass and split evenly between its partitions. The rest of
	// Pace (retries, the deferred list's cap, the gentle pace's inputs)
	// is each worker's default and never travels: Describe leaves it
	// zero. Mode is "" for the default, written so that a default
	// description's JSON is what it was before paces, or "full".
	scavenger.Pace

	// CheckpointInterval bounds how often a partition's low-water mark
	// is heartbeated while it advances (scavenger.Config's; default 1s).
	// The mark is also heartbeated at once when a walk ends, and the SDK
	// sends at most one heartbeat per 80% of the heartbeat timeout, the
	// last one recorded.
	CheckpointInterval time.Duration `json:"checkpoint_interval,omitempty"`
	// HeartbeatTimeout, PartitionTimeout and MaxAttempts set each
	// partition activity's options (defaults DefaultHeartbeatTimeout,
	// DefaultPartitionTimeout, DefaultMaxAttempts).
	HeartbeatTimeout time.Duration `json:"heartbeat_timeout,omitempty"`
	PartitionTimeout time.Duration `json:"partition_timeout,omitempty"`
	MaxAttempts      int           `json:"max_attempts,omitempty"`
}

// ErrBadDescription is wrapped by every error of Validate.
var ErrBadDescription = errors.New("bad pass description")

// WithDefaults returns d with its own zero fields set to their defaults
// (the scavenger's are filled in by the scavenger).
func (d PassDescription) WithDefaults() PassDescription {
	if d.Partitions == 0 {
		d.Partitions = 1
	}
	if d.HeartbeatTimeout == 0 {
		d.HeartbeatTimeout = DefaultHeartbeatTimeout
	}
	if d.PartitionTimeout == 0 {
		d.PartitionTimeout = DefaultPartitionTimeout
	}
	if d.MaxAttempts == 0 {
		d.MaxAttempts = DefaultMaxAttempts
	}
	return d
}

// maxPartitions bounds N: more activities than this is a mistake, not a
// plan (each holds a lock and a connection pool's worth of work).
const maxPartitions = 1024

// Validate reports a description no worker can run: its error wraps
// ErrBadDescription.
func (d PassDescription) Validate() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s", ErrBadDescription, fmt.Sprintf(format, a...))
	}
	if d.DatabaseIdentity == "" {
		return bad("no database identity: a pass names the database it is meant for (tqscavenger schedule reads it from the database)")
	}
	if d.Partitions < 0 || d.Partitions > maxPartitions {
		return bad("partitions %d: want 1 to %d", d.Partitions, maxPartitions)
	}
	if d.CheckpointInterval < 0 || d.HeartbeatTimeout < 0 || d.PartitionTimeout < 0 || d.MaxAttempts < 0 {
		return bad("timeouts, intervals and attempts must not be negative")
	}
	if _, err := d.Config(0); err != nil {
		return bad("%v", err)
	}
	return nil
}

// Config returns the scavenger configuration of partition i of the pass
// (without its logger, lock, checkpoint and middleware, which the activity
// adds), checked by scavenger.Config.Validate.
func (d PassDescription) Config(i int) (scavenger.Config, error) {
	d = d.WithDefaults()
	c := scavenger.Config{
		Rules:     d.Rules,
		Partition: scavenger.Partition{Index: i, Count: d.Partitions},
		Pace: scavenger.Pace{
			CheckpointInterval: d.CheckpointInterval, Workers: d.Workers, ListPageSize: d.ListPageSize,
			TaskBatchSize: d.TaskBatchSize, TasksPerJob: d.TasksPerJob,
			MaxDeletesPerSecond:    d.MaxDeletesPerSecond / float64(d.Partitions),
			MaxStatementsPerSecond: d.MaxStatementsPerSecond / float64(d.Partitions),
		},
	}
	mode, err := scavenger.ParsePaceMode(string(d.Mode))
	if err != nil {
		return c, err
	}
	c.Mode = mode
	if len(c.NamespaceNames) > 0 {
		return c, fmt.Errorf("namespace names %q: a pass description carries namespace ids only (tqscavenger schedule resolves names when it writes one)", c.NamespaceNames)
	}
	c.Rules.Namespaces = nil
	for _, s := range d.Namespaces {
		id, err := wire.ParseNamespaceID(s)
		if err != nil {
			return c, err
		}
		c.Namespaces = append(c.Namespaces, id)
	}
	if d.Workers < 0 || d.ListPageSize < 0 || d.TaskBatchSize < 0 || d.TasksPerJob < 0 {
		return c, errors.New("workers and sizes must not be negative")
	}
	if !d.Now.IsZero() {
		now := d.Now
		c.Now = func() time.Time { return now }
	}
	return c, c.Validate()
}

// Totals are the counts of a partition or a pass as a worker records
// them in its heartbeats and results: a pass's scavenger.Counts, under
// their JSON names. That JSON is what every earlier build wrote and reads
// (workflow histories keep it), so three counts stay 0, and out of it:
// Deferred, never recorded, and WouldDeleteTasks and WouldDeleteQueues,
// whose values are under WouldDelete, present exactly when a dry run is
// counted.
type Totals struct {
	scavenger.Counts
	// WouldDelete counts what a dry run would have deleted; its
	// *Deleted counts are 0.
	WouldDelete *WouldDelete `json:"would_delete,omitempty"`
}

// WouldDelete is what a dry run would have deleted.
type WouldDelete struct {
	Tasks  int64 `json:"tasks"`
	Queues int64 `json:"queues"`
}

// totalsOf returns the counts of a pass's stats.
func totalsOf(s scavenger.Stats) Totals {
	t := Totals{Counts: s.Counts}
	// Out of the JSON, as before Counts (see Totals).
	t.Deferred, t.WouldDeleteTasks, t.WouldDeleteQueues = 0, 0, 0
	if s.DryRun {
		t.WouldDelete = &WouldDelete{Tasks: s.WouldDeleteTasks, Queues: s.WouldDeleteQueues}
	}
	return t
}

// Add adds o to t.
func (t *Totals) Add(o Totals) {
	t.Counts.Add(o.Counts)
	if o.WouldDelete != nil {
		if t.WouldDelete == nil {
			t.WouldDelete = &WouldDelete{}
		}
		t.WouldDelete.Tasks += o.WouldDelete.Tasks
		t.WouldDelete.Queues += o.WouldDelete.Queues
	}
}

// Describe returns the description of a pass of c (its scavenger
// settings; the clock only if pinned: now) over n partitions of the
// database id. c's namespace names must be resolved first
// (scavenger.ResolveNamespaces): a description carries ids, so that every
// worker's passes scavenge the same namespaces. Settings a description does not carry (retry budgets,
// statement timeouts) are the worker's own.
func Describe(c scavenger.Config, now time.Time, n int, id string) PassDescription {
	d := PassDescription{
		DatabaseIdentity: id, Partitions: n, Rules: c.Rules, Now: now,
		Pace: scavenger.Pace{
			Workers: c.Workers, ListPageSize: c.ListPageSize, TaskBatchSize: c.TaskBatchSize, TasksPerJob: c.TasksPerJob,
			MaxDeletesPerSecond: c.MaxDeletesPerSecond, MaxStatementsPerSecond: c.MaxStatementsPerSecond,
		},
	}
	if c.Mode == scavenger.PaceFull {
		d.Mode = scavenger.PaceFull
	}
	d.Rules.Namespaces = nil
	for _, ns := range c.Namespaces {
		d.Namespaces = append(d.Namespaces, ns.String())
	}
	return d
}
