package scavenger_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/tqscavenger/tqscavenger/scavenger"
)

// countsOf returns Counts with field i set to k*(i+1), so that every
// field has a value of its own.
func countsOf(k int64) scavenger.Counts {
	var c scavenger.Counts
	v := reflect.ValueOf(&c).Elem()
	for i := range v.NumField() {
		v.Field(i).SetInt(k * int64(i+1))
	}
	return c
}

// TestCountsAdd: Add sums every count, a new one too.
func TestCountsAdd(t *testing.T) {
	for _, tt := range []struct {
		name string
		c, o scavenger.Counts
		want scavenger.Counts
	}{
		{"zero", scavenger.Counts{}, scavenger.Counts{}, scavenger.Counts{}},
		{"to zero", scavenger.Counts{}, countsOf(2), countsOf(2)},
		{"zero to", countsOf(2), scavenger.Counts{}, countsOf(2)},
		{"sum", countsOf(1), countsOf(2), countsOf(3)},
	} {
		c := tt.c
		c.Add(tt.o)
		if c != tt.want {
			t.Errorf("%s: %+v.Add(%+v) = %+v, want %+v", tt.name, tt.c, tt.o, c, tt.want)
		}
	}
}

// TestCountsJSONNames: every count has a JSON name of its own (what
// reads Counts by its tags, run's --output json, needs one).
func TestCountsJSONNames(t *testing.T) {
	seen := map[string]string{}
	ty := reflect.TypeFor[scavenger.Counts]()
	for i := range ty.NumField() {
		f := ty.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" || name == "-" {
			t.Errorf("%s: no JSON name", f.Name)
		} else if other, dup := seen[name]; dup {
			t.Errorf("%s and %s: both %q", other, f.Name, name)
		}
		seen[name] = f.Name
		if f.Type.Kind() != reflect.Int64 {
			t.Errorf("%s is a %s: counts are int64", f.Name, f.Type)
		}
	}
}
