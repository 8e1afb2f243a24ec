package scavenger

import (
	"context"
	"errors"
	"time"

	"github.com/tqscavenger/tqscavenger/internal/executor"
	"github.com/tqscavenger/tqscavenger/store"
)

// windowJob scavenges a page of listed queues that have a single subqueue
// (the common case) by scanning their tasks across queues in primary-key
// order: many small queues cost a few statements per page instead of a
// few per queue, and a big backlog is read and deleted in large batches.
// Each row is judged by the rule book, as in queueJob.walk; queues with
// several subqueues keep their own queueJob.
type windowJob struct {
	p      *pass
	table  store.Table
	queues []*queueJob // in primary-key order
	pos    store.TaskPos
	// qi is the first queue not yet behind the scan.
	qi int
	// size is this window's scan size: the pass's adaptive batch size
	// (fullScanBatches of them at PaceFull), cut while most rows read are
	// skipped (queues that stop at a live head), so such queues cost a
	// short read each, as in Temporal.
	size int
	// counted is how many of queues are counted as processed: those the
	// scan has passed and whose deletes ran, so progress moves inside a
	// page instead of a page at a time.
	counted int
	// pending are the deletes still running, oldest first (see
	// startDelete).
	pending []pendingDelete
	// rowsDue are the processed queues left empty, whose rows may be due
	// for deletion; rowsAt is when rows were last deleted. Rows go at the
	// window's end, and with checkpoints also every
	// Config.CheckpointInterval, so that the walk's mark, which stays
	// before a row until its delete has run, moves inside the window.
	rowsDue []*queueJob
	rowsAt  time.Time
}

// fullScanBatches is how many batches (Config.TaskBatchSize, as the
// batch size adapts) one scan of a window reads at PaceFull; its deletes
// still go out a batch at a time. It is the safe raw bound's ratio (lab
// bench: reads of 10,000 rows, deletes of 1,000), and takes a pass over
// queues of 1,000 expired tasks from a scan and a delete per queue (2.07
// statements per queue against the bound's 1.14) to about one delete per
// queue and a scan per ten. The gentle pace reads one batch per scan: its
// lever is the batch size (internal/pace), and a read ten times as long is a
// burst ten times as long. A scan holds its rows in memory: at the
// defaults, up to 10,000 tasks per worker.
const fullScanBatches = 10

// scanBatches is how many batches the next window scan reads, at the pace
// in effect (Tune may change it during a pass).
func (p *pass) scanBatches() int {
	if p.tune.pace() == PaceFull {
		return fullScanBatches
	}
	return 1
}

func (p *pass) newWindowJob(t store.Table, queues []*queueJob) *windowJob {
	return &windowJob{p: p, table: t, queues: queues, pos: store.TaskPos{Queue: queues[0].key, Task: store.MinTaskKey}, rowsAt: time.Now()}
}

// queueOf returns the window's queue with key k, or nil: a key between
// them is a subqueue of another queue or an orphan, scavenged elsewhere.
func (w *windowJob) queueOf(k store.QueueKey) *queueJob {
	for w.qi < len(w.queues) && w.queues[w.qi].key.Less(k) {
		w.qi++
	}
	if w.qi < len(w.queues) && string(w.queues[w.qi].key.ID) == string(k.ID) && w.queues[w.qi].key.RangeHash == k.RangeHash {
		return w.queues[w.qi]
	}
	return nil
}

