//go:build tqs_notemporal

package cli

// temporalCommands are none in a build with the tqs_notemporal tag: no
// worker or schedule command, and no Temporal SDK in the binary.
func temporalCommands() []command { return nil }
