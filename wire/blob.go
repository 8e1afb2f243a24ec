package wire

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// EncodingProto3 is the data_encoding Temporal writes next to every blob.
const EncodingProto3 = "Proto3"

// encodingProto3Enum is the enum name of the same encoding, which Temporal's
// readers also accept.
const encodingProto3Enum = "ENCODING_TYPE_PROTO3"

var (
	// ErrUnknownEncoding is returned, wrapped with the offending value, for
	// a data_encoding other than Proto3.
	ErrUnknownEncoding = errors.New("unknown data_encoding")

	// ErrMalformed is returned, wrapped with the field that failed, for a
	// blob that is not a valid encoding of the expected message.
	ErrMalformed = errors.New("malformed blob")
)

// CheckEncoding reports whether blobs with the data_encoding enc can be
// decoded: "Proto3" and "ENCODING_TYPE_PROTO3" can, anything else yields an
// error wrapping ErrUnknownEncoding. Temporal's tests can also write Json
// blobs; no server writes them, so they are an unknown encoding here too.
func CheckEncoding(enc string) error {
	if enc == EncodingProto3 || enc == encodingProto3Enum {
		return nil
	}
	return fmt.Errorf("%w %q (want %s)", ErrUnknownEncoding, enc, EncodingProto3)
}

// Expired reports whether a task with the given expiry_time is expired at
// now, by Temporal's rule: the expiry is set, lies after the Unix epoch, and
// is before now. The zero time.Time means "no expiry": such tasks never
// expire.
func Expired(expiry, now time.Time) bool {
	// The zero time.Time has a negative Unix time, so it needs no case of
	// its own.
	return expiry.Unix() > 0 && expiry.Before(now)
}

// FairLevel is a position in the (pass, task_id) order of a fairness (v2)
// subqueue (Temporal's persistence FairLevel).
type FairLevel struct {
	Pass   int64 // field 1, task_pass
	TaskID int64 // field 2, task_id
}

// SubqueueInfo is the state of one subqueue of a task queue. Its index in
// TaskQueueInfo.Subqueues is the subqueue number k of the task_queue_id;
// Priority says which priority level it serves.
type SubqueueInfo struct {
	Priority                int32 // field 1, key.priority (SubqueueKey field 1)
	AckLevel                int64 // field 2: v1 tasks with task_id <= AckLevel are done
	ApproximateBacklogCount int64 // field 3

	// FairAckLevel is the v2 ack level: tasks at or below it in
	// (pass, task_id) order are done. HasFairAckLevel tells an absent level
	// (nothing acked) from a present zero one.
	FairAckLevel    FairLevel // field 4
	HasFairAckLevel bool

	FairMaxReadLevel FairLevel // field 5
}

// TaskQueueInfo is the blob of a task_queues or task_queues_v2 row.
type TaskQueueInfo struct {
	NamespaceID             string    // field 1, textual UUID
	Name                    string    // field 2
	TaskType                TaskType  // field 3
	Kind                    Kind      // field 4
	AckLevel                int64     // field 5, subqueue 0's ack level, kept for old readers
	ExpiryTime              time.Time // field 6; zero if absent
	LastUpdateTime          time.Time // field 7; zero if absent
	ApproximateBacklogCount int64     // field 8
	Subqueues               []SubqueueInfo
	OtherHasTasks           bool // field 10
}

// Priority is the priority of a task (Temporal's common.v1.Priority).
type Priority struct {
	PriorityKey    int32   // field 1
	FairnessKey    string  // field 2
	FairnessWeight float32 // field 3
}

// isZero reports whether p would encode to nothing. A weight of -0 is not
// zero: protobuf writes it, so it survives a round trip.
func (p Priority) isZero() bool {
	return p.PriorityKey == 0 && p.FairnessKey == "" && math.Float32bits(p.FairnessWeight) == 0
}

// TaskInfo is the task proper, inside an AllocatedTaskInfo.
type TaskInfo struct {
	NamespaceID      string // field 1, textual UUID
	WorkflowID       string // field 2
	RunID            string // field 3
	ScheduledEventID int64  // field 4

	CreateTime time.Time // field 5; zero if absent
	ExpiryTime time.Time // field 6; zero if absent: the task never expires

	Stamp    int32    // field 9
	Priority Priority // field 10
}

// AllocatedTaskInfo is the blob of a tasks or tasks_v2 row.
type AllocatedTaskInfo struct {
	Data     TaskInfo // field 1
	TaskID   int64    // field 2
	TaskPass int64    // field 3, set in tasks_v2 rows only
}

// TaskTimes holds the fields of a task blob the scavenger reads for every
// task: see DecodeTaskTimes.
type TaskTimes struct {
	CreateTime time.Time // zero if absent
	ExpiryTime time.Time // zero if absent: the task never expires
}
