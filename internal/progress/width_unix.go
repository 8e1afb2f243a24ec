//go:build unix

package progress

import "golang.org/x/sys/unix"

// TerminalWidth returns the width in columns of the terminal open as fd,
// or 0 if it is not known.
func TerminalWidth(fd uintptr) int {
	ws, err := unix.IoctlGetWinsize(int(fd), unix.TIOCGWINSZ)
	if err != nil {
		return 0
	}
	return int(ws.Col)
}
