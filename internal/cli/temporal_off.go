//go:build tqs_notemporal

package cli

// temporalCommands is empty in a build with the tqs_notemporal tag: no
// worker or schedule command, and no Temporal SDK in the binary.
var temporalCommands []command
