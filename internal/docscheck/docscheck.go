package docscheck

import (
	"bufio"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode"
)

// checker checks the links of Markdown files under root, reading each
// target's anchors once.
type checker struct {
	root    string
	anchors map[string]map[string]bool // by absolute path of a .md file
}

func newChecker(root string) *checker {
	return &checker{root: root, anchors: map[string]map[string]bool{}}
}

var (
	// inlineLink matches [text](target) and ![alt](target), with an
	// optional "title"; the text may hold one level of brackets.
	inlineLink = regexp.MustCompile(`!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^)\s>]*)>?(?:\s+"[^"]*")?\s*\)`)
	// refDef matches a reference definition: [label]: target.
	refDef = regexp.MustCompile(`^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s.*)?$`)
	// htmlAnchor matches <a name="x"> and id="x", anchors GitHub keeps.
	htmlAnchor = regexp.MustCompile(`<a\s+(?:name|id)="([^"]+)"`)
	// scheme matches a URL with a scheme (https:, mailto:): not relative.
	scheme = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*:`)
)

// check returns how many relative links file has and what is wrong
// with them.
func (c *checker) check(file string) (links int, problems []string, err error) {
	lines, err := readLines(file)
	if err != nil {
		return 0, nil, err
	}
	rel, _ := filepath.Rel(c.root, file)
	for _, l := range markdownLines(lines) {
		text := stripCodeSpans(l.text)
		var targets []string
		for _, m := range inlineLink.FindAllStringSubmatch(text, -1) {
			targets = append(targets, m[1])
		}
		if m := refDef.FindStringSubmatch(text); m != nil {
			targets = append(targets, m[1])
		}
		for _, target := range targets {
			if target == "" || scheme.MatchString(target) || strings.HasPrefix(target, "//") {
				continue
			}
			links++
			if p := c.resolve(file, target); p != "" {
				problems = append(problems, fmt.Sprintf("%s:%d: link %q: %s", rel, l.n, target, p))
			}
		}
	}
	return links, problems, nil
}

// resolve says what is wrong with target, a relative link in file; ""
// if nothing.
func (c *checker) resolve(file, target string) string {
	path, frag, _ := strings.Cut(target, "#")
	path, err := url.PathUnescape(path)
	if err != nil {
		return "bad escape: " + err.Error()
	}
	dest := file
	if path != "" {
		if strings.HasPrefix(path, "/") {
			dest = filepath.Join(c.root, filepath.FromSlash(path))
		} else {
			dest = filepath.Join(filepath.Dir(file), filepath.FromSlash(path))
		}
		if r, err := filepath.Rel(c.root, dest); err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) {
			return "points outside the repository"
		}
		if _, err := os.Stat(dest); err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return "no such file"
			}
			return err.Error()
		}
	}
	if frag == "" {
		return ""
	}
	if !strings.EqualFold(filepath.Ext(dest), ".md") {
		return "an #anchor into a file that is not Markdown"
	}
	anchors, err := c.anchorsOf(dest)
	if err != nil {
		return err.Error()
	}
	frag, err = url.PathUnescape(frag)
	if err != nil {
		return "bad escape: " + err.Error()
	}
	if !anchors[frag] {
		return fmt.Sprintf("no heading makes the anchor #%s (there are: %s)", frag, strings.Join(sortedKeys(anchors), ", "))
	}
	return ""
}

func (c *checker) anchorsOf(file string) (map[string]bool, error) {
	if a, ok := c.anchors[file]; ok {
		return a, nil
	}
	lines, err := readLines(file)
	if err != nil {
		return nil, err
	}
	a := anchors(lines)
	c.anchors[file] = a
	return a, nil
}

// anchors returns the anchors the headings of a Markdown file make, as
// GitHub makes them: each heading's slug, a repeated slug with -1, -2, …
// appended; plus the names of HTML anchors.
func anchors(lines []string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	for _, l := range markdownLines(lines) {
		for _, m := range htmlAnchor.FindAllStringSubmatch(l.text, -1) {
			out[m[1]] = true
		}
		h, ok := heading(l.text)
		if !ok {
			continue
		}
		s := slug(h)
		if n, dup := seen[s]; dup {
			seen[s] = n + 1
			s += "-" + strconv.Itoa(n+1)
		} else {
			seen[s] = 0
		}
		out[s] = true
	}
	return out
}

var atxHeading = regexp.MustCompile(`^ {0,3}#{1,6}(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$`)

// heading returns the text of an ATX heading line (# Title).
func heading(line string) (string, bool) {
	m := atxHeading.FindStringSubmatch(line)
	if m == nil {
		return "", false
	}
	return m[1], true
}

var (
	linkInHeading = regexp.MustCompile(`!?\[((?:[^\[\]]|\[[^\[\]]*\])*)\]\([^)]*\)`)
	htmlTag       = regexp.MustCompile(`<[^>]+>`)
)

// slug is GitHub's anchor of a heading's text: the text as rendered
// (link targets, HTML tags and code backticks dropped), in lower case,
// every character that is not a letter, digit, mark, '_', '-' or space
// dropped, and each space made a '-'.
func slug(h string) string {
	h = linkInHeading.ReplaceAllString(h, "$1")
	h = htmlTag.ReplaceAllString(h, "")
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// line is a line of Markdown outside code blocks, with its number.
type line struct {
	n    int
	text string
}

// markdownLines drops the lines of fenced code blocks (``` and ~~~),
// whose # comments are not headings and whose [x](y) are not links.
func markdownLines(lines []string) []line {
	var out []line
	fence := ""
	for i, l := range lines {
		t := strings.TrimLeft(l, " ")
		if fence != "" {
			if strings.HasPrefix(t, fence) && strings.Trim(t, fence[:1]+" \t") == "" {
				fence = ""
			}
			continue
		}
		if len(l)-len(t) <= 3 {
			if f := fenceOf(t); f != "" {
				fence = f
				continue
			}
		}
		out = append(out, line{i + 1, l})
	}
	return out
}

// fenceOf returns the fence that opens a code block on line t, or "".
func fenceOf(t string) string {
	for _, c := range []string{"`", "~"} {
		n := len(t) - len(strings.TrimLeft(t, c))
		if n >= 3 {
			return strings.Repeat(c, n)
		}
	}
	return ""
}

// stripCodeSpans blanks `code spans`, whose text is not Markdown.
func stripCodeSpans(s string) string {
	var b strings.Builder
	for {
		i := strings.IndexByte(s, '`')
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		n := len(s[i:]) - len(strings.TrimLeft(s[i:], "`"))
		delim := s[i : i+n]
		j := strings.Index(s[i+n:], delim)
		if j < 0 {
			b.WriteString(s)
			return b.String()
		}
		b.WriteString(s[:i])
		b.WriteString(strings.Repeat(" ", n+j+n))
		s = s[i+n+j+n:]
	}
}

func readLines(file string) ([]string, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	return lines, sc.Err()
}

func sortedKeys(m map[string]bool) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