// Run implements executor.Job.
func (w *windowJob) Run(ctx context.Context) executor.Status {
	p := w.p
	through := w.queues[len(w.queues)-1].key
	for budget := p.cfg.TasksPerJob; budget > 0; {
		// The pace is read per scan: Tune may change it mid-window.
		batches := p.scanBatches()
		if w.size == 0 {
			w.size = batches * p.batch.Size()
		}
		limit := w.size
		if batches > 1 {
			// A long scan stops at the job's budget, but reads at least
			// the batch a scan of the gentle pace would.
			limit = min(limit, max(budget, p.batch.Size()))
		}
		var (
			rows  []store.ScannedTask
			batch int
			plan  deletePlan
			// more: rows lie past this scan's.
			more bool
		)
		err := p.timedBatches(ctx, "scan tasks", batches, limit, func(ctx context.Context, size, b int) (err error) {
			batch = size
			ask := size
			if batches > 1 {
				// Its deletes go out a batch at a time, as one scan's
				// do at the gentle pace. One row more tells whether the
				// window goes on, so a window whose rows end with a
				// scan (a page of small queues read whole) costs no
				// empty scan after it; that row is read again by the
				// next scan.
				plan.rowsPerDelete = b
				ask = size + 1
			}
			rows, err = p.st.ScanTasks(ctx, w.table, w.pos, through, ask)
			if err == nil {
				more = len(rows) >= ask
				rows = rows[:min(len(rows), size)]
			}
			return err
		})
		if err != nil {
			if derr := w.settle(ctx, 0); derr != nil {
				return w.fail(ctx, "delete tasks", derr)
			}
			return w.fail(ctx, "scan tasks", err)
		}
		now := p.cfg.Now()
		var (
			cur     *queueJob
			skip    bool
			curKey  store.QueueKey
			started bool
			skipped int
		)
		for _, r := range rows {
			if !started || r.Queue.RangeHash != curKey.RangeHash || string(r.Queue.ID) != string(curKey.ID) {
				plan.endRun()
				started, curKey = true, r.Queue
				cur = w.queueOf(r.Queue)
				skip = cur == nil || cur.stopped
			}
			if skip {
				skipped++
				// Behind this queue's live head: count what stays expired,
				// as queueJob does, for Stats.TasksExpiredLeft.
				if cur != nil && cur.expiredBehind(cur.subs[0], r.TaskRow, now) {
					p.c.expiredLeft(cur.table, 1)
				}
				continue
			}
			cur.examined++
			budget--
			v := cur.judge(cur.subs[0], r.TaskRow, now)
			if v.Delete() {
				plan.add(w.table, cur, r.Queue, r.Key, v.Reason())
				continue
			}
			cur.nonEmpty = true
			plan.endRun()
			if v.Stop {
				cur.stopped, skip = true, true
			}
		}
		plan.endRun()
		if err := w.startDelete(ctx, &plan); err != nil {
			return w.fail(ctx, "delete tasks", err)
		}
		if !more {
			if err := w.settle(ctx, 0); err != nil {
				return w.fail(ctx, "delete tasks", err)
			}
			return w.finish(ctx)
		}
		if w.p.ckpt != nil && len(w.rowsDue) > 0 && time.Since(w.rowsAt) >= p.cfg.CheckpointInterval {
			if err := w.deleteRows(ctx); err != nil {
				return w.fail(ctx, "delete queues", err)
			}
		}
		if skipped*2 > len(rows) {
			w.size = max(16, batch/4)
		} else {
			w.size = min(batches*p.batch.Size(), batch*2)
		}
		last := rows[len(rows)-1]
		w.pos = store.TaskPos{Queue: last.Queue, Task: last.Key}
		if skip {
			// The rest of this queue is behind a live task, or not ours.
			w.pos.Task = store.MaxTaskKey
		}
	}
	if err := w.settle(ctx, 0); err != nil {
		return w.fail(ctx, "delete tasks", err)
	}
	if w.p.ckpt != nil {
		// Before it waits its turn again: the mark may pass what is done.
		if err := w.deleteRows(ctx); err != nil {
			return w.fail(ctx, "delete queues", err)
		}
	}
	return executor.Defer
}

// A pendingDelete is a window's delete still running (see startDelete).
type pendingDelete struct {
	done chan error
	// qi is the window's qi when it was planned: once it is done, the
	// queues before qi have no rows left.
	qi int
}

// startDelete runs the plan's deletes, keeping up to p.pipeline of them
// running while the window scans on (two where the store shares commits,
// else one: see windowPipeline): the next scan reads only rows past
// the last one planned, so it never meets rows a running delete may or
// may not have deleted yet. The scan's latency hides the delete's, and
// where the store shares commits a window's deletes share one too (a
// call returns only once its statement has committed, so one delete at a
// time would put one of the window's deletes in each commit). Each
// delete's rows are counted when it returns, as without; the window waits
// for them all before it deletes its empty queues and before it ends (Run
// returns nothing that still runs).
func (w *windowJob) startDelete(ctx context.Context, d *deletePlan) error {
	if w.p.pipeline <= 1 {
		if err := w.delete(ctx, d); err != nil {
			return err
		}
		// Rows come in key order: the queues before qi have no rows left.
		w.processed(ctx, w.qi)
		return nil
	}
	if err := w.settle(ctx, w.p.pipeline-1); err != nil {
		return err
	}
	pd := pendingDelete{done: make(chan error, 1), qi: w.qi}
	go func() { pd.done <- w.delete(ctx, d) }()
	w.pending = append(w.pending, pd)
	return nil
}

