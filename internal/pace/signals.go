package pace

import "time"

// The signals the controller watches, each judged by windows against its
// own baseline (baseline.go):
//
//   - the pass's own statements (Run), per kind: the store method and the
//     size of its result. A write's latency is its commit's too (each
//     commits on its own at the gentle pace), so this is the pass's
//     commit latency;
//   - the probe (StartProbe), where the store has one (PostgreSQL,
//     MySQL): what the cluster's reads feel;
//   - outside signals (observeSignal): Temporal's own persistence latency.

// observe records a statement of method that returned rows in d, and
// adjusts the pace at the end of a window. quiet says it was one of a
// re-measure's.
func (p *Pacer) observe(method string, rows int, d time.Duration, quiet bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.full {
		return
	}
	k := kindOf(method, rows)
	w := p.kinds[k]
	if w == nil {
		w = &window{}
		p.kinds[k] = w
	}
	if quiet && p.rb.on {
		w.quiet = append(w.quiet, d)
		if p.rb.quietLeft--; p.rb.quietLeft <= 0 {
			p.endRebase()
		}
		return
	}
	p.judge(k.method, w, d)
}

// observeProbe records one probe of the probe connection that took d.
func (p *Pacer) observeProbe(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.full {
		return
	}
	if p.rb.idle {
		p.probe.quiet = append(p.probe.quiet, d)
		return
	}
	if p.probe.baseline == 0 {
		// No pause yet: the first probes, with the pass at its slow
		// start, stand in.
		p.probe.quiet = append(p.probe.quiet, d)
		if len(p.probe.quiet) >= windowSize {
			p.probe.rebase(1)
			p.probe.quiet = p.probe.quiet[:0]
		}
		return
	}
	p.judge("probe", &p.probe, d)
}

// observeSignal records one sample of an outside signal named name: its
// baseline is its first window, then follows quiet windows as the others
// do.
func (p *Pacer) observeSignal(name string, d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.full || d <= 0 {
		return
	}
	w := p.signals[name]
	if w == nil {
		w = &window{}
		p.signals[name] = w
	}
	p.judge(name, w, d)
}

// judge adds d to w's window and, once it is full, has the controller
// decide on its median and moves the levers (under mu).
func (p *Pacer) judge(signal string, w *window, d time.Duration) {
	m, full := w.add(d)
	if !full {
		return
	}
	if w.baseline == 0 {
		w.baseline = m
		return
	}
	p.lastSignal, p.lastRatio = signal, float64(m)/float64(w.baseline)
	before := p.lv
	dec := decide(p.lv, p.lim, p.factor, m, w.baseline)
	p.lv.allowed, p.lv.share = dec.levers.allowed, dec.levers.share
	if dec.levers.batchCap != before.batchCap {
		p.setBatchCap(dec.levers.batchCap)
	}
	if dec.harm {
		p.backedOff(signal, m, w.baseline, dec.atFloor)
		return
	}
	w.follow(m)
	p.increases++
	if p.lv.allowed > before.allowed {
		p.slot.Signal()
	}
}

// backedOff tallies a window that backed off, and logs it, at most every
// logEvery (under mu).
func (p *Pacer) backedOff(signal string, m, base time.Duration, atFloor bool) {
	p.decreases++
	p.minAllowed = min(p.minAllowed, p.lv.allowed)
	p.minShare = min(p.minShare, p.lv.share)
	now := p.now()
	if atFloor {
		p.floorHits++
		if now.Sub(p.lastHit) >= logEvery {
			p.lastHit = now
			p.log.Warn("pace gentle: at its floor and the database is still slower than its baseline: the pass cannot be gentler (one statement at a time, the longest pauses)",
				"signal", signal, "median", m, "baseline", base, "factor", p.factor)
		}
		return
	}
	if now.Sub(p.lastLog) >= logEvery {
		p.lastLog = now
		p.log.Info("pace gentle: backing off, the database is slower than its baseline",
			"signal", signal, "median", m, "baseline", base, "factor", p.factor,
			"in_flight", p.lv.allowed, "share", p.lv.share, "batch", p.lv.batchCap)
	}
}
