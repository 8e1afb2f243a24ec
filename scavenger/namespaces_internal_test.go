package scavenger

import (
	"fmt"
	"strings"
	"testing"

	"github.com/tqscavenger/tqscavenger/store"
)

// TestUnknownNamespaceBounded: the names an unknown name's error lists
// are at most maxNamesListed, with how many more there are: a cluster of
// thousands of namespaces gets a one-line error.
func TestUnknownNamespaceBounded(t *testing.T) {
	var all []store.NamespaceRow
	for i := range 1000 {
		all = append(all, store.NamespaceRow{Name: fmt.Sprintf("team-%04d", i)})
	}
	msg := unknownNamespace("tean-0007", all).Error()
	if !strings.Contains(msg, `(did you mean "team-0007"?)`) || !strings.Contains(msg, "and 980 more") || strings.Count(msg, "team-") > maxNamesListed+1 {
		t.Errorf("error: %s", msg)
	}
}
