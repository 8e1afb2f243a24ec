//go:build !linux

package bench

import "os/exec"

// dieWithParent needs Linux's parent-death signal; elsewhere a killed
// benchmark may leave a pass running.
func dieWithParent(*exec.Cmd) {}
