//go:build !tqs_notemporal

package cli

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/tqscavenger/tqscavenger/scavenger"
	"github.com/tqscavenger/tqscavenger/temporalworker"
)

// TestScheduleUpdateMerges: schedule update takes from the new
// description only the settings some layer set, and keeps the others from
// the schedule (today's build replaced the whole pass: --past-live-head and
// a rate limit not repeated fell back to their defaults).
func TestScheduleUpdateMerges(t *testing.T) {
	old := temporalworker.ScheduleSpec{ID: "tqs", TaskQueue: "q1", Every: time.Hour, Jitter: time.Minute,
		Pass: temporalworker.PassDescription{DatabaseIdentity: "postgres:db1", Partitions: 3, Rules: scavenger.Rules{PastLiveHead: true, Grace: 72 * time.Hour},
			Pace: scavenger.Pace{MaxDeletesPerSecond: 500}, Namespaces: []string{"ns-a"}, MaxAttempts: 4}}
	given := temporalworker.ScheduleSpec{ID: "tqs", TaskQueue: temporalworker.DefaultTaskQueue, Every: temporalworker.DefaultEvery, Jitter: temporalworker.DefaultJitter,
		Pass: temporalworker.PassDescription{Partitions: 5, Rules: scavenger.Rules{Grace: 96 * time.Hour}, MaxAttempts: temporalworker.DefaultMaxAttempts}}
	for _, tc := range []struct {
		name    string
		set     []string
		want    func(s *temporalworker.ScheduleSpec)
		changed []string
	}{
		{"nothing given", nil, func(*temporalworker.ScheduleSpec) {}, nil},
		{"grace and partitions", []string{"grace", "partitions"}, func(s *temporalworker.ScheduleSpec) {
			s.Pass.Grace, s.Pass.Partitions = 96*time.Hour, 5
		}, []string{"grace", "partitions"}},
		{"a rule turned off", []string{"past-live-head"}, func(s *temporalworker.ScheduleSpec) { s.Pass.PastLiveHead = false }, []string{"past-live-head"}},
		{"interval", []string{"every"}, func(s *temporalworker.ScheduleSpec) { s.Every = temporalworker.DefaultEvery }, []string{"every"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := old
			want.Pass.Namespaces = []string{"ns-a"}
			tc.want(&want)
			set := map[string]bool{}
			for _, n := range tc.set {
				set[n] = true
			}
			got, changed := mergeSchedule(old, given, updatePaths(), func(n string) bool { return set[n] })
			if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(changed, tc.changed) {
				t.Errorf("merged %+v (changed %v)\nwant   %+v (changed %v)", got, changed, want, tc.changed)
			}
		})
	}
	// A database identity read from the connection flags counts as set.
	g := given
	g.Pass.DatabaseIdentity = "postgres:db2"
	if got, changed := mergeSchedule(old, g, updatePaths(), func(string) bool { return false }); got.Pass.DatabaseIdentity != "postgres:db2" || !reflect.DeepEqual(changed, []string{"database-identity"}) {
		t.Errorf("identity: %s (changed %v)", got.Pass.DatabaseIdentity, changed)
	}
}

// updateFlags returns schedule update's flag set.
func updateFlags() (*pflag.FlagSet, *flagGroups) {
	fs := pflag.NewFlagSet("update", pflag.ContinueOnError)
	g := newFlagGroups(fs)
	scheduleWriteFlags("update")(g)
	g.done()
	return fs, g
}

// updatePaths returns the settings schedule update merges.
func updatePaths() map[string]string {
	fs, _ := updateFlags()
	return scheduleSettings(fs)
}

// TestScheduleUpdateCoversEveryFlag: every flag of schedule update that
// describes the schedule or its pass is one update merges, so that no
// flag given to update is silently dropped; a pass setting a schedule
// does not carry says what to do instead, and is hidden.
func TestScheduleUpdateCoversEveryFlag(t *testing.T) {
	fs, g := updateFlags()
	paths := scheduleSettings(fs)
	notPass := map[string]bool{"schedule-id": true, "paused": true, "replace": true}
	for _, set := range []*pflag.FlagSet{g.Scope, g.Pace, g.Schedule} {
		set.VisitAll(func(f *pflag.Flag) {
			if instead := annotation(f, notScheduledKey); instead != "" {
				if !f.Hidden {
					t.Errorf("--%s: not carried by a schedule, yet shown in its help", f.Name)
				}
				return
			}
			if notPass[f.Name] {
				return
			}
			if _, ok := paths[f.Name]; !ok {
				t.Errorf("--%s: schedule update does not merge it", f.Name)
			}
		})
	}
	if _, ok := paths["temporal-task-queue"]; !ok {
		t.Error("--temporal-task-queue: schedule update does not merge it")
	}
	for _, s := range passSettings {
		if (s.schedule == "") == (s.notScheduled == "") {
			t.Errorf("--%s: a pass setting names either the schedule field that carries it or why none does", s.flag)
		}
	}
}

