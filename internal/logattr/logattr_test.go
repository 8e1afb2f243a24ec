package logattr

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"reflect"
	"testing"
	"time"
)

type table int

func (t table) String() string { return [...]string{"", "v1", "v2"}[t] }

func TestJSON(t *testing.T) {
	var b bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&b, &slog.HandlerOptions{ReplaceAttr: JSON}))
	log.Info("pass completed",
		"elapsed", 22733306*time.Nanosecond,
		"tables", []table{2, 1},
		"table", table(1),
		"backoffs", []time.Duration{time.Second, 1500 * time.Millisecond},
		"names", []string{"a", "b"},
		"counts", []int{1, 2},
		"err", errors.New("boom"),
		"at", time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC),
		"n", 3,
		slog.Group("retry", "backoff", 250*time.Millisecond),
	)
	var got map[string]any
	if err := json.Unmarshal(b.Bytes(), &got); err != nil {
		t.Fatalf("%v: %s", err, b.String())
	}
	want := map[string]any{
		"msg":      "pass completed",
		"elapsed":  0.022733306,
		"tables":   []any{"v2", "v1"},
		"table":    "v1",
		"backoffs": []any{1.0, 1.5},
		"names":    []any{"a", "b"},
		"counts":   []any{1.0, 2.0},
		"err":      "boom",
		"at":       "2026-11-30T12:00:00Z",
		"n":        3.0,
		"retry":    map[string]any{"backoff": 0.25},
	}
	for k, w := range want {
		if !reflect.DeepEqual(got[k], w) {
			t.Errorf("%s = %#v, want %#v", k, got[k], w)
		}
	}
}
