// The subqueues of a queue row: the task_queue_id of each, derived from the
// row's own, and the ack level its blob records for it.

package wire

import (
	"encoding/binary"
	"strconv"
)

// SubqueueID returns the task_queue_id of subqueue k of the queue whose row
// id, the task_queue_id of subqueue 0, is rowID. The layout is QueueID's:
// for k = 0 the result is a copy of rowID; for k > 0 its last byte, the task
// type, gets the subqueue bit and the uvarint of k follows. The result is a
// fresh slice.
//
// SubqueueID does not check that rowID is a queue row id (see
// ParseQueueRowID): of one whose last byte already has the subqueue bit, it
// returns an id that no task row has. It panics if k is negative, as QueueID
// does, or if rowID is empty.
func SubqueueID(rowID []byte, k int) []byte {
	if k < 0 {
		panic("wire: negative subqueue " + strconv.Itoa(k))
	}
	if len(rowID) == 0 {
		panic("wire: empty task_queue_id")
	}
	last := len(rowID) - 1
	id := make([]byte, 0, len(rowID)+binary.MaxVarintLen64)
	return appendSubqueue(append(id, rowID[:last]...), rowID[last], k)
}

// Subqueue is one subqueue of a queue row: the task_queue_id and range_hash
// of its task rows, and the ack level the row records for it.
type Subqueue struct {
	ID        []byte
	RangeHash uint32

	// Ack is the ack level: every task at or below it was dispatched. The
	// v1 tables order tasks by task_id alone, so there Ack.Pass is 0.
	// HasAck is false when the row records no ack level.
	Ack    FairLevel
	HasAck bool
}

// Subqueues lists the subqueues of the queue row whose task_queue_id is
// rowID, whose range_hash is rowHash and whose blob is info; fair says the
// row is in the fairness (v2) table, task_queues_v2, whose subqueues keep
// their ack levels in FairAckLevel.
//
// Subqueue k is the k-th entry of info.Subqueues, whatever its priority. A
// row without a list, as older servers write, has subqueue 0 only. Subqueue
// 0 is the row's own id and hash: its ID is rowID itself, not a copy. The
// others' ids come from SubqueueID.
//
// In a v1 row, subqueue k is acked up to its AckLevel, if that is above 0;
// without a list, subqueue 0 is acked up to the row's AckLevel, which older
// servers keep there. In a v2 row, subqueue k is acked up to its
// FairAckLevel, if it has one; without a list, nothing is acked.
func Subqueues(rowID []byte, rowHash uint32, info TaskQueueInfo, fair bool) []Subqueue {
	subs := make([]Subqueue, max(len(info.Subqueues), 1))
	for k := range subs {
		sq := &subs[k]
		if k == 0 {
			sq.ID, sq.RangeHash = rowID, rowHash
		} else {
			sq.ID = SubqueueID(rowID, k)
			sq.RangeHash = RangeHash(sq.ID)
		}
		switch {
		case k < len(info.Subqueues) && fair:
			sq.Ack, sq.HasAck = info.Subqueues[k].FairAckLevel, info.Subqueues[k].HasFairAckLevel
		case k < len(info.Subqueues):
			ack := info.Subqueues[k].AckLevel
			sq.Ack, sq.HasAck = FairLevel{TaskID: ack}, ack > 0
		case !fair:
			sq.Ack, sq.HasAck = FairLevel{TaskID: info.AckLevel}, info.AckLevel > 0
		}
	}
	return subs
}
