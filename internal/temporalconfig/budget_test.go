package temporalconfig

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestTemplateBuildBudget: issue 39's finding 5. What a template builds
// is bounded, not only what it writes: each function that makes a string
// is refused before it runs past maxBuiltBytes in all (a chain of printf
// variables, each ten times the last, went to 2 GB; one printf of wide
// verbs builds 60 MB at once), a command takes at most maxArgs
// arguments, and evaluation stops at maxEvalTime. Templates as Temporal
// ships them (print, lower, printf of a few bytes) still expand.
//
// Invariant: refused with a boundError naming what, before it is built.
func TestTemplateBuildBudget(t *testing.T) {
	head := "# enable-template\npersistence:\n  defaultStore: d\n  datastores:\n    d:\n      sql:\n        pluginName: sqlite\n"
	chain := `{{ $a0 := "xxxxxxxxxx" }}`
	for i := 1; i <= 11; i++ {
		chain += "{{ $a" + strconv.Itoa(i) + " := printf \"" + strings.Repeat("%s", 10) + "\"" + strings.Repeat(" $a"+strconv.Itoa(i-1), 10) + " }}"
	}
	t.Setenv("TQS_TC_BIG", strings.Repeat("B", 100<<10))
	for _, c := range []struct {
		name, db string
		says     string // "": expands to want
		want     string
	}{
		{"printf chain", `"` + chain + `x"`, "would build more than", ""},
		{"print chain", `"{{ $a := print .Env.TQS_TC_BIG .Env.TQS_TC_BIG }}{{ $b := print $a $a }}x"`, "would build more than", ""},
		{"printf wide", `"{{ printf "%999999d%999999d" 1 2 }}"`, "width or precision over 1024", ""},
		{"printf star", `"{{ printf "%*d" 999999 2 }}"`, "(*) is not supported", ""},
		{"printf arg index", `"{{ $b := .Env.TQS_TC_BIG }}{{ $x := printf "%[1]s%[1]s%[1]s" $b }}"`, "would build more than", ""},
		{"lower of much", `"{{ $b := .Env.TQS_TC_BIG }}{{ $x := lower (print $b $b) }}{{ $y := upper $x }}"`, "would build more than", ""},
		{"js escaped", `"{{ $x := js .Env.TQS_TC_BIG }}"`, "would build more than", ""},
		{"many arguments", `"{{ eq 1` + strings.Repeat(" 1", maxArgs+1) + ` }}"`, "more than 64 arguments", ""},
		{"print", `"{{ print "db" "-" 1 }}"`, "", "db-1"},
		{"printf", `"{{ printf "%s-%03d" "db" 7 }}"`, "", "db-007"},
		{"lower", `"{{ "DB" | lower }}"`, "", "db"},
		{"urlquery", `"{{ urlquery "a b" }}"`, "", "a+b"},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "temporal.yaml")
			if err := os.WriteFile(path, []byte(head+"        databaseName: "+c.db+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			cfg, err := Load(path)
			if c.says == "" {
				if err != nil {
					t.Fatal(err)
				}
				if s, err := cfg.Store(""); err != nil || s.DatabaseName != c.want {
					t.Errorf("database %q (%v), want %q", s.DatabaseName, err, c.want)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.says) {
				t.Fatalf("error %v, want one saying %q", err, c.says)
			}
			if strings.Contains(err.Error(), "BBBB") {
				t.Errorf("the error quotes a value: %.200s", err)
			}
		})
	}
}

// TestTemplateDeadline: a template past maxEvalTime stops at its next
// function call or write, with an error that says so (the clock is not
// raced: the deadline is set in the past).
func TestTemplateDeadline(t *testing.T) {
	saved := maxEvalTime
	maxEvalTime = -1
	defer func() { maxEvalTime = saved }()
	for _, tpl := range []string{`{{ print "x" }}`, `text only`, `{{ default .Env.NOPE "x" }}`} {
		_, err := expand("t.yaml", []byte(tpl), nil)
		var be boundError
		if !errors.As(err, &be) || !strings.Contains(err.Error(), "took more than") {
			t.Errorf("%s: %v, want the deadline's error", tpl, err)
		}
	}
}
