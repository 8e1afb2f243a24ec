package storetest

import (
	"testing"
)

// TestListKeysOrder checks the fixture itself: listKeys must be in the
// primary-key order the listing tests expect of every store.
func TestListKeysOrder(t *testing.T) {
	for i := 1; i < len(listKeys); i++ {
		if !listKeys[i-1].Less(listKeys[i]) {
			t.Errorf("listKeys[%d] = %s does not sort before listKeys[%d] = %s", i-1, listKeys[i-1], i, listKeys[i])
		}
	}
}
