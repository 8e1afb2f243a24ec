package wire

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"unicode/utf8"

	farm "github.com/dgryski/go-farm"
)

// TaskType is the type of tasks a queue holds (Temporal's
// enums.TaskQueueType). It is the last byte of a subqueue-0 task_queue_id,
// so valid values are below 0x80.
type TaskType uint8

const (
	TaskTypeUnspecified TaskType = 0
	TaskTypeWorkflow    TaskType = 1
	TaskTypeActivity    TaskType = 2
	TaskTypeNexus       TaskType = 3
)

// String returns "Workflow", "Activity", "Nexus", "Unspecified", or
// "TaskType(n)" for values Temporal did not define when this was written.
func (t TaskType) String() string {
	switch t {
	case TaskTypeUnspecified:
		return "Unspecified"
	case TaskTypeWorkflow:
		return "Workflow"
	case TaskTypeActivity:
		return "Activity"
	case TaskTypeNexus:
		return "Nexus"
	}
	return "TaskType(" + strconv.Itoa(int(t)) + ")"
}

// Kind is the kind of a task queue (Temporal's enums.TaskQueueKind).
type Kind int32

const (
	KindUnspecified    Kind = 0
	KindNormal         Kind = 1
	KindSticky         Kind = 2
	KindWorkerCommands Kind = 3
)