// settle waits until at most keep of the window's deletes are running,
// oldest first, and counts the queues each finished. If one failed it
// waits for them all and returns its error.
func (w *windowJob) settle(ctx context.Context, keep int) error {
	for len(w.pending) > keep {
		pd := w.pending[0]
		w.pending = w.pending[1:]
		if err := <-pd.done; err != nil {
			for _, rest := range w.pending {
				<-rest.done
			}
			w.pending = nil
			return err
		}
		w.processed(ctx, pd.qi)
	}
	return nil
}

// deletePlan collects the deletable tasks of one scan batch as runs: a key
// range per run in v1 (matching appends only above the ids it has used, so
// a range read whole is exact), the keys themselves in v2 (a new task may
// sort between old ones). With rowsPerDelete, the runs go out in
// deletes of at most that many rows each (a longer run is cut in two:
// each part is still a range of keys the scan read whole).
type deletePlan struct {
	table   store.Table
	sets    []store.TaskSet
	reasons []Reason
	counts  []int64

	// rowsPerDelete, if positive, bounds the rows of one delete;
	// deletes[i] is the index in sets where delete i+1 starts, and
	// rows how many rows the last delete has (its open run included).
	rowsPerDelete int
	deletes       []int
	rows          int

	run       []store.TaskKey
	runQueue  store.QueueKey
	runOwner  *queueJob
	runReason Reason
}

func (d *deletePlan) add(t store.Table, owner *queueJob, q store.QueueKey, k store.TaskKey, r Reason) {
	if len(d.run) > 0 && r != d.runReason {
		d.endRun()
	}
	if d.rowsPerDelete > 0 && d.rows == d.rowsPerDelete {
		d.endRun()
		d.deletes = append(d.deletes, len(d.sets))
		d.rows = 0
	}
	d.table, d.runQueue, d.runOwner, d.runReason = t, q, owner, r
	d.run = append(d.run, k)
	d.rows++
}

// each calls f with the sets of each delete, in order, and their first
// index in sets, until f returns an error.
func (d *deletePlan) each(f func(first int, sets []store.TaskSet) error) error {
	first := 0
	for i := 0; i <= len(d.deletes); i++ {
		end := len(d.sets)
		if i < len(d.deletes) {
			end = d.deletes[i]
		}
		if end > first {
			if err := f(first, d.sets[first:end]); err != nil {
				return err
			}
		}
		first = end
	}
	return nil
}

func (d *deletePlan) endRun() {
	if len(d.run) == 0 {
		return
	}
	set := store.TaskSet{Queue: d.runQueue}
	if d.table == store.V1 {
		set.Range = store.TaskRange{Min: d.run[0], Max: d.run[len(d.run)-1]}
	} else {
		set.Keys = append([]store.TaskKey(nil), d.run...)
	}
	d.sets = append(d.sets, set)
	d.reasons = append(d.reasons, d.runReason)
	d.counts = append(d.counts, int64(len(d.run)))
	d.runOwner.deleted += len(d.run)
	d.run = d.run[:0]
}

// delete runs the plan's deletes, one after the other, and counts each
// by reason as it returns: a delete that fails leaves the counts of
// those before it.
func (w *windowJob) delete(ctx context.Context, d *deletePlan) error {
	return d.each(func(first int, sets []store.TaskSet) error {
		return w.deleteSets(ctx, sets, d.reasons[first:], d.counts[first:])
	})
}

// deleteSets runs one delete of sets, planned for reasons and counts
// (one of each per set), and counts what it deleted by reason.
func (w *windowJob) deleteSets(ctx context.Context, sets []store.TaskSet, reasons []Reason, counts []int64) error {
	planned := map[Reason]int64{}
	var total int64
	for i := range sets {
		planned[reasons[i]] += counts[i]
		total += counts[i]
	}
	p := w.p
	deleted := total
	if !p.cfg.DryRun {
		var err error
		deleted, err = p.deleting(ctx, "delete tasks", total, &p.c.tasksUnknown, true, func(ctx context.Context) (int64, error) {
			return p.st.DeleteTaskSets(ctx, w.table, sets)
		})
		if err != nil {
			p.c.deleted(w.table, ReasonExpired, deleted)
			return err
		}
	}
	// Matching may have dispatched some of them meanwhile: the shortfall
	// comes off the expired count.
	if short := total - deleted; short > 0 {
		planned[ReasonExpired] = max(0, planned[ReasonExpired]-short)
	}
	for r, n := range planned {
		p.c.deleted(w.table, r, n)
	}
	return nil
}

