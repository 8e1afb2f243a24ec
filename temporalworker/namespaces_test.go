package temporalworker

import (
	"errors"
	"testing"
	"time"

	"github.com/tqscavenger/tqscavenger/scavenger"
)

// TestDescriptionRefusesNamespaceNames: a pass description carries
// namespace ids; one with names (written by hand, or by a build that did
// not resolve them) is bad input, never a pass over every namespace.
func TestDescriptionRefusesNamespaceNames(t *testing.T) {
	d := Describe(scavenger.Config{Rules: scavenger.Rules{NamespaceNames: []string{"orders"}}}, time.Time{}, 1, "sqlite:1:tasks.db")
	if err := d.Validate(); !errors.Is(err, ErrBadDescription) {
		t.Fatalf("Validate = %v, want ErrBadDescription", err)
	}
	if _, err := d.Config(0); err == nil {
		t.Fatal("Config(0) of a description with namespace names: no error")
	}
}
