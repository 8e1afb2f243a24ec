package progress

import (
	"bytes"
	"io"
	"sync"
	"time"
)

// DefaultWidth is the width assumed for a terminal whose size is unknown.
const DefaultWidth = 80

// clearLine returns the cursor to the start of the line and erases it.
const clearLine = "\r\x1b[K"

// Line is one progress line at the bottom of a terminal. Everything else
// written to the terminal while the line is shown must go through Write
// (give it to the logger as its writer): Write clears the line, writes,
// and draws the line again below what it wrote, so no output is ever
// glued onto the line and no stale copy is left.
type Line struct {
	mu    sync.Mutex
	w     io.Writer
	width func() int
	// text is the line as shown, "" when none is.
	text string
	// shownAt is the width text was drawn at.
	shownAt int
	// midLine: the last Write did not end a line; the progress line waits
	// for the rest of it.
	midLine bool
	buf     bytes.Buffer
}

// NewLine returns a Line drawn on w, a terminal whose width in columns
// width returns (0 or less: unknown). width is read at every draw, so a
// resized terminal gets a line of its new width.
func NewLine(w io.Writer, width func() int) *Line {
	return &Line{w: w, width: width}
}

func (l *Line) columns() int {
	if n := l.width(); n > 0 {
		return n
	}
	return DefaultWidth
}

// erase appends to l.buf what erases the line shown. If the terminal
// narrowed since the line was drawn, a terminal that reflows (tmux, and
// most of today's) has wrapped it onto several rows: those are erased too.
func (l *Line) erase(cols int) {
	if l.text == "" {
		return
	}
	l.buf.WriteString(clearLine)
	if cols < l.shownAt {
		for rows := (len(l.text) - 1) / cols; rows > 0; rows-- {
			l.buf.WriteString("\x1b[1A\x1b[K")
		}
	}
	l.text = ""
}

// spare is the columns a line leaves free at its end: one, since a line
// that fills the last column would leave the cursor in the terminal's
// pending-wrap state, where the next character wraps; and two for the
// "^C" the terminal echoes on Ctrl-C, which would otherwise wrap its "C"
// onto a row of its own and leave the line, with its "^", above it.
const spare = 3

// draw appends to l.buf the line s, cut to the terminal's width less
// spare columns.
func (l *Line) draw(s string, cols int) {
	s = cut(s, cols-spare)
	l.erase(cols)
	if s == "" {
		return
	}
	l.buf.WriteString("\r")
	l.buf.WriteString(s)
	l.buf.WriteString("\x1b[K")
	l.text, l.shownAt = s, cols
}

func (l *Line) flush() error {
	_, err := l.w.Write(l.buf.Bytes())
	l.buf.Reset()
	return err
}

// Draw shows s as the progress line, in place of the one shown, cut to the
// terminal's width. text is called with the width in columns.
func (l *Line) Draw(text func(width int) string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.midLine {
		return nil
	}
	cols := l.columns()
	l.draw(text(cols-spare), cols)
	return l.flush()
}

// Clear erases the progress line, if one is shown.
func (l *Line) Clear() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.erase(l.columns())
	return l.flush()
}

// Write writes p to the terminal above the progress line: it erases the
// line, writes p, and draws the line again once p ends a line. It is safe
// for concurrent use, and writes p in one write to the terminal.
func (l *Line) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	cols := l.columns()
	text := l.text
	l.erase(cols)
	l.buf.Write(p)
	l.midLine = len(p) > 0 && p[len(p)-1] != '\n'
	if !l.midLine && text != "" {
		l.draw(text, cols)
	}
	if err := l.flush(); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Show draws the line text returns every interval until stop is called,
// and erases it then. text is called with the width the line may take.
func (l *Line) Show(interval time.Duration, text func(width int) string) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-done:
				l.Clear()
				return
			case <-t.C:
				l.Draw(text)
			}
		}
	}()
	return func() { close(done); <-finished }
}
