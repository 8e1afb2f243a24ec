package matchingsim

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tqscavenger/tqscavenger/scavenger"
	"github.com/tqscavenger/tqscavenger/sqlstore"
	"github.com/tqscavenger/tqscavenger/store"
	"github.com/tqscavenger/tqscavenger/wire"
)

// Rules says what the scavenger was allowed to delete: the deletion rule of
// the mode it ran in. Verify judges every row the simulator wrote and did
// not delete itself by them.
type Rules struct {
	// Grace is the scavenger's grace period.
	Grace time.Duration
	// Tables lists the table versions the scavenger may change.
	Tables []store.Table
	// Subqueue0Only: only subqueue 0's tasks may be deleted (Temporal).
	Subqueue0Only bool
	// BelowAckLevel: tasks at or below an ack level the simulator
	// persisted for their subqueue may be deleted.
	BelowAckLevel bool
	// OrphansAll: tasks whose queue row was absent may be deleted once
	// created Grace ago.
	OrphansAll bool
	// OrphansSubqueues: deleting a queue row whose subqueues k > 0 still
	// hold tasks is expected (Temporal's gap): such orphans are counted,
	// not violations.
	OrphansSubqueues bool
	// IgnoresOtherHasTasks: the scavenger may delete a row whose
	// other_has_tasks flag is set (Temporal does not read it). Otherwise
	// such a row may go only while the other table version holds no task
	// of the queue.
	IgnoresOtherHasTasks bool
}

// RulesFor returns the rules a scavenger with cfg must keep. It does not
// narrow them by Config.Namespaces or Config.QueueGlob: a scoped scavenger
// is judged as if it were not.
func RulesFor(cfg scavenger.Config) Rules {
	r := Rules{Grace: cfg.Grace}
	if r.Grace <= 0 {
		r.Grace = scavenger.TemporalGrace
	}
	if cfg.Compat == scavenger.CompatTemporal {
		r.Tables = []store.Table{store.V1}
		r.Subqueue0Only, r.OrphansSubqueues, r.IgnoresOtherHasTasks = true, true, true
		return r
	}
	r.Tables = cfg.Tables
	if len(r.Tables) == 0 {
		r.Tables = []store.Table{store.V1, store.V2}
	}
	r.BelowAckLevel = cfg.BelowAckLevel
	r.OrphansAll = cfg.Orphans == scavenger.OrphansAll
	return r
}

// Reasons a missing task was allowed to go, as Report.ScavengedBy counts
// them.
const (
	ByExpired       = "expired"
	ByBelowAckLevel = "below-ack-level"
	ByOrphan        = "orphan"
)

// Report is what Verify found.
type Report struct {
	Queues       int // queues (per table version) the simulator used
	Incarnations int // queue rows created, the legacy ones included
	Takeovers    int // leases taken, creations included
	Sessions     int64
	Appends      int64 // append transactions committed
	Dispatches   int64 // ack levels moved
	Renewals     int64
	Retries      int64 // transient store errors the simulator retried

	TasksWritten    int // every task the ledger holds, the legacy ones included
	TasksSimDeleted int // deleted by the simulator (dispatched)
	TasksPresent    int // still in the database
	TasksUncertain  int // missing, but the simulator may have deleted them (or never written them)
	// TasksScavenged counts tasks missing that the simulator did not
	// delete: the scavenger deleted them. ScavengedBy says under which
	// rule (the first that allows it: expired, below-ack-level, orphan).
	TasksScavenged int
	ScavengedBy    map[string]int

	// QueuesDeleted counts queue rows found deleted (by the scavenger):
	// while the simulator ran, or at the end.
	QueuesDeleted int
	// OrphanedSubqueueTasks counts tasks of subqueues k > 0 left without
	// their queue row by a scavenger allowed to (Rules.OrphansSubqueues).
	OrphanedSubqueueTasks int
	// LegacyOrphans counts tasks still orphaned since the setup.
	LegacyOrphans int
	// UnlistedSubqueueTasks counts tasks whose row exists but does not
	// list their subqueue.
	UnlistedSubqueueTasks int

	// Problems are the simulator's own troubles (unexpected store errors,
	// rows it did not write): the run proves less than it should.
	Problems     []string
	ProblemCount int
	// Violations are deletions the rules do not allow, or orphans the
	// scavenger left. The first few are listed; ViolationCount counts all.
	Violations     []string
	ViolationCount int
}

