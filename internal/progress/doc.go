// Package progress tells how far a running pass is: the figures (queues
// done of listed, the share done, the rate, the time left) that both the
// command's progress line and the daemon's status page show, and the
// terminal line itself, cut to the terminal's width and cleared before
// anything else is written to the terminal, so a log line is never glued
// onto it and no stale copy of it is left behind.
package progress
