//go:build !unix

package progress

// TerminalWidth returns 0 (unknown) where the terminal's size is not read:
// the line is then DefaultWidth columns at most.
func TerminalWidth(fd uintptr) int { return 0 }
