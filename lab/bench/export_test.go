package bench

// OnRound makes RunLive call f at the start of each round's window with
// the server's main processes (LiveServer.PIDs) and the workload's
// client's process, while they run: the tests read what the kernel lets
// them run on from there.
func OnRound(lo *LiveOptions, f func(serverPIDs []int, workloadPID int)) {
	lo.onRound = func(t roundTarget) { f(t.serverPIDs, t.workloadPID) }
}
