package cli_test

import (
	"database/sql"
	"encoding/json"
	"strings"
	"testing"

	_ "modernc.org/sqlite"

	"github.com/tqscavenger/tqscavenger/internal/cli"
	"github.com/tqscavenger/tqscavenger/internal/fixture"
)

// The fixture's namespace ids, as its dev server registered them.
const (
	fixtureDefault = "01a22c88-cc61-7e51-8943-ea4d7b47625a"
	fixtureSystem  = "32049b68-7872-4094-8e63-d0dd59896a83"
)

// TestNamespaceByName: on a real dev server's database, --namespace
// default is the namespace of that name (the same pass as its UUID, less
// than the whole database); a name that is not there exits 2, listing the
// names present, without an internal package's name in the message; a
// deleted namespace (its row renamed by Temporal) is not found by its old
// name. run and schedule refuse an unknown name before any work (serve's
// start-up check is the same call, checkNamespaceNames).
func TestNamespaceByName(t *testing.T) {
	path := fixture.Path(t, "temporal-1.32-aged72h")
	would := func(args ...string) map[string]any {
		t.Helper()
		code, out, errOut := tqs(append([]string{"run", "--db", path, "--dry-run", "--output", "json", "--progress", "never", "--log-level", "warn"}, args...)...)
		var m map[string]any
		if err := json.Unmarshal([]byte(out), &m); code != cli.ExitOK || err != nil {
			t.Fatalf("run %v: exit %d, %v: %s%s", args, code, err, out, errOut)
		}
		return m["would_delete"].(map[string]any)
	}
	byName, byID, all := would("--namespace", "default"), would("--namespace", fixtureDefault), would()
	if byName["tasks"] != byID["tasks"] || byName["queues"] != byID["queues"] || byName["queues"] == all["queues"] {
		t.Errorf("would delete: by name %v, by id %v, whole database %v; want name = id, fewer queues than the whole", byName, byID, all)
	}
	for _, args := range [][]string{
		{"run", "--db", path, "--namespace", "nope"},
		{"schedule", "create", "--db", path, "--namespace", "nope", "--temporal-address", "127.0.0.1:1"},
	} {
		code, _, errOut := tqs(args...)
		if code != cli.ExitUsage || !strings.Contains(errOut, `"nope"`) || !strings.Contains(errOut, "default, temporal-system") || strings.Contains(errOut, "wire:") {
			t.Errorf("%s --namespace nope: exit %d, want %d naming it and listing the names present, no internal package's name:\n%s", args[0], code, cli.ExitUsage, errOut)
		}
	}

	raw, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec("UPDATE namespaces SET name = 'default-deleted-01a22' WHERE name = 'default'"); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	code, _, errOut := tqs("run", "--db", path, "--dry-run", "--namespace", "default")
	if code != cli.ExitUsage || !strings.Contains(errOut, "default-deleted-01a22, temporal-system") {
		t.Errorf("a deleted namespace's old name: exit %d, want %d listing its renamed row:\n%s", code, cli.ExitUsage, errOut)
	}
}

// TestNamespaceNamesNoTable: a database without Temporal's namespaces
// table (made by tqscavenger's own schema setup) takes ids, and refuses a
// name saying why and what to give instead.
func TestNamespaceNamesNoTable(t *testing.T) {
	path := seedFile(t)
	code, _, errOut := tqs("run", "--db", path, "--dry-run", "--namespace", "default", "--progress", "never")
	if code != cli.ExitUsage || !strings.Contains(errOut, "no namespaces table") || !strings.Contains(errOut, "UUID") {
		t.Errorf("exit %d, want %d saying there is no namespaces table and to give a UUID:\n%s", code, cli.ExitUsage, errOut)
	}
	if code, _, errOut := tqs("run", "--db", path, "--dry-run", "--namespace", fixtureSystem, "--progress", "never"); code != cli.ExitOK {
		t.Errorf("an id without a namespaces table: exit %d: %s", code, errOut)
	}
}

// TestReportNamespaceNames: report shows each namespace's name beside its
// id, in text and JSON.
func TestReportNamespaceNames(t *testing.T) {
	path := fixture.Path(t, "temporal-1.32-aged72h")
	code, out, errOut := tqs("report", "--db", path, "--modes=false")
	if code != cli.ExitOK || !strings.Contains(out, "default ("+fixtureDefault+")") || !strings.Contains(out, "temporal-system ("+fixtureSystem+")") {
		t.Errorf("report text (exit %d) does not show names beside ids:\n%s%s", code, out, errOut)
	}
	code, out, errOut = tqs("report", "--db", path, "--modes=false", "--json")
	var r struct {
		Names map[string]string `json:"namespace_names"`
	}
	if err := json.Unmarshal([]byte(out), &r); code != cli.ExitOK || err != nil {
		t.Fatalf("report --json: exit %d, %v: %s", code, err, errOut)
	}
	if r.Names[fixtureDefault] != "default" || r.Names[fixtureSystem] != "temporal-system" || len(r.Names) != 2 {
		t.Errorf("namespace_names = %v, want default and temporal-system by id", r.Names)
	}
}
