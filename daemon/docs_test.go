package daemon_test

// docs/running.md's Metrics table held to what serve's /metrics exports:
// every metric family but go_* and process_* in it and nothing else, each
// with the labels it has, and the label values it lists exactly those
// emitted; the reasons it lists scavenger.Reasons (and the kept ones), the
// causes daemon.CauseSchema and scavenger's Cause constants.

import (
	"bufio"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tqscavenger/tqscavenger/daemon"
	"github.com/tqscavenger/tqscavenger/scavenger"
	"github.com/tqscavenger/tqscavenger/seed"
)

// runningDoc is docs/running.md, from this package's directory.
const runningDoc = "../docs/running.md"

// metricsHeading is the heading of the section whose table the test reads.
const metricsHeading = "## Metrics"

// docMetric is one metric a row of the Metrics table documents.
type docMetric struct {
	name string
	line int
	// labels are the row's labels; a label's values are nil where the row
	// lists none.
	labels map[string][]string
}

// docMetrics returns the metrics of path's Metrics table (columns metric,
// labels, meaning). A metric cell is a comma-separated list of names in
// backticks; a name starting with '_' is short for the first two
// '_'-separated parts of the last full name before it followed by it
// (`tqscavenger_pace_in_flight`, `_share` is tqscavenger_pace_share). A
// labels cell applies to every metric of its row and is
// `label`, `label`: `value`, `value`, ...: a label followed by ':' takes
// the names that follow, up to the next such label, as its values, so a
// label without values comes before those with; text in parentheses is
// commentary.
func docMetrics(t *testing.T, path string) []docMetric {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var (
		out    []docMetric
		in     bool // in the Metrics section
		table  int  // 0 before its table, 1 in it, 2 after it
		header bool // the header row was read
		fenced bool // in a fenced code block
		n      int
	)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "```") || strings.HasPrefix(line, "~~~") {
			fenced = !fenced
		}
		if fenced {
			continue
		}
		if strings.HasPrefix(line, "#") {
			if in {
				break
			}
			in = line == metricsHeading
			continue
		}
		if !in {
			continue
		}
		if !strings.HasPrefix(line, "|") {
			if table == 1 {
				table = 2
			}
			continue
		}
		if table == 2 {
			t.Fatalf("%s:%d: a second table under %q; the test reads one", path, n, metricsHeading)
		}
		table = 1
		cells := splitRow(line)
		switch {
		case !header:
			if got := strings.Join(cells, "|"); got != "metric|labels|meaning" {
				t.Fatalf("%s:%d: the Metrics table's header is %q, want metric|labels|meaning", path, n, got)
			}
			header = true
			continue
		case strings.Trim(line, "|-: ") == "":
			continue // the separator row
		case len(cells) != 3:
			t.Fatalf("%s:%d: %d cells, want 3 (metric, labels, meaning)", path, n, len(cells))
		}
		labels, err := parseLabels(cells[1])
		if err != nil {
			t.Fatalf("%s:%d: %v", path, n, err)
		}
		names, err := parseNames(cells[0])
		if err != nil {
			t.Fatalf("%s:%d: %v", path, n, err)
		}
		for _, name := range names {
			out = append(out, docMetric{name: name, line: n, labels: labels})
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(out) == 0 {
		t.Fatalf("%s: no table of metrics under %q", path, metricsHeading)
	}
	return out
}

// splitRow splits a table row into its trimmed cells; a '|' inside a code
// span is the cell's.
func splitRow(line string) []string {
	line = strings.TrimSuffix(strings.TrimPrefix(line, "|"), "|")
	var cells []string
	var b strings.Builder
	code := false
	for _, c := range line {
		switch {
		case c == '`':
			code = !code
		case c == '|' && !code:
			cells = append(cells, strings.TrimSpace(b.String()))
			b.Reset()
			continue
		}
		b.WriteRune(c)
	}
	return append(cells, strings.TrimSpace(b.String()))
}

