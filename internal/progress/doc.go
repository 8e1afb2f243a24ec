// Package progress draws a running pass's progress on a terminal: the
// line of its figures (scavenger.Stats.Progress: queues done of listed,
// the share done, the rate, the time left), cut to the terminal's width
// and cleared before anything else is written to the terminal, so a log
// line is never glued onto it and no stale copy of it is left behind.
package progress
