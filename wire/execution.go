// The blobs of Temporal's history tables that the closed-workflow rule
// reads (executions.state, cluster_metadata_info.data, namespaces.data),
// the run a task belongs to, and the history shard of a workflow.

package wire

import (
	"fmt"
	"time"

	farm "github.com/dgryski/go-farm"
)

// ExecutionState is a run's state in its executions row
// (temporal.server.api.enums.v1.WorkflowExecutionState).
type ExecutionState int32

// The states Temporal v1.32 defines. VOID is never persisted.
const (
	StateUnspecified ExecutionState = 0
	StateCreated     ExecutionState = 1
	StateRunning     ExecutionState = 2
	StateCompleted   ExecutionState = 3
	StateZombie      ExecutionState = 4
	StateVoid        ExecutionState = 5
	StateCorrupted   ExecutionState = 6
)

var stateNames = [...]string{"UNSPECIFIED", "CREATED", "RUNNING", "COMPLETED", "ZOMBIE", "VOID", "CORRUPTED"}

func (s ExecutionState) String() string {
	if s >= 0 && int(s) < len(stateNames) {
		return stateNames[s]
	}
	return fmt.Sprintf("STATE_%d", int32(s))
}

// ExecutionStateInfo is what the rule reads of an executions row's state
// blob (persistence.v1.WorkflowExecutionState).
type ExecutionStateInfo struct {
	RunID string         // field 2
	State ExecutionState // field 3
	// Unknown: the blob holds a field this build does not know (a later
	// Temporal's). The rule keeps such a run's tasks.
	Unknown bool
}

// DecodeExecutionState decodes the state column of an executions row.
func DecodeExecutionState(encoding string, data []byte) (ExecutionStateInfo, error) {
	var m ExecutionStateInfo
	if err := CheckEncoding(encoding); err != nil {
		return m, err
	}
	var err *malformedError
	r := reader{b: data, err: &err}
	for r.next() {
		switch r.num {
		case 2:
			r.string("run_id", &m.RunID)
		case 3:
			r.int32("state", (*int32)(&m.State))
		case 1, 4, 5, 6, 7, 8:
			// create_request_id, status, last_update_versioned_transition,
			// start_time, request_ids, first_execution_run_id
			r.skip()
		default:
			m.Unknown = true
			r.skip()
		}
	}
	if err != nil {
		return ExecutionStateInfo{}, err.within("WorkflowExecutionState")
	}
	return m, nil
}

// ClusterMetadata is what the rule reads of a cluster_metadata_info row
// (persistence.v1.ClusterMetadata).
type ClusterMetadata struct {
	ClusterName       string // field 1
	HistoryShardCount int32  // field 2
}

// DecodeClusterMetadata decodes the data column of cluster_metadata_info.
func DecodeClusterMetadata(encoding string, data []byte) (ClusterMetadata, error) {
	var m ClusterMetadata
	if err := CheckEncoding(encoding); err != nil {
		return m, err
	}
	var err *malformedError
	r := reader{b: data, err: &err}
	for r.next() {
		switch r.num {
		case 1:
			r.string("cluster_name", &m.ClusterName)
		case 2:
			r.int32("history_shard_count", &m.HistoryShardCount)
		default:
			r.skip()
		}
	}
	if err != nil {
		return ClusterMetadata{}, err.within("ClusterMetadata")
	}
	return m, nil
}

// NamespaceRetention is what the rule reads of a namespaces row's data
// (persistence.v1.NamespaceDetail): config (field 2), retention (its field
// 1, a google.protobuf.Duration).
type NamespaceRetention struct {
	Retention time.Duration
	// HasRetention: the config and its retention are present. Without it
	// the retention is unknown, not zero.
	HasRetention bool
}

// DecodeNamespaceRetention decodes the retention of a namespaces row.
func DecodeNamespaceRetention(encoding string, data []byte) (NamespaceRetention, error) {
	var m NamespaceRetention
	if err := CheckEncoding(encoding); err != nil {
		return m, err
	}
	var sec int64
	var nanos int32
	var err *malformedError
	r := reader{b: data, err: &err}
	for r.next() {
		if r.num != 2 {
			r.skip()
			continue
		}
		r.message("config", func() {
			for r.next() {
				if r.num != 1 {
					r.skip()
					continue
				}
				m.HasRetention = true
				r.message("retention", func() {
					for r.next() {
						switch r.num {
						case 1:
							r.int64("seconds", &sec)
						case 2:
							r.int32("nanos", &nanos)
						default:
							r.skip()
						}
					}
				})
			}
		})
	}
	if err != nil {
		return NamespaceRetention{}, err.within("NamespaceDetail")
	}
	if sec < 0 || nanos < 0 || sec > int64(1<<62)/int64(time.Second) {
		return NamespaceRetention{}, fmt.Errorf("%w: NamespaceDetail.config.retention %ds %dns is no retention", ErrMalformed, sec, nanos)
	}
	m.Retention = time.Duration(sec)*time.Second + time.Duration(nanos)
	return m, nil
}

// TaskRun is what the closed-workflow rule reads of a task blob: whose run
// it is, and what would make the rule keep it.
type TaskRun struct {
	NamespaceID, WorkflowID, RunID string // TaskInfo fields 1-3, textual
	CreateTime                     time.Time
	// ComponentRef: the task carries a CHASM component_ref (field 11),
	// a standalone activity's, which history validates through the ref,
	// not through the run.
	ComponentRef bool
	// Unknown: the blob holds a field this build does not know.
	Unknown bool
}

// DecodeTaskRun decodes the run of a tasks or tasks_v2 row. It reports a
// field it does not know (Unknown) instead of skipping it silently: a
// later Temporal may direct such a task elsewhere than its run.
func DecodeTaskRun(encoding string, data []byte) (TaskRun, error) {
	var m TaskRun
	if err := CheckEncoding(encoding); err != nil {
		return m, err
	}
	var create timestamp
	var err *malformedError
	r := reader{b: data, err: &err}
	for r.next() {
		switch r.num {
		case 1:
			r.message("data", func() { decodeTaskRunInfo(&r, &m, &create) })
		case 2, 3:
			r.skip() // task_id, task_pass
		default:
			m.Unknown = true
			r.skip()
		}
	}
	if err != nil {
		return TaskRun{}, err.within("AllocatedTaskInfo")
	}
	m.CreateTime = create.time()
	return m, nil
}

func decodeTaskRunInfo(r *reader, m *TaskRun, create *timestamp) {
	for r.next() {
		switch r.num {
		case 1:
			r.string("namespace_id", &m.NamespaceID)
		case 2:
			r.string("workflow_id", &m.WorkflowID)
		case 3:
			r.string("run_id", &m.RunID)
		case 5:
			r.message("create_time", func() { decodeTimestamp(r, create) })
		case 11:
			m.ComponentRef = true // present, however empty
			r.skip()
		case 4, 6, 7, 8, 9, 10:
			// scheduled_event_id, expiry_time, clock, version_directive,
			// stamp, priority
			r.skip()
		default:
			m.Unknown = true
			r.skip()
		}
	}
}

// HistoryShard is the history shard, 1…n, of a workflow: Temporal's
// common.WorkflowIDToHistoryShard, farm.Fingerprint32 of the namespace id
// (canonical UUID text), "_" and the workflow id, modulo n, plus one.
func HistoryShard(namespaceID, workflowID string, n int32) int32 {
	h := farm.Fingerprint32([]byte(namespaceID + "_" + workflowID))
	return int32(h%uint32(n)) + 1
}