// parseNames returns the full metric names of a metric cell.
func parseNames(cell string) ([]string, error) {
	var out []string
	prefix := ""
	for _, part := range strings.Split(cell, ",") {
		part = strings.TrimSpace(part)
		name, ok := codeSpan(part)
		if !ok {
			return nil, fmt.Errorf("metric cell %q: %q is not a name in backticks", cell, part)
		}
		if strings.HasPrefix(name, "_") {
			if prefix == "" {
				return nil, fmt.Errorf("metric cell %q: %q is short for a name, but no full name comes before it", cell, name)
			}
			name = prefix + name
		} else {
			p := strings.SplitN(name, "_", 3)
			if len(p) < 2 {
				return nil, fmt.Errorf("metric cell %q: %q has no '_'", cell, name)
			}
			prefix = p[0] + "_" + p[1]
		}
		out = append(out, name)
	}
	return out, nil
}

// codeSpan returns s without its backticks if s is one code span.
func codeSpan(s string) (string, bool) {
	if len(s) < 3 || s[0] != '`' || s[len(s)-1] != '`' || strings.Count(s, "`") != 2 {
		return "", false
	}
	return s[1 : len(s)-1], true
}

// parseLabels returns the labels of a labels cell and their values (nil
// where none are listed).
func parseLabels(cell string) (map[string][]string, error) {
	bad := func(why string) error {
		return fmt.Errorf("labels cell %q: %s; want `label`, `label`: `value`, `value`, ... (commentary in parentheses)", cell, why)
	}
	// Drop the commentary.
	var b strings.Builder
	depth := 0
	for _, c := range cell {
		switch {
		case c == '(':
			depth++
		case c == ')':
			depth--
			if depth < 0 {
				return nil, bad("unbalanced parentheses")
			}
		case depth == 0:
			b.WriteRune(c)
		}
	}
	if depth != 0 {
		return nil, bad("unbalanced parentheses")
	}
	s := b.String()
	labels := map[string][]string{}
	cur := "" // the label taking values, once one has
	for s = strings.TrimSpace(s); s != ""; s = strings.TrimSpace(s) {
		if s[0] != '`' {
			return nil, bad(fmt.Sprintf("%q is not in backticks", s))
		}
		end := strings.IndexByte(s[1:], '`')
		if end < 0 {
			return nil, bad("an unclosed backtick")
		}
		name := s[1 : end+1]
		s = strings.TrimSpace(s[end+2:])
		colon := strings.HasPrefix(s, ":")
		if colon {
			s = strings.TrimSpace(s[1:])
		}
		switch {
		case colon:
			if _, dup := labels[name]; dup {
				return nil, bad(fmt.Sprintf("label %q twice", name))
			}
			labels[name], cur = []string{}, name
		case cur != "":
			if slices.Contains(labels[cur], name) {
				return nil, bad(fmt.Sprintf("value %q twice", name))
			}
			labels[cur] = append(labels[cur], name)
		default:
			if _, dup := labels[name]; dup {
				return nil, bad(fmt.Sprintf("label %q twice", name))
			}
			labels[name] = nil
		}
		if rest, ok := strings.CutPrefix(s, ","); ok {
			s = rest
		} else if s != "" && !colon {
			return nil, bad(fmt.Sprintf("%q follows %q", s, name))
		}
	}
	for l, v := range labels {
		if v != nil && len(v) == 0 {
			return nil, bad(fmt.Sprintf("label %q: a ':' and no values", l))
		}
	}
	return labels, nil
}

// family is what /metrics exported of one metric family: its label names
// and, by label, every value a series had.
type family struct {
	labels map[string]map[string]bool
}

// gatherInto adds the families reg exports to fams.
func gatherInto(t *testing.T, fams map[string]*family, reg prometheus.Gatherer) {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		fam := fams[mf.GetName()]
		if fam == nil {
			fam = &family{labels: map[string]map[string]bool{}}
			fams[mf.GetName()] = fam
		}
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if fam.labels[lp.GetName()] == nil {
					fam.labels[lp.GetName()] = map[string]bool{}
				}
				fam.labels[lp.GetName()][lp.GetValue()] = true
			}
		}
	}
}