func (r *Report) violation(format string, a ...any) {
	r.ViolationCount++
	if len(r.Violations) < maxListed {
		r.Violations = append(r.Violations, fmt.Sprintf(format, a...))
	}
}

func (r *Report) problem(format string, a ...any) {
	r.ProblemCount++
	if len(r.Problems) < maxListed {
		r.Problems = append(r.Problems, fmt.Sprintf(format, a...))
	}
}

// String summarizes the counts on one line.
func (r Report) String() string {
	return fmt.Sprintf("queues %d (incarnations %d, takeovers %d, sessions %d), tasks written %d "+
		"(present %d, deleted by simulator %d, by scavenger %d [expired %d, below-ack-level %d, orphan %d], uncertain %d), "+
		"queue rows deleted %d, orphans: subqueue>0 %d legacy %d unlisted %d, problems %d, violations %d",
		r.Queues, r.Incarnations, r.Takeovers, r.Sessions, r.TasksWritten,
		r.TasksPresent, r.TasksSimDeleted, r.TasksScavenged, r.ScavengedBy[ByExpired], r.ScavengedBy[ByBelowAckLevel], r.ScavengedBy[ByOrphan], r.TasksUncertain,
		r.QueuesDeleted, r.OrphanedSubqueueTasks, r.LegacyOrphans, r.UnlistedSubqueueTasks, r.ProblemCount, r.ViolationCount)
}

// dbQueue and dbTask are rows as Verify reads them.
type dbQueue struct {
	rangeID  int64
	data     []byte
	encoding string
}

type dbTask struct {
	data     []byte
	encoding string
	seen     bool // matched to a ledger task
}

type taskRef struct {
	id      string // task_queue_id
	pass, n int64
}

// Verify reads the whole database through a handle of its own with plain
// SELECTs (not the store's read methods), compares it with the ledger and
// judges every difference by the rules r. Call it after Run has returned
// and the scavenger has stopped.
//
// What it checks, and what the check rests on:
//
//   - Every task the simulator wrote and did not delete is in the database,
//     or a rule allowed deleting it at some time before it was found
//     missing: by the simulator's own reads (which bound when it went) or
//     by Verify. Expired means expiry_time set and before that time (so a
//     task that never expires, or expires in an hour, must never be
//     missing); at or below an ack level the simulator persisted for its
//     subqueue after writing it (Rules.BelowAckLevel); an orphan created
//     Grace before a time its queue row was absent (Rules.OrphansAll): the
//     row is known to exist from the CreateQueue that made it to the last
//     fenced write on it that succeeded.
//   - No queue row was deleted within Grace of the takeover that set the
//     range_id it had, nor with other_has_tasks set by that takeover while
//     the other table version surely held a task of the queue: one
//     committed before the takeover and still there at the end, in a
//     subqueue the row listed (unless Rules.IgnoresOtherHasTasks). Any
//     delete fenced on a listed
//     range_id needs a listing after that takeover, and a grace check
//     against its last_update_time or later. What cannot be seen: a delete
//     with a stale range_id that happens to equal the current one (the
//     fence cannot fail then either), and the exact time of a delete; the
//     simulator writes often while it holds a lease, so an unfenced delete
//     under a lease is found within the grace.
//   - No task row is left without its queue row by the scavenger: every
//     task of a queue whose last row the scavenger deleted is a violation,
//     except in subqueues k > 0 with Rules.OrphansSubqueues (counted).
//   - Nothing is there that the simulator did not write, and nothing it
//     deleted is back (store bugs, reported as violations too).
func (s *Sim) Verify(ctx context.Context, dsn string, r Rules) (Report, error) {
	d, err := sqlstore.ParseDSN(dsn)
	if err != nil {
		return Report{}, err
	}
	c, err := sqlstore.Connector(d, sqlstore.Options{})
	if err != nil {
		return Report{}, err
	}
	db := sql.OpenDB(c)
	defer db.Close()
	queues := map[store.Table]map[string]dbQueue{}
	tasks := map[store.Table]map[taskRef]*dbTask{}
	for _, t := range s.cfg.Tables {
		if queues[t], err = readQueues(ctx, db, t); err != nil {
			return Report{}, err
		}
		if tasks[t], err = readTasks(ctx, db, t); err != nil {
			return Report{}, err
		}
	}
	end := s.now() // every delete happened before the reads above ended

	rep := Report{
		Queues:     len(s.queues),
		Sessions:   s.sessions.Load(),
		Appends:    s.appends.Load(),
		Dispatches: s.dispatches.Load(),
		Renewals:   s.renewals.Load(),
		Retries:    s.retries.Load(),
		ScavengedBy: map[string]int{
			ByExpired: 0, ByBelowAckLevel: 0, ByOrphan: 0,
		},
	}
	s.probs.mu.Lock()
	rep.Problems, rep.ProblemCount = slices.Clone(s.probs.list), s.probs.n
	s.probs.mu.Unlock()

	v := &verifier{s: s, r: r, rep: &rep, end: end, tasks: tasks}
	for _, q := range s.queues {
		v.queue(q, queues[q.table], tasks[q.table])
	}
	for _, t := range s.cfg.Tables {
		for ref, row := range tasks[t] {
			if !row.seen {
				rep.violation("%s task %x pass %d id %d: in the database but the simulator never wrote it", t, ref.id, ref.pass, ref.n)
			}
		}
		for id := range queues[t] {
			if !slices.ContainsFunc(s.queues, func(q *queue) bool { return q.table == t && string(q.key.ID) == id }) {
				rep.violation("%s queue row %x: in the database but the simulator never wrote it", t, id)
			}
		}
	}
	return rep, nil
}

