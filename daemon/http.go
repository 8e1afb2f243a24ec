package daemon

import (
	"bytes"
	_ "embed"
	"fmt"
	"html/template"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/tqscavenger/tqscavenger/scavenger"
	"github.com/tqscavenger/tqscavenger/store"
)

// Handler serves the status page at /, the metrics at /metrics, liveness
// at /healthz and readiness at /readyz.
func (d *Daemon) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", d.serveStatus)
	mux.Handle("GET /metrics", promhttp.HandlerFor(d.reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /readyz", d.serveReady)
	return mux
}

func tableList(ts []store.Table) string {
	var s []string
	for _, t := range ts {
		s = append(s, t.String())
	}
	return strings.Join(s, ", ")
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

//go:embed status.html
var statusHTML string

var statusTmpl = template.Must(template.New("status").Funcs(template.FuncMap{
	"when":  formatTime,
	"dur":   formatDuration,
	"count": formatCount,
	"pct":   func(f float64) float64 { return 100 * f },
}).Parse(statusHTML))

// statusView is the status page's data.
type statusView struct {
	Status
	Now time.Time
	// Progress is the running pass's progress, as the command's progress
	// line shows it.
	Progress scavenger.Estimate
	// Rate is tasks deleted (in a dry run: it would delete) per second by
	// the running pass, with thousands separated as every count.
	Rate string
	// Left is the estimated time left of the running pass, or what stands
	// in for it: "after the listing" while queues are still listed.
	Left string
	// Refresh is the page's reload interval in seconds.
	Refresh int
}

func (d *Daemon) serveStatus(w http.ResponseWriter, r *http.Request) {
	v := statusView{Status: d.Status(), Now: d.clock.Now(), Refresh: 5}
	if c := v.Current; c != nil {
		d.estMu.Lock()
		e := d.est.Update(c.Stats)
		d.estMu.Unlock()
		v.Progress, v.Rate = e, formatCount(int64(e.Rate+0.5))
		switch {
		case e.HasLeft:
			v.Left = "~" + formatDuration(e.Left)
		case e.Finishing():
			v.Left = "finishing"
		default:
			v.Left = "after the listing"
		}
	}
	// Render to a buffer, so a template error is a 500, not half a page.
	var b bytes.Buffer
	if err := statusTmpl.Execute(&b, v); err != nil {
		d.log.Error("status page", "err", err)
		http.Error(w, "status page: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Write(b.Bytes())
}

func formatTime(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return t.UTC().Format("2006-01-02 15:04:05 UTC")
}

func formatDuration(d time.Duration) string {
	switch {
	case d < 0:
		return "0s"
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}

// formatCount writes n with thin spaces between thousands: 1 234 567.
func formatCount(n int64) string {
	s := fmt.Sprint(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteString("\u202f")
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// SetSettings are the settings given (by flag, environment or file):
// the table shows them; the defaults are folded away (DefaultSettings).
func (v statusView) SetSettings() []Setting { return v.settings(false) }

// DefaultSettings are the settings left at their default.
func (v statusView) DefaultSettings() []Setting { return v.settings(true) }

func (v statusView) settings(defaults bool) []Setting {
	var out []Setting
	for _, s := range v.Settings {
		if (s.Source == "default") == defaults {
			out = append(out, s)
		}
	}
	return out
}

// Until is the time from the page's now to t.
func (v statusView) Until(t time.Time) time.Duration { return t.Sub(v.Now) }

// Uptime is how long the daemon has been up.
func (v statusView) Uptime() time.Duration { return v.Now.Sub(v.Since) }