// exportedFamilies returns the families /metrics exports, go_* and
// process_* aside: those of a daemon before its first pass, after a
// completed pass, and of a daemon after a completed dry run, so that a
// series that only appears once a pass has run is in.
func exportedFamilies(t *testing.T) map[string]*family {
	t.Helper()
	fams := map[string]*family{}
	for _, dry := range []bool{false, true} {
		db := seeded(t, seed.Spec{Queues: 3, TasksPerQueue: 10, Expired: 0.5, NoExpiry: 0.5})
		clock := newFakeClock()
		cfg := daemon.Config{DB: db, RunAtStart: true, Clock: clock, Build: daemon.Build{Version: "v1.2.3", Revision: "abc123", GoVersion: "go1.26.8"}}
		cfg.Scavenger.Rules.DryRun = dry
		d := newDaemon(t, cfg)
		gatherInto(t, fams, d.Registry())
		stop := start(t, d)
		clock.waitTimers(t, 1) // the pass is over, the next one armed
		if ps := d.Passes(); len(ps) != 1 || ps[0].Outcome != daemon.Completed || ps[0].DryRun != dry {
			t.Fatalf("dry run %v: passes %+v, want one completed", dry, ps)
		}
		gatherInto(t, fams, d.Registry())
		if err := stop(); err != nil {
			t.Fatal(err)
		}
	}
	for name := range fams {
		if strings.HasPrefix(name, "go_") || strings.HasPrefix(name, "process_") {
			delete(fams, name)
		}
	}
	return fams
}

// TestDocsMetrics holds docs/running.md's Metrics table to the families
// serve exports.
func TestDocsMetrics(t *testing.T) {
	docs := docMetrics(t, runningDoc)
	fams := exportedFamilies(t)
	t.Run("families", func(t *testing.T) { checkFamilies(t, docs, fams) })
	t.Run("reasons and causes", func(t *testing.T) { checkReasonsAndCauses(t, docs, fams) })
}

// checkFamilies: the table lists exactly the metric families exported
// (go_* and process_* aside), each with its labels, and each label's
// values, where listed, are the values emitted. A label listed without
// values on one row is held to the values another row lists for a label
// of that name, if one does: `table` is listed once; build_info's labels,
// whose values are the build's, are listed on no row.
func checkFamilies(t *testing.T, docs []docMetric, fams map[string]*family) {

	// The lists of values each label name is given somewhere.
	listed := map[string][][]string{}
	for _, m := range docs {
		for l, v := range m.labels {
			if v != nil {
				listed[l] = append(listed[l], v)
			}
		}
	}
	documented := map[string]int{}
	for _, m := range docs {
		if line, dup := documented[m.name]; dup {
			t.Errorf("%s:%d: %s is documented again (first on line %d)", runningDoc, m.line, m.name, line)
			continue
		}
		documented[m.name] = m.line
		fam := fams[m.name]
		if fam == nil {
			t.Errorf("%s:%d: %s is in the Metrics table, but /metrics exports no such family", runningDoc, m.line, m.name)
			continue
		}
		if got, want := slices.Sorted(maps.Keys(m.labels)), slices.Sorted(maps.Keys(fam.labels)); !slices.Equal(got, want) {
			t.Errorf("%s:%d: %s: the table gives the labels %q, /metrics has %q", runningDoc, m.line, m.name, got, want)
			continue
		}
		for l, vals := range fam.labels {
			emitted := slices.Sorted(maps.Keys(vals))
			doc := m.labels[l]
			switch {
			case doc != nil:
				if got := slices.Sorted(slices.Values(doc)); !slices.Equal(got, emitted) {
					t.Errorf("%s:%d: %s: the table lists the %s values %q, /metrics emits %q", runningDoc, m.line, m.name, l, got, emitted)
				}
			case len(listed[l]) > 0:
				if !slices.ContainsFunc(listed[l], func(v []string) bool { return slices.Equal(slices.Sorted(slices.Values(v)), emitted) }) {
					t.Errorf("%s:%d: %s: %s is listed without values, and no row lists its values %q for it (it lists %q)", runningDoc, m.line, m.name, l, emitted, listed[l])
				}
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(fams)) {
		if _, ok := documented[name]; !ok {
			t.Errorf("/metrics exports %s, which %s's Metrics table does not list", name, runningDoc)
		}
	}
}

// checkReasonsAndCauses: a family emitting any scavenger.Reason emits
// them all and the table lists them all for it (checkFamilies holds every
// listed value to those emitted, so no other reason is listed and the
// kept ones, such as run_not_found, are the code's); a family with a
// cause label emits daemon.CauseSchema and every Cause scavenger
// declares, read from its source, and the table lists them.
func checkReasonsAndCauses(t *testing.T, docs []docMetric, fams map[string]*family) {
	reasons := make([]string, len(scavenger.Reasons))
	for i, r := range scavenger.Reasons {
		reasons[i] = string(r)
	}
	slices.Sort(reasons)
	causes := append(scavengerCauses(t), daemon.CauseSchema)
	slices.Sort(causes)

	deletions := 0
	for _, m := range docs {
		fam := fams[m.name]
		if fam == nil {
			continue // checkFamilies says so
		}
		if vals := fam.labels["reason"]; vals != nil && slices.ContainsFunc(reasons, func(r string) bool { return vals[r] }) {
			deletions++
			if got := slices.Sorted(maps.Keys(vals)); !slices.Equal(got, reasons) {
				t.Errorf("%s emits the reasons %q, want scavenger.Reasons %q", m.name, got, reasons)
			}
			if got := slices.Sorted(slices.Values(m.labels["reason"])); !slices.Equal(got, reasons) {
				t.Errorf("%s:%d: %s: the table lists the reasons %q, want scavenger.Reasons %q", runningDoc, m.line, m.name, got, reasons)
			}
		}
		if vals := fam.labels["cause"]; vals != nil {
			if got := slices.Sorted(maps.Keys(vals)); !slices.Equal(got, causes) {
				t.Errorf("%s emits the causes %q, want daemon.CauseSchema and scavenger's causes %q", m.name, got, causes)
			}
			if got := slices.Sorted(slices.Values(m.labels["cause"])); !slices.Equal(got, causes) {
				t.Errorf("%s:%d: %s: the table lists the causes %q, want %q", runningDoc, m.line, m.name, got, causes)
			}
		}
	}
	if deletions == 0 {
		t.Errorf("no family documented in %s emits scavenger.Reasons", runningDoc)
	}
}

// scavengerCauses returns the values of the constants of type Cause that
// package scavenger declares.
func scavengerCauses(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("../scavenger/*.go")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	fset := token.NewFileSet()
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, file, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "Cause" {
					continue
				}
				for i, v := range vs.Values {
					lit, ok := v.(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						t.Fatalf("%s: the Cause %s is not a string literal", fset.Position(v.Pos()), vs.Names[i])
					}
					s, err := strconv.Unquote(lit.Value)
					if err != nil {
						t.Fatal(err)
					}
					out = append(out, s)
				}
			}
		}
	}
	if len(out) == 0 {
		t.Fatal("package scavenger declares no Cause constants (../scavenger/*.go)")
	}
	return out
}

