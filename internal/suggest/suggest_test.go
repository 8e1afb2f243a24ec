package suggest

import "testing"

func TestDistance(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"", "abc", 3},
		{"abc", "", 3},
		{"postgres", "postgres", 0},
		{"postgress", "postgres", 1},
		{"mysq", "mysql", 1},
		{"sqlte", "sqlite", 1},
		{"kitten", "sitting", 3},
		{"dry-run", "dryrun", 1},
		{"flaw", "lawn", 2},
	} {
		if got := Distance(c.a, c.b); got != c.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
		if got := Distance(c.b, c.a); got != c.want {
			t.Errorf("Distance(%q, %q) = %d, want %d (symmetric)", c.b, c.a, got, c.want)
		}
	}
}