// TestScheduleSettingsNameFields: every flag's path in scheduleSettings
// names a settable field of the spec, the one its flag sets: a spec that
// differs from another in that field alone is made equal to it by
// copySetting, and one that differs in no field is left as it was.
func TestScheduleSettingsNameFields(t *testing.T) {
	for name, path := range updatePaths() {
		v := reflect.ValueOf(&temporalworker.ScheduleSpec{}).Elem()
		for _, f := range strings.Split(path, ".") {
			if v = v.FieldByName(f); !v.IsValid() {
				t.Fatalf("--%s: %s names no field of ScheduleSpec", name, path)
			}
		}
		if !v.CanSet() {
			t.Fatalf("--%s: %s cannot be set", name, path)
		}
		var src, dst temporalworker.ScheduleSpec
		f := reflect.ValueOf(&src).Elem()
		for _, n := range strings.Split(path, ".") {
			f = f.FieldByName(n)
		}
		f.Set(nonZero(t, f.Type()))
		copySetting(&dst, src, path)
		if !reflect.DeepEqual(dst, src) {
			t.Errorf("--%s: copying %s made %+v, want %+v", name, path, dst, src)
		}
	}
}

// nonZero returns a value of type typ that is not its zero value.
func nonZero(t *testing.T, typ reflect.Type) reflect.Value {
	v := reflect.New(typ).Elem()
	switch typ.Kind() {
	case reflect.String:
		v.SetString("x")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int64, reflect.Int32:
		v.SetInt(3)
	case reflect.Float64:
		v.SetFloat(1.5)
	case reflect.Slice:
		v = reflect.MakeSlice(typ, 1, 1)
		v.Index(0).Set(nonZero(t, typ.Elem()))
	case reflect.Uint8, reflect.Uint32:
		v.SetUint(2)
	case reflect.Array:
		v.Index(0).Set(nonZero(t, typ.Elem()))
	default:
		t.Fatalf("no non-zero value of %s", typ)
	}
	return v
}

// TestScheduleCarriesClosedRule: the closed-workflow rule's flags reach
// the worker's pass through the schedule's description (flags, Rules,
// PassDescription, its JSON in the schedule, the worker's Config), and
// schedule update keeps them unless its own flags change them. The live
// path (schedule create and update on a Temporal server, the worker's
// pass) is interop's TestClosedWorkflowsLive.
func TestScheduleCarriesClosedRule(t *testing.T) {
	describe := func(args ...string) temporalworker.PassDescription {
		t.Helper()
		fs := newFlagSet("schedule create")
		g := newFlagGroups(fs)
		var sf scavengeFlags
		sf.register(g)
		g.done()
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		cfg, err := sf.config()
		if err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(temporalworker.Describe(cfg, time.Time{}, 1, "db-1"))
		if err != nil {
			t.Fatal(err)
		}
		var d temporalworker.PassDescription
		if err := json.Unmarshal(b, &d); err != nil {
			t.Fatal(err)
		}
		return d
	}
	on := describe("--closed-workflows", "--closed-global", "--closed-cluster", "east")
	c, err := on.Config(0)
	if err != nil {
		t.Fatal(err)
	}
	if !c.ClosedWorkflows || !c.ClosedWorkflowsGlobal || c.ClusterName != "east" {
		t.Errorf("the worker's pass: closed %t, global %t, cluster %q; want on, on, east", c.ClosedWorkflows, c.ClosedWorkflowsGlobal, c.ClusterName)
	}
	// With the rule off the description's JSON has none of its fields:
	// schedules made before the rule stay what they were.
	if b, _ := json.Marshal(describe()); strings.Contains(string(b), "closed") || strings.Contains(string(b), "cluster") {
		t.Errorf("a description without the rule: %s", b)
	}
	old := temporalworker.ScheduleSpec{ID: "tqs", Pass: on}
	given := temporalworker.ScheduleSpec{ID: "tqs", Pass: describe("--grace", "96h")}
	got, changed := mergeSchedule(old, given, updatePaths(), func(n string) bool { return n == "grace" })
	if !got.Pass.ClosedWorkflows || !got.Pass.ClosedWorkflowsGlobal || got.Pass.ClusterName != "east" || got.Pass.Grace != 96*time.Hour {
		t.Errorf("update --grace 96h: %+v (changed %v): the rule must be kept", got.Pass.Rules, changed)
	}
	off := map[string]bool{"closed-workflows": true, "closed-global": true, "closed-cluster": true}
	if got, _ := mergeSchedule(old, given, updatePaths(), func(n string) bool { return off[n] }); got.Pass.ClosedWorkflows || got.Pass.ClosedWorkflowsGlobal || got.Pass.ClusterName != "" {
		t.Errorf("update --closed-workflows=false: %+v, want the rule off", got.Pass.Rules)
	}
}
