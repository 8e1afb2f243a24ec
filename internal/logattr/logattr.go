// Package logattr gives the command's JSON logs typed values: a duration
// is a number of seconds ("elapsed":0.0227, not 22700000 nanoseconds) and
// a list is an array of strings ("tables":["v2","v1"], not "[v2 v1]"), so
// a log pipeline can compare and sum them without parsing Go's formats.
// Keys and messages stay as the text logs have them.
package logattr

import (
	"encoding"
	"encoding/json"
	"fmt"
	"log/slog"
	"reflect"
	"time"
)

// JSON is a slog.HandlerOptions.ReplaceAttr for a slog.JSONHandler: it
// writes durations as seconds and lists of values that name themselves
// (fmt.Stringer) as arrays of their names.
func JSON(_ []string, a slog.Attr) slog.Attr {
	switch a.Value.Kind() {
	case slog.KindDuration:
		return slog.Float64(a.Key, a.Value.Duration().Seconds())
	case slog.KindAny:
		if v, ok := value(a.Value.Any()); ok {
			return slog.Any(a.Key, v)
		}
	}
	return a
}

// value returns the form of v that JSON should write, and whether it
// differs from v.
func value(v any) (any, bool) {
	switch x := v.(type) {
	case nil, error, json.Marshaler, encoding.TextMarshaler, []byte:
		// slog and encoding/json already write these as meant.
		return v, false
	case time.Duration:
		return x.Seconds(), true
	case fmt.Stringer:
		return x.String(), true
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Slice && rv.Kind() != reflect.Array {
		return v, false
	}
	out := make([]any, rv.Len())
	changed := false
	for i := range out {
		e, ok := value(rv.Index(i).Interface())
		out[i], changed = e, changed || ok
	}
	if !changed {
		return v, false
	}
	return out, true
}
