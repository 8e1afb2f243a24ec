// Package wire owns the on-disk formats of Temporal's SQL task store: the
// layout of task_queue_id keys and their range_hash, and the proto3 blobs in
// the data columns of task_queues, tasks, task_queues_v2 and tasks_v2.
//
// The blobs are messages of Temporal's temporal.server.api.persistence.v1
// package. They are decoded and encoded by hand with
// google.golang.org/protobuf/encoding/protowire rather than through
// Temporal's generated code, so that this module does not depend on the
// Temporal server, and so that the hot path, reading the expiry of a task
// (DecodeTaskTimes), does not allocate. Decoders read only the fields the
// scavenger needs and skip the rest, including fields that Temporal adds in
// later versions; encoders write exactly what proto.Marshal would write for a
// message holding only those fields.
package wire
