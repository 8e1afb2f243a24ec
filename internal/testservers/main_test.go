package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestReport is issue 42's finding 7: go test ./... gave no sign that the
// PostgreSQL and MariaDB tests were skipped. Unset, each says SKIPPED and
// what to set; set, where they ran, the password masked.
func TestReport(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		want []string
		not  string
	}{
		{map[string]string{}, []string{"PostgreSQL tests: SKIPPED: TQS_TEST_POSTGRES is not set", "MariaDB/MySQL tests: SKIPPED: TQS_TEST_MYSQL is not set"}, "ran against"},
		{map[string]string{"TQS_TEST_POSTGRES": "postgres://u:Kq7xZ9vLm2@db:5432/test", "TQS_TEST_MYSQL": "mysql://root@127.0.0.1:3306/test"},
			[]string{"PostgreSQL tests: ran against postgres://u:xxxxx@db:5432/test", "MariaDB/MySQL tests: ran against mysql://root@127.0.0.1:3306/test"}, "Kq7xZ9vLm2"},
	} {
		var b bytes.Buffer
		report(&b, func(k string) string { return c.env[k] })
		for _, w := range c.want {
			if !strings.Contains(b.String(), w) {
				t.Errorf("env %v: want %q in:\n%s", c.env, w, b.String())
			}
		}
		if strings.Contains(b.String(), c.not) {
			t.Errorf("env %v: %q in:\n%s", c.env, c.not, b.String())
		}
	}
}
