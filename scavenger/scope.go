package scavenger

// What a pass may touch: the namespaces and queue-name glob of its scope,
// and the protected queue-name prefixes it never deletes.

import (
	"path"
	"strings"
)

// inScope applies Config.Namespaces and Config.QueueGlob to a queue row.
func (p *pass) inScope(j *queueJob) bool {
	if len(p.cfg.Namespaces) > 0 && !p.namespaceInScope(j.key.ID) {
		return false
	}
	if p.cfg.QueueGlob != "" {
		ok, _ := path.Match(p.cfg.QueueGlob, j.name)
		return ok
	}
	return true
}

// namespaceInScope reports whether a task_queue_id starts with one of the
// namespaces of Config.Namespaces.
func (p *pass) namespaceInScope(id []byte) bool {
	if len(p.cfg.Namespaces) == 0 {
		return true
	}
	for _, ns := range p.cfg.Namespaces {
		if len(id) >= 16 && string(id[:16]) == string(ns[:]) {
			return true
		}
	}
	return false
}

// protected reports whether a queue of this name must never be deleted.
func (p *pass) protected(name string) bool {
	for _, pre := range p.cfg.ProtectedPrefixes {
		if strings.HasPrefix(name, pre) {
			return true
		}
	}
	return false
}
