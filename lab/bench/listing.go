package bench

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/tqscavenger/tqscavenger/sqlstore"
	"github.com/tqscavenger/tqscavenger/store"
)

// Listing is the cost of listing the queue table page by page with the
// store's keyset listing, as a pass does. A listing whose pages cost the
// same from the first to the last (Ratio near 1) makes a pass linear in
// the number of queues; Temporal's, which sorts the whole table for every
// page, makes it quadratic.
type Listing struct {
	PageSize, Pages int
	// First and Last are the median times of a page among the first and
	// the last tenth of the pages (at least one page each).
	First, Last time.Duration
	// Total is the time to list the whole table (the fastest of the
	// listings).
	Total time.Duration
}

// Ratio is Last ÷ First, or 0 when there are too few pages for the two
// tenths to be different pages.
func (l Listing) Ratio() float64 {
	if l.Pages < 2 || l.First <= 0 {
		return 0
	}
	return float64(l.Last) / float64(l.First)
}

// listingRuns is how many times the table is listed. Each page keeps its
// fastest time: on a shared machine a page can stall for reasons of its
// own, and one stall among the few pages of a tenth moves its median.
const listingRuns = 3

// measureListing lists the v1 queue table of dsn with store.ListQueues,
// pageSize rows at a time, timing each page. It only reads.
func measureListing(ctx context.Context, dsn string, pageSize int) (Listing, error) {
	db, err := sqlstore.Open(ctx, dsn, sqlstore.Options{})
	if err != nil {
		return Listing{}, err
	}
	defer db.Close()
	l := Listing{PageSize: pageSize}
	var best []time.Duration
	for run := range listingRuns {
		times, total, err := listOnce(ctx, db, pageSize)
		if err != nil {
			return l, err
		}
		if run == 0 || total < l.Total {
			l.Total = total
		}
		for i, t := range times {
			if i >= len(best) {
				best = append(best, t)
			} else {
				best[i] = min(best[i], t)
			}
		}
	}
	l.Pages = len(best)
	l.First, l.Last = tenths(best)
	return l, nil
}

// listOnce lists the whole table and returns the time of each page.
func listOnce(ctx context.Context, db *sqlstore.DB, pageSize int) ([]time.Duration, time.Duration, error) {
	var (
		times []time.Duration
		after *store.QueueKey
	)
	start := time.Now()
	for {
		t := time.Now()
		rows, err := db.ListQueues(ctx, store.V1, after, pageSize)
		if err != nil {
			return nil, 0, fmt.Errorf("list queues: %w", err)
		}
		if len(rows) == 0 {
			break
		}
		times = append(times, time.Since(t))
		if len(rows) < pageSize {
			break
		}
		k := rows[len(rows)-1].QueueKey
		after = &k
	}
	return times, time.Since(start), nil
}

// tenths returns the medians of the first and the last tenth of ts (at
// least one element each).
func tenths(ts []time.Duration) (first, last time.Duration) {
	if len(ts) == 0 {
		return 0, 0
	}
	n := max(1, len(ts)/10)
	return median(ts[:n]), median(ts[len(ts)-n:])
}

func median(ts []time.Duration) time.Duration {
	s := slices.Clone(ts)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
