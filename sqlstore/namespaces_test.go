package sqlstore_test

import (
	"context"
	"encoding/hex"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tqscavenger/tqscavenger/internal/fixture"
	"github.com/tqscavenger/tqscavenger/internal/testdb"
	"github.com/tqscavenger/tqscavenger/sqlstore"
	"github.com/tqscavenger/tqscavenger/store"
)

// TestNamespacesFixture: the namespaces of a real dev server's database
// are read with their ids, as Temporal wrote them.
func TestNamespacesFixture(t *testing.T) {
	ctx := context.Background()
	db, err := sqlstore.Open(ctx, "sqlite:"+fixture.Path(t, "temporal-1.32-aged72h"), sqlstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	got, err := db.Namespaces(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"default 01a22c88-cc61-7e51-8943-ea4d7b47625a", "temporal-system 32049b68-7872-4094-8e63-d0dd59896a83"}
	if s := nsStrings(got); !slices.Equal(s, want) {
		t.Errorf("namespaces = %q, want %q", s, want)
	}
}

// TestNamespacesEngines: every engine reads Temporal's namespaces table
// (its own column types: BYTEA, BINARY(16)), a deleted namespace's renamed
// row among them; a database without the table says so with
// store.ErrNoNamespaceTable, so that a name is refused with "give the id"
// rather than a driver's message.
func TestNamespacesEngines(t *testing.T) {
	for _, e := range testdb.Engines {
		t.Run(string(e), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db := testdb.Open(t, e)
			if _, err := db.Namespaces(ctx); !errors.Is(err, store.ErrNoNamespaceTable) {
				t.Fatalf("without a namespaces table: err = %v, want ErrNoNamespaceTable", err)
			}
			testdb.CreateHistoryTables(t, db)
			for id, name := range map[string]string{
				"7c1a9e06-0f3b-4d2e-9a55-1b2c3d4e5f60": "orders",
				"0b8d2c1e-3a4f-4e5d-8c6b-7a8f9e0d1c2b": "billing-deleted-0b8d2",
				"32049b68-7872-4094-8e63-d0dd59896a83": "temporal-system",
			} {
				testdb.InsertNamespace(t, db, ns(id), name, time.Hour, false)
			}
			got, err := db.Namespaces(ctx)
			if err != nil {
				t.Fatal(err)
			}
			want := []string{
				"billing-deleted-0b8d2 0b8d2c1e-3a4f-4e5d-8c6b-7a8f9e0d1c2b",
				"orders 7c1a9e06-0f3b-4d2e-9a55-1b2c3d4e5f60",
				"temporal-system 32049b68-7872-4094-8e63-d0dd59896a83",
			}
			if s := nsStrings(got); !slices.Equal(s, want) {
				t.Errorf("namespaces = %q, want %q", s, want)
			}
		})
	}
}

// ns is the id of a textual UUID (package wire's job, which sqlstore's
// tests do not import: the store moves bytes).
func ns(s string) (id [16]byte) {
	b, err := hex.DecodeString(strings.ReplaceAll(s, "-", ""))
	if err != nil || copy(id[:], b) != 16 {
		panic("bad uuid " + s)
	}
	return id
}

func uuid(id [16]byte) string {
	h := hex.EncodeToString(id[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

func nsStrings(all []store.NamespaceRow) []string {
	var out []string
	for _, n := range all {
		out = append(out, n.Name+" "+uuid(n.ID))
	}
	slices.Sort(out)
	return out
}