type verifier struct {
	s     *Sim
	r     Rules
	rep   *Report
	end   time.Time
	tasks map[store.Table]map[taskRef]*dbTask
}

// rel formats a clock time relative to the simulation's start.
func (v *verifier) rel(t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	d := t.Sub(v.s.start).Round(time.Microsecond)
	if d < 0 {
		return d.String()
	}
	return "+" + d.String()
}

func (v *verifier) queue(q *queue, rows map[string]dbQueue, tasks map[taskRef]*dbTask) {
	rep := v.rep
	rep.Incarnations += len(q.incs)
	rep.Takeovers += len(q.takeovers)
	label := fmt.Sprintf("%s queue %q (%s, ns %s)", q.table, q.name, q.typ, q.ns)

	row, exists := rows[string(q.key.ID)]
	deletions := q.deletions
	switch {
	case q.exists && !exists:
		// Deleted after the simulator's last look.
		q.inc().goneAt = v.end
		deletions = append(slices.Clip(deletions), deletion{rangeID: q.rangeID, last: q.lastTakeover(), goneAt: v.end, atEnd: true})
	case q.exists && (row.rangeID != q.rangeID || !bytes.Equal(row.data, q.data)):
		rep.violation("%s: row has range_id %d and a blob the simulator did not write last (it wrote range_id %d)", label, row.rangeID, q.rangeID)
	case !q.exists && exists:
		rep.violation("%s: row exists (range_id %d) although the simulator saw it deleted and did not re-create it", label, row.rangeID)
	}
	for _, d := range deletions {
		rep.QueuesDeleted++
		when := "while the simulator ran"
		if d.atEnd {
			when = "by the end"
		}
		if !slices.Contains(v.r.Tables, q.table) {
			rep.violation("%s: row deleted (%s, range_id %d) in a table the scavenger must not change", label, when, d.rangeID)
		}
		if d.goneAt.Before(d.last.lastUpdate.Add(v.r.Grace)) {
			rep.violation("%s: row deleted at range_id %d by %s, within the grace of the takeover that set that range_id (last_update_time %s): deleted after its range_id changed, or before it was idle",
				label, d.rangeID, v.rel(d.goneAt), v.rel(d.last.lastUpdate))
		}
		if d.last.otherHasTasks && !v.r.IgnoresOtherHasTasks {
			if o, t := v.otherHeld(q, d); t != nil {
				rep.violation("%s: row deleted at range_id %d (found %s) with other_has_tasks set, while %s subqueue %d task pass %d id %d (committed %s) was there throughout",
					label, d.rangeID, when, o.table, t.sub, t.key.Pass, t.key.ID, v.rel(t.committed))
			}
		}
	}

	// Tasks: the ledger against the database.
	var listed int
	if exists {
		if info, err := wire.DecodeTaskQueueInfo(row.encoding, row.data); err == nil {
			listed = len(info.Subqueues)
		}
	}
	orphanedByScavenger := !exists && len(q.incs) > 0 && !q.inc().legacy
	for k, list := range q.tasks {
		id := string(q.subKey(k).ID)
		for _, t := range list {
			rep.TasksWritten++
			ref := taskRef{id: id, pass: t.key.Pass, n: t.key.ID}
			got := tasks[ref]
			if got != nil {
				got.seen = true
			}
			tl := fmt.Sprintf("%s subqueue %d task pass %d id %d", label, k, t.key.Pass, t.key.ID)
			switch {
			case got != nil && t.state != taskLive && !t.uncertain:
				rep.violation("%s: in the database although it was deleted (by the simulator: %v)", tl, t.state == taskSimDeleted)
			case got != nil:
				rep.TasksPresent++
				v.checkBlob(tl, t, got)
				switch {
				case !exists && k == 0 && orphanedByScavenger:
					rep.violation("%s: left without its queue row by the scavenger (subqueue 0)", tl)
				case !exists && orphanedByScavenger && v.r.OrphansSubqueues:
					rep.OrphanedSubqueueTasks++
				case !exists && orphanedByScavenger:
					rep.violation("%s: left without its queue row by the scavenger", tl)
				case !exists:
					rep.LegacyOrphans++
				case k >= listed:
					rep.UnlistedSubqueueTasks++
				}
			case t.state == taskSimDeleted:
				rep.TasksSimDeleted++
			case t.uncertain:
				rep.TasksUncertain++
			default:
				rep.TasksScavenged++
				by := t.missingAt
				if t.state == taskLive {
					by = v.end
				}
				if why, ok := v.allowed(q, t, by); ok {
					rep.ScavengedBy[why]++
					continue
				}
				rep.violation("%s: deleted by %s, but no rule allowed it: expiry %s, created %s, written %s, acked %s, its row: %s",
					tl, v.rel(by), v.rel(t.expiry), v.rel(t.create), v.rel(t.written), v.ackedAt(q, t), v.lifetimes(q))
			}
		}
	}
	// Tasks under this queue's ids that the ledger does not know are
	// reported by the caller (seen stays false).
}

