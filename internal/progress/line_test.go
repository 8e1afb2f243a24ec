package progress

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"testing"
)

func fixed(s string) func(int) string { return func(int) string { return s } }

func TestLineWriteClearsAndRedraws(t *testing.T) {
	var out bytes.Buffer
	width := 30
	l := NewLine(&out, func() int { return width })
	steps := []struct {
		name string
		do   func()
		want string
	}{
		// Three columns free: one so the cursor is never in the pending-wrap
		// state, two for the "^C" a terminal echoes on Ctrl-C, which must
		// land on the line's own row to be erased with it.
		{"draw, cut to width less three", func() { l.Draw(fixed(strings.Repeat("x", 40))) },
			"\r" + strings.Repeat("x", 27) + "\x1b[K"},
		{"a log line: line erased, log, line again", func() { fmt.Fprint(l, "log 1\n") },
			"\r\x1b[Klog 1\n\r" + strings.Repeat("x", 27) + "\x1b[K"},
		{"half a line: no redraw until it ends", func() { fmt.Fprint(l, "log 2 ") },
			"\r\x1b[Klog 2 "},
		{"no draw mid-line", func() { l.Draw(fixed("y")) }, ""},
		{"its end", func() { fmt.Fprint(l, "end\n") }, "end\n"},
		{"draw", func() { l.Draw(fixed("short")) }, "\rshort\x1b[K"},
		{"clear", func() { l.Clear() }, "\r\x1b[K"},
		{"clear again: nothing shown", func() { l.Clear() }, ""},
		{"log with nothing shown", func() { fmt.Fprint(l, "log 3\n") }, "log 3\n"},
		{"draw at 30", func() { l.Draw(fixed(strings.Repeat("z", 29))) }, "\r" + strings.Repeat("z", 27) + "\x1b[K"},
		// 27 columns reflowed onto 10-column rows: 3 rows to erase.
		{"narrowed to 10: the wrapped rows are erased", func() { width = 10; l.Clear() },
			"\r\x1b[K\x1b[1A\x1b[K\x1b[1A\x1b[K"},
	}
	for _, s := range steps {
		out.Reset()
		s.do()
		if got := out.String(); got != s.want {
			t.Errorf("%s:\n got %q\nwant %q", s.name, got, s.want)
		}
	}
}

// TestLineConcurrentWrites: log lines from many goroutines each come
// whole, each after the line is erased, never glued to it.
func TestLineConcurrentWrites(t *testing.T) {
	var out bytes.Buffer
	l := NewLine(&out, func() int { return 0 }) // unknown: DefaultWidth
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				if g == 0 {
					l.Draw(fixed(fmt.Sprintf("progress %d", i)))
				}
				fmt.Fprintf(l, "goroutine %d line %d\n", g, i)
			}
		}()
	}
	wg.Wait()
	l.Clear()
	// Strip the line's own sequences: what is left is whole log lines.
	s := out.String()
	for _, seq := range []string{"\x1b[K"} {
		s = strings.ReplaceAll(s, seq, "")
	}
	logs := 0
	for _, ln := range strings.Split(s, "\n") {
		ln = ln[strings.LastIndex(ln, "\r")+1:]
		if ln == "" {
			continue
		}
		if !strings.HasPrefix(ln, "goroutine ") {
			t.Fatalf("a log line glued or cut: %q", ln)
		}
		logs++
	}
	if logs != 8*50 {
		t.Errorf("%d log lines, want %d", logs, 8*50)
	}
}
