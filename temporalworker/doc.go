// Package temporalworker runs tqscavenger passes on the user's own Temporal
// cluster: a workflow that makes one pass as N partition activities in
// parallel, and the partition activity, which scavenges one range of the
// range_hash space and heartbeats how far it got, so that a retried
// activity (a worker crash, a deploy, a heartbeat timeout) resumes there
// instead of starting again.
//
// The workflow's input, a PassDescription, lives in Temporal's history: it
// holds what a pass does (modes, grace, limits, N) and the identity of the
// database it is meant for, never a DSN or a password. Each worker reaches
// the database through its own settings (Activities.DB, a
// scavenger.PassDB such as a *sqlstore.DB), and refuses an
// activity meant for another database.
//
// The package depends on go.temporal.io/sdk; the rest of the module does
// not, so a program that embeds the scavenger without Temporal does not
// link the SDK.
package temporalworker
