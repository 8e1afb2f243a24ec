package pace

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// Reading Temporal's persistence_latency out of a scrape in Prometheus's
// text format, for the "temporal" signal (temporal.go).

// temporalOperations are the persistence operations read.
var temporalOperations = map[string]bool{
	"CreateTasks": true, "GetTasks": true, "UpdateWorkflowExecution": true, "AppendHistoryNodes": true,
}

// The scrape is read as a stream, a line at a time, keeping only the
// lines of the series above: a Temporal service's endpoint can serve
// tens of MiB (a series per namespace, task queue and operation), and
// reading it whole, then parsing it into metric families, cost about
// 375 MB at the 64 MiB it was allowed (issue 39's finding 7), over the
// Helm chart's 256 Mi limit. Now a scrape holds one line of at most
// maxScrapeLine bytes, whatever the body: a longer line is skipped (no
// line of the series read is near it; one that is, is an error), and a
// body over maxScrapeBytes (counted after any gzip is undone) is an
// error, read no further.
const (
	maxScrapeBytes = 64 << 20
	maxScrapeLine  = 64 << 10
)

// latencyScale is the scale to seconds of each name persistence_latency
// may have, by its unit suffix.
var latencyScale = map[string]float64{"persistence_latency": 1, "persistence_latency_seconds": 1, "persistence_latency_milliseconds": 1e-3}

// persistenceLatency sums, over the text format r holds, the sums (in
// seconds) and counts of the persistence_latency histograms of the
// operations read: the _sum and _count lines of a family whose TYPE line
// says histogram (as the Prometheus parser reads them: a family without
// one is untyped, its _sum another family).
func persistenceLatency(r io.Reader) (sum float64, count uint64, found bool, err error) {
	lr := &io.LimitedReader{R: r, N: maxScrapeBytes + 1}
	br := bufio.NewReaderSize(lr, maxScrapeLine)
	histogram := map[string]bool{}
	for line := 1; ; line++ {
		b, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			// Too long to be a line read: skipped to its end, unless it
			// would be one.
			if _, _, ok := latencyLine(b); ok {
				return 0, 0, false, fmt.Errorf("line %d: a persistence_latency line longer than %d bytes", line, maxScrapeLine)
			}
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = br.ReadSlice('\n')
			}
			b = nil
		}
		if lr.N <= 0 {
			return 0, 0, false, fmt.Errorf("more than %d bytes: the endpoint serves more than a metrics page", maxScrapeBytes)
		}
		if len(b) > 0 {
			if ferr := readLatencyLine(b, histogram, &sum, &count, &found); ferr != nil {
				return 0, 0, false, fmt.Errorf("line %d: %w", line, ferr)
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return 0, 0, false, err
		}
	}
	return sum, count, found, nil
}

// latencyLine returns the family (persistence_latency…) and the part
// (_sum or _count) that the sample line b is of, if it is one of them.
func latencyLine(b []byte) (family, part string, ok bool) {
	end := bytes.IndexAny(b, "{ \t")
	if end < 0 {
		return "", "", false
	}
	name := b[:end]
	for _, p := range []string{"_sum", "_count"} {
		if f, cut := bytes.CutSuffix(name, []byte(p)); cut {
			if _, ok := latencyScale[string(f)]; ok {
				return string(f), p, true
			}
		}
	}
	return "", "", false
}

// readLatencyLine reads one line of the text format: a TYPE line of a
// persistence_latency family, or a _sum or _count sample of one of the
// operations read, added to sum or count (found then set). Every other
// line is skipped unparsed.
func readLatencyLine(b []byte, histogram map[string]bool, sum *float64, count *uint64, found *bool) error {
	b = bytes.TrimRight(b, "\r\n")
	if t, ok := bytes.CutPrefix(b, []byte("# TYPE ")); ok {
		if f := bytes.Fields(t); len(f) == 2 {
			if _, ok := latencyScale[string(f[0])]; ok {
				histogram[string(f[0])] = string(f[1]) == "histogram"
			}
		}
		return nil
	}
	family, part, ok := latencyLine(b)
	if !ok || !histogram[family] {
		return nil
	}
	rest := b[len(family)+len(part):]
	var op string
	if len(rest) > 0 && rest[0] == '{' {
		labels, after, err := parseLabels(rest[1:])
		if err != nil {
			return fmt.Errorf("%s%s: %w", family, part, err)
		}
		op, rest = labels["operation"], after
	}
	if !temporalOperations[op] {
		return nil
	}
	f := bytes.Fields(rest) // the value, and a timestamp
	if len(f) == 0 || len(f) > 2 {
		return fmt.Errorf("%s%s: not a sample line", family, part)
	}
	v, err := strconv.ParseFloat(string(f[0]), 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		return fmt.Errorf("%s%s: not a value", family, part)
	}
	if part == "_sum" {
		*sum += v * latencyScale[family]
	} else {
		*count += uint64(v)
	}
	*found = true
	return nil
}

// parseLabels parses the label pairs of b, after a sample line's '{',
// up to its '}': name="value", the value with the text format's escapes
// (\\, \", \n). It returns the labels and the rest of the line.
func parseLabels(b []byte) (map[string]string, []byte, error) {
	labels := map[string]string{}
	for {
		b = bytes.TrimLeft(b, " \t")
		if len(b) > 0 && b[0] == '}' {
			return labels, b[1:], nil
		}
		eq := bytes.IndexByte(b, '=')
		if eq <= 0 || eq+1 >= len(b) || b[eq+1] != '"' {
			return nil, nil, errors.New("malformed labels")
		}
		name := string(bytes.TrimSpace(b[:eq]))
		b = b[eq+2:]
		var v strings.Builder
		closed := false
		for i := 0; i < len(b); i++ {
			switch c := b[i]; {
			case c == '\\' && i+1 < len(b):
				i++
				if b[i] == 'n' {
					v.WriteByte('\n')
				} else {
					v.WriteByte(b[i])
				}
			case c == '"':
				b, closed = b[i+1:], true
			default:
				v.WriteByte(c)
			}
			if closed {
				break
			}
		}
		if !closed {
			return nil, nil, errors.New("malformed labels: a value not closed")
		}
		labels[name] = v.String()
		b = bytes.TrimLeft(b, " \t")
		if len(b) > 0 && b[0] == ',' {
			b = b[1:]
		}
	}
}
