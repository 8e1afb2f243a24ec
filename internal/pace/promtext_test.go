package pace

import (
	"strings"
	"testing"
)

// TestPersistenceLatencyLines: the stream parser reads what the
// Prometheus parser read of the text format, for the series it keeps:
// labels in any order and escaped, a timestamp, CRLF; a family that is no
// histogram (a summary, or untyped: its _sum is a family of its own) is
// not read; a malformed line of a series read is an error.
func TestPersistenceLatencyLines(t *testing.T) {
	const typ = "# TYPE persistence_latency histogram\n"
	for _, c := range []struct {
		name, text string
		sum        float64
		count      uint64
		found      bool
		err        string
	}{
		{"plain", typ + "persistence_latency_sum{operation=\"GetTasks\"} 1.5\npersistence_latency_count{operation=\"GetTasks\"} 3\n", 1.5, 3, true, ""},
		{"labels around, escaped, timestamp, CRLF", typ + "persistence_latency_sum{a=\"x\\\"}\\\\\",operation=\"CreateTasks\" , z=\"\\n\"} 2 1700000000000\r\n", 2, 0, true, ""},
		{"other operation", typ + "persistence_latency_sum{operation=\"ListNamespaces\"} 9\n", 0, 0, false, ""},
		{"milliseconds", "# TYPE persistence_latency_milliseconds histogram\npersistence_latency_milliseconds_sum{operation=\"GetTasks\"} 1500\n", 1.5, 0, true, ""},
		{"summary", "# TYPE persistence_latency summary\npersistence_latency_sum{operation=\"GetTasks\"} 1.5\n", 0, 0, false, ""},
		{"untyped", "persistence_latency_sum{operation=\"GetTasks\"} 1.5\n", 0, 0, false, ""},
		{"no end of file newline", typ + "persistence_latency_count{operation=\"GetTasks\"} 7", 0, 7, true, ""},
		{"long other line", typ + "x{y=\"" + strings.Repeat("z", 2*maxScrapeLine) + "\"} 1\npersistence_latency_count{operation=\"GetTasks\"} 7\n", 0, 7, true, ""},
		{"long line of the series", typ + "persistence_latency_count{operation=\"GetTasks\",y=\"" + strings.Repeat("z", 2*maxScrapeLine) + "\"} 1\n", 0, 0, false, "longer than"},
		{"bad value", typ + "persistence_latency_count{operation=\"GetTasks\"} many\n", 0, 0, false, "not a value"},
		{"unclosed label", typ + "persistence_latency_count{operation=\"GetTasks} 1\n", 0, 0, false, "not closed"},
	} {
		t.Run(c.name, func(t *testing.T) {
			sum, count, found, err := persistenceLatency(strings.NewReader(c.text))
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Errorf("err %v, want one saying %q", err, c.err)
				}
				return
			}
			if err != nil || sum != c.sum || count != c.count || found != c.found {
				t.Errorf("sum %g count %d found %v (%v), want %g, %d, %v", sum, count, found, err, c.sum, c.count, c.found)
			}
		})
	}
}