// String returns "Normal", "Sticky", "WorkerCommands", "Unspecified", or
// "Kind(n)" for other values.
func (k Kind) String() string {
	switch k {
	case KindUnspecified:
		return "Unspecified"
	case KindNormal:
		return "Normal"
	case KindSticky:
		return "Sticky"
	case KindWorkerCommands:
		return "WorkerCommands"
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// NamespaceID is the binary form of a namespace UUID, as it leads every
// task_queue_id.
type NamespaceID [16]byte

// ParseNamespaceID parses the textual form of a UUID,
// xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx, in either case. Temporal stores
// namespace ids in this form inside blobs; other spellings that some UUID
// libraries accept (braces, urn:uuid:, no dashes) never occur there and are
// rejected.
func ParseNamespaceID(s string) (NamespaceID, error) {
	var id NamespaceID
	if len(s) != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
		return id, fmt.Errorf("wire: invalid namespace id %q: want a UUID like 32049b68-7872-4094-8e63-d0dd59896a83", s)
	}
	j := 0
	for i := 0; i < 36; i += 2 {
		if i == 8 || i == 13 || i == 18 || i == 23 {
			i++
		}
		hi, ok1 := unhex(s[i])
		lo, ok2 := unhex(s[i+1])
		if !ok1 || !ok2 {
			return NamespaceID{}, fmt.Errorf("wire: invalid namespace id %q: bad hex digit", s)
		}
		id[j] = hi<<4 | lo
		j++
	}
	return id, nil
}

func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// String returns the lower-case textual form of the UUID, the form Temporal
// writes into blobs.
func (n NamespaceID) String() string {
	var buf [36]byte
	hex.Encode(buf[0:8], n[0:4])
	buf[8] = '-'
	hex.Encode(buf[9:13], n[4:6])
	buf[13] = '-'
	hex.Encode(buf[14:18], n[6:8])
	buf[18] = '-'
	hex.Encode(buf[19:23], n[8:10])
	buf[23] = '-'
	hex.Encode(buf[24:36], n[10:16])
	return string(buf[:])
}

// subqueueFlag marks the type byte of a subqueue k > 0; a uvarint of k follows.
const subqueueFlag = 0x80

// QueueID returns the task_queue_id of subqueue k of the queue (ns, name,
// typ): the 16 namespace bytes, the name, then the type byte for k = 0, or
// typ|0x80 and the uvarint of k for k > 0. The id is the same in the v1 and
// v2 tables.
//
// QueueID panics if subqueue is negative or typ does not fit in 7 bits:
// neither can be written so that Temporal would find the rows again.
func QueueID(ns NamespaceID, name string, typ TaskType, subqueue int) []byte {
	return AppendQueueID(make([]byte, 0, len(ns)+len(name)+1+binary.MaxVarintLen64), ns, name, typ, subqueue)
}

// AppendQueueID appends the task_queue_id computed as by QueueID to dst and
// returns the extended buffer.
func AppendQueueID(dst []byte, ns NamespaceID, name string, typ TaskType, subqueue int) []byte {
	if subqueue < 0 {
		panic("wire: negative subqueue " + strconv.Itoa(subqueue))
	}
	if typ >= subqueueFlag {
		panic("wire: task type " + strconv.Itoa(int(typ)) + " does not fit in a task_queue_id")
	}
	dst = append(dst, ns[:]...)
	dst = append(dst, name...)
	return appendSubqueue(dst, byte(typ), subqueue)
}

// appendSubqueue appends the end of a task_queue_id, which tells its
// subqueue k >= 0: the type byte typ for k = 0, or typ|subqueueFlag and the
// uvarint of k.
func appendSubqueue(dst []byte, typ byte, k int) []byte {
	if k == 0 {
		return append(dst, typ)
	}
	dst = append(dst, typ|subqueueFlag)
	return binary.AppendUvarint(dst, uint64(k))
}

// RangeHash returns the range_hash column for a task_queue_id: its farm
// Fingerprint32, as Temporal computes it.
func RangeHash(id []byte) uint32 {
	return farm.Fingerprint32(id)
}

// ParseQueueRowID splits the task_queue_id of a task_queues (or
// task_queues_v2) row, which always belongs to subqueue 0, into its namespace,
// name and task type.
func ParseQueueRowID(id []byte) (ns NamespaceID, name string, typ TaskType, err error) {
	if len(id) < len(ns)+1 {
		return ns, "", 0, fmt.Errorf("wire: task_queue_id %x: %d bytes, want at least %d", id, len(id), len(ns)+1)
	}
	last := id[len(id)-1]
	if last&subqueueFlag != 0 {
		return ns, "", 0, fmt.Errorf("wire: task_queue_id %x: type byte %#x has the subqueue bit set", id, last)
	}
	b := id[len(ns) : len(id)-1]
	if !utf8.Valid(b) {
		return ns, "", 0, fmt.Errorf("wire: task_queue_id %x: name %q is not valid UTF-8", id, b)
	}
	copy(ns[:], id)
	return ns, string(b), TaskType(last), nil
}

// Parent is one way to read a tasks-row task_queue_id: as subqueue Subqueue
// of the queue whose subqueue-0 id (the task_queues row id) is QueueID.
type Parent struct {
	QueueID  []byte
	Subqueue int
}

// CandidateParents returns every way to split the task_queue_id of a tasks
// (or tasks_v2) row into a queue row id and a subqueue index.
//
// The split is ambiguous because names are arbitrary UTF-8, whose bytes above
// 0x7f look like a subqueue type byte, and a uvarint ends in a byte below 0x80
// that looks like a subqueue-0 type byte. The candidates are:
//
//   - subqueue 0: id itself, if its last byte is below 0x80;
//   - for each position p >= 16 whose byte has the 0x80 bit set and is
//     followed by exactly one minimal uvarint k >= 1 that ends the id:
//     id[:p] followed by id[p]&0x7f, subqueue k.
//
// Candidates come in that order, the subqueue-k ones by increasing p. Callers
// find a row's true parent by looking each candidate up in task_queues; at
// most one exists in practice. Every QueueID is a fresh copy.
func CandidateParents(id []byte) []Parent {
	const nsLen = len(NamespaceID{})
	var ps []Parent
	if len(id) > nsLen && id[len(id)-1]&subqueueFlag == 0 {
		ps = append(ps, Parent{QueueID: slices.Clone(id), Subqueue: 0})
	}
	// A uvarint is at most MaxVarintLen64 bytes, so only the last few
	// positions can start one.
	start := max(nsLen, len(id)-1-binary.MaxVarintLen64)
	var buf [binary.MaxVarintLen64]byte
	for p := start; p < len(id)-1; p++ {
		if id[p]&subqueueFlag == 0 {
			continue
		}
		rest := id[p+1:]
		k, n := binary.Uvarint(rest)
		if n != len(rest) || k < 1 || k > uint64(maxInt) {
			continue
		}
		// Go's decoder accepts padded encodings such as 81 80 00; Temporal
		// never writes them.
		if m := binary.PutUvarint(buf[:], k); !bytes.Equal(buf[:m], rest) {
			continue
		}
		q := make([]byte, p+1)
		copy(q, id[:p])
		q[p] = id[p] &^ subqueueFlag
		ps = append(ps, Parent{QueueID: q, Subqueue: int(k)})
	}
	return ps
}

const maxInt = int(^uint(0) >> 1)
