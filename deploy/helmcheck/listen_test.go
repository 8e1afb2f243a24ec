package helmcheck

import (
	"strings"
	"testing"
)

// TestListenFollowsPort: the image listens on :9464 by its environment
// (TQSCAVENGER_LISTEN), which outranks the settings file the chart writes,
// so the chart sets the variable itself: serve listens on the Service's
// port, whatever it is, and the worker only where its settings say (the
// image's :9464 would open a port no Service names). With the listen
// address in the settings file, serve on port 8080 still listened on
// :9464 in the image and its Service and probes missed it.
func TestListenFollowsPort(t *testing.T) {
	for _, c := range []struct {
		name, vals, want string
	}{
		{"serve, port 8080", `serve: {service: {port: 8080}}`, "- name: TQSCAVENGER_LISTEN\n              value: \":8080\""},
		{"serve, default port", ``, "- name: TQSCAVENGER_LISTEN\n              value: \":9464\""},
		{"worker, none", `mode: worker
worker: {temporal: {address: "temporal:7233"}}`, "- name: TQSCAVENGER_LISTEN\n              value: \"\""},
		{"worker, its settings", `mode: worker
worker: {temporal: {address: "temporal:7233"}, settings: {listen: ":9465"}}`, "- name: TQSCAVENGER_LISTEN\n              value: \":9465\""},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, err := render(t, values(t, c.vals))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(out, c.want) {
				t.Errorf("want %q in the render:\n%s", c.want, out)
			}
			if strings.Contains(out, "listen: :") && !strings.Contains(c.vals, "listen") {
				t.Errorf("the settings file names a listen address the environment overrides:\n%s", out)
			}
		})
	}
}