// TestDocsMetricsCells: the metric and labels cells read as docMetrics
// says, and a cell that does not follow the form is refused.
func TestDocsMetricsCells(t *testing.T) {
	names, err := parseNames("`tqscavenger_pace_in_flight`, `_in_flight_limit`, `_share`, `tqscavenger_jobs_deferred_total`, `_dropped_total`")
	want := []string{"tqscavenger_pace_in_flight", "tqscavenger_pace_in_flight_limit", "tqscavenger_pace_share", "tqscavenger_jobs_deferred_total", "tqscavenger_jobs_dropped_total"}
	if err != nil || !slices.Equal(names, want) {
		t.Errorf("parseNames: %q, %v; want %q", names, err, want)
	}
	for _, c := range []string{"`_share`", "tqscavenger_pace", "`tqscavenger_pace` and more"} {
		if _, err := parseNames(c); err == nil {
			t.Errorf("parseNames(%q): no error", c)
		}
	}
	for cell, want := range map[string]map[string][]string{
		"":                            {},
		"`table`":                     {"table": nil},
		"`table` (and more)":          {"table": nil},
		"`table`, `reason`: `a`, `b`": {"table": nil, "reason": {"a", "b"}},
		"`kind`: `transient` (retried), `permanent` (the job `failed`)": {"kind": {"transient", "permanent"}},
		"`a`: `x`, `b`: `y`, `z`": {"a": {"x"}, "b": {"y", "z"}},
	} {
		got, err := parseLabels(cell)
		if err != nil || !maps.EqualFunc(got, want, slices.Equal) || len(got) != len(want) {
			t.Errorf("parseLabels(%q) = %q, %v; want %q", cell, got, err, want)
		}
	}
	for _, c := range []string{"table", "`table` and", "`a`: `x`, `x`", "`a`, `a`", "`a`:", "`a` (", "`a`)", "`a"} {
		if got, err := parseLabels(c); err == nil {
			t.Errorf("parseLabels(%q) = %q, no error", c, got)
		}
	}
}
