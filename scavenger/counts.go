package scavenger

// The counts of a pass, apart from the rest of its Stats, so that what
// reports or sums them (run's summary, the Temporal worker's totals, the
// daemon's metrics) reads one struct instead of listing its fields.

// Counts are the totals of a pass (Stats embeds them) or of several.
//
// Their JSON names and omissions are those the Temporal worker's totals
// have always written, in heartbeats and results that live on in
// workflow histories: keep them. The counts it never wrote (Deferred,
// WouldDeleteTasks, WouldDeleteQueues) are left out when 0.
type Counts struct {
	// QueuesListed counts the queue rows the listing read (in scope).
	QueuesListed int64 `json:"queues_listed"`
	// QueuesProcessed counts queues whose tasks are done. Inside a page
	// of queues scanned together, each counts as soon as the scan has
	// passed it, before the page's empty queues are deleted.
	QueuesProcessed int64 `json:"queues_processed"`
	// QueuesDeleted counts the queue rows deleted (0 in a dry run).
	QueuesDeleted int64 `json:"queues_deleted"`
	// QueuesKept counts deletes refused because range_id changed: a
	// matching host owns the queue.
	QueuesKept int64 `json:"queues_kept"`
	// TasksProcessed counts the task rows examined.
	TasksProcessed int64 `json:"tasks_processed"`
	// TasksDeleted counts the task rows deleted, for any reason (0 in a
	// dry run).
	TasksDeleted int64 `json:"tasks_deleted"`
	// TasksExpiredLeft counts expired tasks examined and left in place
	// (behind a live task, or in Temporal's mode sharing a batch with one).
	TasksExpiredLeft int64 `json:"tasks_expired_left"`
	// OrphansFound counts task rows found without a queue row.
	OrphansFound int64 `json:"orphans_found"`
	// OrphansLeft counts the orphans left in place (not expired, and
	// Orphans is not OrphansAll).
	OrphansLeft int64 `json:"orphans_left"`
	// TasksRunNotFound counts the tasks the closed-workflow rule looked up
	// and kept because their run has no executions row (reason
	// run_not_found): without Rules.ClosedDeletedRuns, or with the miss
	// unproven or the task too young. A wrong history shard count shows
	// here, as misses, never as deletions. A task kept behind a live head
	// counts in TasksExpiredLeft too if it is expired.
	TasksRunNotFound int64 `json:"tasks_run_not_found,omitempty"`
	// TasksUnknown and QueuesUnknown count rows whose delete has an
	// unknown outcome (the connection was lost mid-statement): they may
	// or may not be gone. TasksDeleted + TasksUnknown is never less than
	// the rows that went.
	TasksUnknown  int64 `json:"tasks_unknown,omitempty"`
	QueuesUnknown int64 `json:"queues_unknown,omitempty"`
	// BadRowCount counts the rows that could not be processed
	// (Stats.BadRows lists the first of them).
	BadRowCount int64 `json:"bad_rows,omitempty"`
	// Errors counts the jobs that failed, after their retries.
	Errors int64 `json:"failed_jobs,omitempty"`
	// Retries counts the transient store errors retried.
	Retries int64 `json:"retries,omitempty"`
	// Dropped counts queue jobs dropped because the deferred list was
	// full: they are left for a later pass.
	Dropped int64 `json:"dropped,omitempty"`
	// Deferred counts the times a queue job yielded its worker.
	Deferred int64 `json:"deferred,omitempty"`
	// WouldDeleteTasks and WouldDeleteQueues count what a dry run would
	// have deleted at the same moment as a real pass; a dry run's
	// *Deleted counts are 0. They are apart so that no reader of a dry
	// run's counts can take them for deletions.
	WouldDeleteTasks  int64 `json:"would_delete_tasks,omitempty"`
	WouldDeleteQueues int64 `json:"would_delete_queues,omitempty"`
}

// Add adds o to c.
func (c *Counts) Add(o Counts) {
	c.QueuesListed += o.QueuesListed
	c.QueuesProcessed += o.QueuesProcessed
	c.QueuesDeleted += o.QueuesDeleted
	c.QueuesKept += o.QueuesKept
	c.TasksProcessed += o.TasksProcessed
	c.TasksDeleted += o.TasksDeleted
	c.TasksExpiredLeft += o.TasksExpiredLeft
	c.OrphansFound += o.OrphansFound
	c.OrphansLeft += o.OrphansLeft
	c.TasksRunNotFound += o.TasksRunNotFound
	c.TasksUnknown += o.TasksUnknown
	c.QueuesUnknown += o.QueuesUnknown
	c.BadRowCount += o.BadRowCount
	c.Errors += o.Errors
	c.Retries += o.Retries
	c.Dropped += o.Dropped
	c.Deferred += o.Deferred
	c.WouldDeleteTasks += o.WouldDeleteTasks
	c.WouldDeleteQueues += o.WouldDeleteQueues
}
