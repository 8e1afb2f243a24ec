package temporalworker

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tqscavenger/tqscavenger/scavenger"
	"github.com/tqscavenger/tqscavenger/store"
	"github.com/tqscavenger/tqscavenger/wire"
)

// writeGolden rewrites testdata/pass-descriptions.json instead of checking
// it. It was written by the build before the config split (issue 23), to
// prove that a description in that build's JSON (a Schedule created
// before, a workflow in flight during a redeploy) still decodes to the
// same pass, and that this build writes the same JSON.
var writeGolden = os.Getenv("TQS_WRITE_GOLDEN") != ""

// goldenDescription is one case of the golden file.
type goldenDescription struct {
	Description json.RawMessage `json:"description"`
	// Pass is what partition 0 of the description runs: renderPass.
	Pass string `json:"pass"`
}

// renderPass names, field by field, what a configuration runs: the
// settings digest (every setting of what is deleted) and the rest a
// description carries.
func renderPass(c scavenger.Config) string {
	now := ""
	if c.Now != nil {
		now = c.Now().UTC().Format(time.RFC3339Nano)
	}
	return fmt.Sprintf("settings=%s compat=%q grace=%s orphans=%q past_live_head=%t below_ack_level=%t dry_run=%t glob=%q protected=%q namespaces=%v tables=%v partition=%s workers=%d page=%d batch=%d per_job=%d deletes=%g statements=%g checkpoint=%s now=%s",
		scavenger.SettingsDigest(c), c.Compat, c.Grace, c.Orphans, c.PastLiveHead, c.BelowAckLevel, c.DryRun, c.QueueGlob, c.ProtectedPrefixes, c.Namespaces, c.Tables,
		c.Partition, c.Workers, c.ListPageSize, c.TaskBatchSize, c.TasksPerJob, c.MaxDeletesPerSecond, c.MaxStatementsPerSecond, c.CheckpointInterval, now)
}

func goldenConfigs() map[string]struct {
	cfg scavenger.Config
	now time.Time
	n   int
} {
	ns, _ := wire.ParseNamespaceID("32049b68-7872-4094-8e63-d0dd59896a83")
	type c = struct {
		cfg scavenger.Config
		now time.Time
		n   int
	}
	return map[string]c{
		"defaults":   {scavenger.Config{}, time.Time{}, 1},
		"temporal":   {scavenger.Config{Rules: scavenger.Rules{Compat: scavenger.CompatTemporal}}, time.Time{}, 4},
		"everything": {scavenger.Config{Rules: scavenger.Rules{PastLiveHead: true, BelowAckLevel: true, Orphans: scavenger.OrphansAll, Grace: 3 * time.Hour, UnsafeShortGrace: true, DryRun: true, QueueGlob: "orders-*", ProtectedPrefixes: []string{}, Namespaces: []wire.NamespaceID{ns}, Tables: []store.Table{store.V1, store.V2}}, Pace: scavenger.Pace{Workers: 3, ListPageSize: 50, TaskBatchSize: 100, TasksPerJob: 1000, MaxDeletesPerSecond: 800, MaxStatementsPerSecond: 40}}, now, 8},
		"protected":  {scavenger.Config{Rules: scavenger.Rules{ProtectedPrefixes: []string{"keep-", "temporal-sys-"}}}, time.Time{}, 2},
	}
}

// TestPassDescriptionGolden: the descriptions written before the config
// split decode to the same pass, and Describe still writes them byte for
// byte.
func TestPassDescriptionGolden(t *testing.T) {
	path := filepath.Join("testdata", "pass-descriptions.json")
	got := map[string]goldenDescription{}
	for name, g := range goldenConfigs() {
		d := Describe(g.cfg, g.now, g.n, "sqlite:golden")
		b, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := d.Config(0)
		if err != nil {
			t.Fatal(err)
		}
		got[name] = goldenDescription{Description: b, Pass: renderPass(cfg)}
	}
	if writeGolden {
		b, _ := json.MarshalIndent(got, "", "  ")
		if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var want map[string]goldenDescription
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatal(err)
	}
	if len(want) != len(got) {
		t.Errorf("%d golden descriptions, %d cases", len(want), len(got))
	}
	for name, w := range want {
		var d PassDescription
		if err := json.Unmarshal(w.Description, &d); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		cfg, err := d.Config(0)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if p := renderPass(cfg); p != w.Pass {
			t.Errorf("%s: the golden description decodes to\n%s\nwas\n%s", name, p, w.Pass)
		}
		var compact, gotJSON = mustCompact(t, w.Description), mustCompact(t, got[name].Description)
		if compact != gotJSON {
			t.Errorf("%s: Describe writes\n%s\nthe golden description is\n%s", name, gotJSON, compact)
		}
	}
}

func mustCompact(t *testing.T, b []byte) string {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	out, _ := json.Marshal(v)
	return string(out)
}

// TestPassDescriptionPace: a full-pace pass's description says so and runs
// at the full pace; a default (gentle) one writes no pace, so that its JSON
// is the golden file's; an unknown pace is a bad description.
func TestPassDescriptionPace(t *testing.T) {
	for _, c := range []struct {
		mode     scavenger.PaceMode
		json     string
		wantMode scavenger.PaceMode
	}{{"", "", scavenger.PaceGentle}, {scavenger.PaceGentle, "", scavenger.PaceGentle}, {scavenger.PaceFull, `"pace":"full"`, scavenger.PaceFull}} {
		d := Describe(scavenger.Config{Pace: scavenger.Pace{Mode: c.mode}}, time.Time{}, 1, "sqlite:pace")
		b, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(string(b), `"pace"`); got != (c.json != "") || (c.json != "" && !strings.Contains(string(b), c.json)) {
			t.Errorf("pace %q: description %s, want %q in it", c.mode, b, c.json)
		}
		var back PassDescription
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		cfg, err := back.Config(0)
		if err != nil {
			t.Fatal(err)
		}
		if got := cfg.WithDefaults().Mode; got != c.wantMode {
			t.Errorf("pace %q: the description runs at %q", c.mode, got)
		}
	}
	if err := (PassDescription{DatabaseIdentity: "sqlite:pace", Pace: scavenger.Pace{Mode: "fast"}}).Validate(); !errors.Is(err, ErrBadDescription) {
		t.Errorf("pace fast: %v, want ErrBadDescription", err)
	}
}