// finish deletes the window's queues that are now empty and idle and
// ends the job.
func (w *windowJob) finish(ctx context.Context) executor.Status {
	w.processed(ctx, len(w.queues))
	if err := w.deleteRows(ctx); err != nil {
		return w.fail(ctx, "delete queues", err)
	}
	return executor.Done
}

// deleteRows deletes, in one statement, the rows of the queues in rowsDue
// the rule book lets go, fenced on the range_id each was listed with, and
// finishes their marks. A queue whose other table version cannot be
// checked is kept and its mark held.
func (w *windowJob) deleteRows(ctx context.Context) error {
	p := w.p
	due := w.rowsDue
	w.rowsDue, w.rowsAt = nil, time.Now()
	var (
		fences []store.QueueFence
		fenced []*queueJob
	)
	for _, q := range due {
		// The other table is read only for a queue that may go.
		if !q.queueVerdict(false).Delete() {
			w.settled(ctx, q, nil)
			continue
		}
		if q.otherHasTasks {
			has, err := q.otherTableHasTasks(ctx)
			if err != nil {
				w.settled(ctx, q, err)
				q.fail(ctx, "check the other table version", err)
				continue
			}
			if v := q.queueVerdict(has); !v.Delete() {
				if v.Why == WhyOtherTableTasks {
					p.keptForOther(q)
				}
				w.settled(ctx, q, nil)
				continue
			}
		}
		fences = append(fences, store.QueueFence{QueueKey: q.key, RangeID: q.rangeID})
		fenced = append(fenced, q)
	}
	if len(fences) == 0 {
		return nil
	}
	tc := p.c.table(w.table)
	n := int64(len(fences))
	if !p.cfg.DryRun {
		var err error
		n, err = p.deleting(ctx, "delete queues", n, &p.c.queuesUnknown, false, func(ctx context.Context) (int64, error) {
			return p.st.DeleteQueues(ctx, w.table, fences)
		})
		if err != nil {
			tc.queuesDeleted.Add(n)
			for _, q := range fenced {
				w.settled(ctx, q, err)
			}
			return err
		}
	}
	tc.queuesDeleted.Add(n)
	// The others changed since they were listed: a matching host
	// owns them.
	p.c.queuesKept.Add(int64(len(fences)) - n)
	for _, q := range fenced {
		w.settled(ctx, q, nil)
	}
	return nil
}

// processed counts the window's queues before n as processed, once each.
// A queue is processed when its tasks are done; if it is left empty its
// row may be due for deletion (deleteRows), and its mark waits for it;
// otherwise its mark passes it now. With checkpoints, an empty queue is
// counted once its row's work ended (settled), as its mark passes it: the
// counts a checkpoint is recorded with (a worker's heartbeat) then count
// no queue its positions do not pass, so a retry that redoes such a queue
// does not count it twice. Without, it is counted now (rows go at the
// window's end only, and the count moves inside the window).
func (w *windowJob) processed(ctx context.Context, n int) {
	for ; w.counted < n; w.counted++ {
		q := w.queues[w.counted]
		w.p.walked(q)
		if q.nonEmpty {
			q.done()
			q.row.finished(ctx)
			continue
		}
		if w.p.ckpt == nil {
			q.done()
		}
		w.rowsDue = append(w.rowsDue, q)
	}
}

// settled ends the row's work of q, a queue of rowsDue: with err nil its
// mark passes it. With checkpoints q is counted as processed here (see
// processed), unless the pass's stop interrupted its row's work: a
// resumed pass does it again, and counts it.
func (w *windowJob) settled(ctx context.Context, q *queueJob, err error) {
	if w.p.ckpt != nil && (err == nil || !interrupted(ctx, err)) {
		q.done()
	}
	if err == nil {
		q.row.finished(ctx)
	}
}

func (w *windowJob) fail(ctx context.Context, op string, err error) executor.Status {
	// The queues left empty whose rows were not deleted yet: counted as
	// processed if the job failed, not if the pass was stopped (settled).
	for _, q := range w.rowsDue {
		w.settled(ctx, q, err)
	}
	w.rowsDue = nil
	if ctx.Err() == nil && !errors.Is(err, ErrShutdown) {
		c := causeOf(err)
		w.p.c.fail(Failure{Op: op, Table: w.table, Queue: w.queues[0].key, Cause: c, Err: err})
		w.p.cfg.Logger.Error("queue page failed", "op", op, "table", w.table.String(),
			"first_queue", w.queues[0].key.String(), "queues", len(w.queues), "cause", string(c), "err", err)
	}
	return executor.Err
}
