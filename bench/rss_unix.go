//go:build unix

package bench

import (
	"os"
	"runtime"
	"syscall"
)

// maxRSS returns the peak resident set of an exited child, in bytes.
func maxRSS(ps *os.ProcessState) int64 {
	ru, ok := ps.SysUsage().(*syscall.Rusage)
	if !ok {
		return 0
	}
	// ru_maxrss is in bytes on macOS, kilobytes elsewhere.
	if runtime.GOOS == "darwin" || runtime.GOOS == "ios" {
		return int64(ru.Maxrss)
	}
	return int64(ru.Maxrss) * 1024
}
