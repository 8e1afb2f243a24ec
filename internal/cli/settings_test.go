package cli

import (
	"reflect"
	"testing"

	"github.com/spf13/pflag"
)

// TestPassSettings: every row of passSettings binds its own field of
// scavengeFlags, of a type register takes, and every field of
// scavengeFlags that holds a setting has a row; the facts of each row are
// on its registered flag.
func TestPassSettings(t *testing.T) {
	var f scavengeFlags
	fields := map[uintptr]string{}
	names := map[string]bool{}
	for _, s := range passSettings {
		if names[s.flag] {
			t.Errorf("--%s: two rows", s.flag)
		}
		names[s.flag] = true
		v := reflect.ValueOf(s.bind(&f))
		if v.Kind() != reflect.Pointer {
			t.Fatalf("--%s: bind returns %s, not a pointer", s.flag, v.Kind())
		}
		if other, ok := fields[v.Pointer()]; ok {
			t.Errorf("--%s and --%s bind the same field", s.flag, other)
		}
		fields[v.Pointer()] = s.flag
		if s.zeroDefault && s.effective == nil {
			t.Errorf("--%s: 0 means the default, yet the row says no value a pass uses", s.flag)
		}
		if s.group != groupScope && s.group != groupPace {
			t.Errorf("--%s: group %q", s.flag, s.group)
		}
	}
	// Every setting field of scavengeFlags (the closed rule's through
	// its struct) is bound by a row.
	var walk func(v reflect.Value, path string)
	walk = func(v reflect.Value, path string) {
		for i := 0; i < v.NumField(); i++ {
			fv, ft := v.Field(i), v.Type().Field(i)
			if ft.Name == "knobs" {
				continue // scavenger.Pace: rows bind the fields a flag sets; the rest keep their defaults
			}
			if ft.Type.Kind() == reflect.Struct && ft.Type != reflect.TypeOf(multiFlag{}) {
				walk(fv, path+ft.Name+".")
				continue
			}
			if _, ok := fields[fv.Addr().Pointer()]; !ok {
				t.Errorf("scavengeFlags.%s%s: no row of passSettings binds it", path, ft.Name)
			}
		}
	}
	walk(reflect.ValueOf(&f).Elem(), "")

	fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
	g := newFlagGroups(fs)
	f.register(g)
	g.done()
	for _, s := range passSettings {
		fl := fs.Lookup(s.flag)
		if fl == nil {
			t.Fatalf("--%s: not registered", s.flag)
		}
		if capOf(fl) != s.max {
			t.Errorf("--%s: cap %g, row %g", s.flag, capOf(fl), s.max)
		}
		if (annotation(fl, zeroDefaultKey) != "") != s.zeroDefault {
			t.Errorf("--%s: zero-default annotation disagrees with its row", s.flag)
		}
		if annotation(fl, scheduleKey) != s.schedule || annotation(fl, notScheduledKey) != s.notScheduled {
			t.Errorf("--%s: schedule annotations disagree with its row", s.flag)
		}
		if fl.DefValue != s.value && !(s.value == "" && (fl.DefValue == "0" || fl.DefValue == "false" || fl.DefValue == "")) {
			t.Errorf("--%s: default %q, row %q", s.flag, fl.DefValue, s.value)
		}
		if fl.Hidden != (s.deprecated != "") {
			t.Errorf("--%s: hidden %t, deprecated %q", s.flag, fl.Hidden, s.deprecated)
		}
	}
}