// otherHeld returns a task of q's queue in the other table version that
// surely existed from before the takeover behind deletion d to the end,
// in a subqueue the row listed then: the scavenger had to find it.
func (v *verifier) otherHeld(q *queue, d deletion) (*queue, *task) {
	for _, o := range v.s.queues {
		if o.table == q.table || string(o.key.ID) != string(q.key.ID) {
			continue
		}
		for k, list := range o.tasks {
			if k >= d.last.subqueues {
				continue
			}
			id := string(o.subKey(k).ID)
			for _, t := range list {
				if t.committed.IsZero() || t.committed.After(d.last.lastUpdate) {
					continue
				}
				if v.tasks[o.table][taskRef{id: id, pass: t.key.Pass, n: t.key.ID}] != nil {
					return o, t
				}
			}
		}
	}
	return nil, nil
}

// checkBlob compares a task row's blob with what the ledger wrote.
func (v *verifier) checkBlob(label string, t *task, got *dbTask) {
	info, err := wire.DecodeAllocatedTaskInfo(got.encoding, got.data)
	if err != nil {
		v.rep.violation("%s: blob does not decode: %v", label, err)
		return
	}
	if info.TaskID != t.key.ID || info.TaskPass != t.key.Pass || !info.Data.ExpiryTime.Equal(t.expiry) || !info.Data.CreateTime.Equal(t.create) {
		v.rep.violation("%s: blob is not what the simulator wrote", label)
	}
}

