// Package pace is how fast a pass of package scavenger goes: the rate
// limits (Limiter).
package pace

import "errors"

// ErrStopped is returned by a wait (Limiter.Wait) that ended because its
// stop channel was closed: the caller is shutting down. The caller's
// package gives it its own name (scavenger.ErrShutdown).
var ErrStopped = errors.New("pace: stopped")
