package interop

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// TestInterop runs tqscavenger beside a real Temporal server: per engine and
// fairness setting a control run without tqscavenger and a run with it, then
// runs with a broken scavenger that the checks must catch. See README.md.
//
// It runs beside TestWorkerOnTemporal; its engines and fairness settings
// one after another, each a control and a scavenged run side by side.
func TestInterop(t *testing.T) {
	s := loadSettings(t)
	s.sideBySide(t)
	start := time.Now()
	var notes []string
	// failed gathers every failed check of the engine runs, so that the
	// suite's last lines (what a truncated CI log keeps) name them.
	var failed []string
	controls := map[string]*report{}
	for ei, engine := range s.engines {
		fairs := s.fairness
		if engine == "sqlite" && os.Getenv("TQS_INTEROP_FAIRNESS") == "" {
			fairs = []bool{false}
		}
		for fi, fair := range fairs {
			m := modeDefault
			if (ei+fi)%2 == 1 {
				m = modeAll
			}
			name := fmt.Sprintf("%s/fairness=%s", engine, onOff(fair))
			t.Run(name, func(t *testing.T) {
				var control, run *report
				t.Run("runs", func(t *testing.T) {
					t.Run("control", func(t *testing.T) {
						s.sideBySide(t)
						control = execute(t, s, runConfig{engine: engine, fairness: fair, mode: m, kind: noScavenger, short: s.short})
					})
					t.Run("scavenged", func(t *testing.T) {
						s.sideBySide(t)
						run = execute(t, s, runConfig{engine: engine, fairness: fair, mode: m, kind: realServe, short: s.short})
					})
				})
				if control == nil || run == nil {
					t.Fatal("a run did not finish")
				}
				controls[engine+onOff(fair)] = control
				for _, p := range control.problems {
					t.Errorf("control run (no tqscavenger): %s", p)
					failed = append(failed, name+" control: "+p)
				}
				run.compare(control)
				for _, p := range run.problems {
					t.Error(p)
					failed = append(failed, name+": "+p)
				}
				text := control.summary() + run.summary() + latencyTable(control.p1Latency, run.p1Latency)
				t.Log("\n" + text)
				notes = append(notes, text)
				writeReport(s, strings.ReplaceAll(name, "/", "-")+".txt", text)
			})
		}
	}
	for _, b := range s.breaks() {
		engine := s.engines[0]
		fair := s.fairness[0]
		control := controls[engine+onOff(fair)]
		t.Run("broken-"+b, func(t *testing.T) {
			if control == nil {
				t.Skip("no control run to compare with")
			}
			rep := execute(t, s, runConfig{engine: engine, fairness: fair, mode: control.cfg.mode, kind: brokenLibrary, brk: b, short: true})
			rep.compare(control)
			text := rep.summary()
			t.Log("\n" + text)
			notes = append(notes, text)
			writeReport(s, "broken-"+b+".txt", text)
			if len(rep.problems) == 0 {
				t.Errorf("a scavenger broken by %q passed every check: the suite cannot tell", b)
			} else {
				t.Logf("the broken scavenger (%s) was caught by %d failed checks", b, len(rep.problems))
			}
		})
	}
	took := time.Since(start).Round(time.Second)
	notes = append(notes, fmt.Sprintf("interop suite: %s\n", took))
	writeReport(s, "report.txt", strings.Join(notes, "\n"))
	if len(failed) > 0 {
		text := fmt.Sprintf("%d failed checks in the engine runs:\n  - %s\n", len(failed), strings.Join(failed, "\n  - "))
		writeReport(s, "failed.txt", text)
		t.Log("\n" + text)
	}
	t.Logf("interop suite took %s (report in %s)", took, s.work)
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}