// allowed returns the first rule under which the scavenger could delete t
// at some time before by.
func (v *verifier) allowed(q *queue, t *task, by time.Time) (string, bool) {
	if !slices.Contains(v.r.Tables, q.table) || (v.r.Subqueue0Only && t.sub > 0) {
		return "", false
	}
	if wire.Expired(t.expiry, by) {
		return ByExpired, true
	}
	if v.r.BelowAckLevel {
		for _, a := range q.acks {
			// The scavenger can only have read an ack level once it was
			// written, and the simulator writes tasks above the ack level.
			if a.sub == t.sub && !a.level.Less(t.key) && !a.at.Before(t.written) && !a.at.After(by) {
				return ByBelowAckLevel, true
			}
		}
	}
	if v.r.OrphansAll {
		// An orphan's delete needs its row absent: in a gap between the
		// last proof of life of an incarnation and the creation of the next.
		for m := t.inc; m < len(q.incs); m++ {
			inc := q.incs[m]
			if inc.goneAt.IsZero() {
				continue
			}
			hi := by
			if m+1 < len(q.incs) && q.incs[m+1].created.Before(hi) {
				hi = q.incs[m+1].created
			}
			lo := inc.lastAlive
			if c := t.create.Add(v.r.Grace); c.After(lo) {
				lo = c
			}
			if !lo.After(hi) {
				return ByOrphan, true
			}
		}
	}
	return "", false
}

func (v *verifier) ackedAt(q *queue, t *task) string {
	for _, a := range q.acks {
		if a.sub == t.sub && !a.level.Less(t.key) {
			return v.rel(a.at)
		}
	}
	return "never"
}

func (v *verifier) lifetimes(q *queue) string {
	var b strings.Builder
	for i, inc := range q.incs {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "[%s … alive %s … gone %s]", v.rel(inc.created), v.rel(inc.lastAlive), v.rel(inc.goneAt))
	}
	return b.String()
}

// queueTable and taskTable name a table version's tables.
func queueTable(t store.Table) string { return t.QueueTable() }

func taskTable(t store.Table) string { return t.TaskTable() }

func readQueues(ctx context.Context, db *sql.DB, t store.Table) (map[string]dbQueue, error) {
	rows, err := db.QueryContext(ctx, "SELECT range_hash, task_queue_id, range_id, data, data_encoding FROM "+queueTable(t))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", queueTable(t), err)
	}
	defer rows.Close()
	out := map[string]dbQueue{}
	for rows.Next() {
		var (
			rh int64
			id []byte
			q  dbQueue
		)
		if err := rows.Scan(&rh, &id, &q.rangeID, &q.data, &q.encoding); err != nil {
			return nil, fmt.Errorf("read %s: %w", queueTable(t), err)
		}
		if uint32(rh) != wire.RangeHash(id) || rh < 0 {
			return nil, fmt.Errorf("read %s: row %x has range_hash %d, want %d", queueTable(t), id, rh, wire.RangeHash(id))
		}
		out[string(id)] = q
	}
	return out, rows.Err()
}

func readTasks(ctx context.Context, db *sql.DB, t store.Table) (map[taskRef]*dbTask, error) {
	cols := "task_id"
	if t == store.V2 {
		cols = "pass, task_id"
	}
	rows, err := db.QueryContext(ctx, "SELECT range_hash, task_queue_id, "+cols+", data, data_encoding FROM "+taskTable(t))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", taskTable(t), err)
	}
	defer rows.Close()
	out := map[taskRef]*dbTask{}
	for rows.Next() {
		var (
			rh  int64
			id  []byte
			ref taskRef
			d   dbTask
		)
		if t == store.V2 {
			err = rows.Scan(&rh, &id, &ref.pass, &ref.n, &d.data, &d.encoding)
		} else {
			err = rows.Scan(&rh, &id, &ref.n, &d.data, &d.encoding)
		}
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", taskTable(t), err)
		}
		if uint32(rh) != wire.RangeHash(id) || rh < 0 {
			return nil, fmt.Errorf("read %s: row %x has range_hash %d, want %d", taskTable(t), id, rh, wire.RangeHash(id))
		}
		ref.id = string(id)
		out[ref] = &d
	}
	return out, rows.Err()
}
