// Package report takes a read-only inventory of a task store: queue rows
// and tasks by table version and namespace, what is expired, idle or
// unreadable. It never writes.
package report

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"text/tabwriter"
	"time"

	"github.com/tqscavenger/tqscavenger/store"
	"github.com/tqscavenger/tqscavenger/wire"
)

// Counts is one line of an inventory.
type Counts struct {
	Queues     int64 `json:"queues"`
	IdleQueues int64 `json:"idle_queues"` // last_update_time older than the grace period
	Tasks      int64 `json:"tasks"`
	Expired    int64 `json:"tasks_expired"`
	Future     int64 `json:"tasks_expiry_future"`
	NoExpiry   int64 `json:"tasks_no_expiry"`
	BadRows    int64 `json:"bad_rows"`
}

func (c *Counts) add(o Counts) {
	c.Queues += o.Queues
	c.IdleQueues += o.IdleQueues
	c.Tasks += o.Tasks
	c.Expired += o.Expired
	c.Future += o.Future
	c.NoExpiry += o.NoExpiry
	c.BadRows += o.BadRows
}

// Report is an inventory of a store at one instant.
type Report struct {
	At    time.Time `json:"at"`
	Grace string    `json:"grace"`
	// Tables holds the totals per table version ("v1", "v2").
	Tables map[string]*Counts `json:"tables"`
	// Namespaces holds the counts per table version and namespace id.
	Namespaces map[string]map[string]*Counts `json:"namespaces"`
}

// Options say what the inventory counts as idle and expired.
type Options struct {
	Now   time.Time     // default time.Now()
	Grace time.Duration // default 48h
	// Tables to inventory; default all present.
	Tables []store.Table
	// PageSize for listing and reading. Default 1000.
	PageSize int
}

// Take walks every queue row and task of the chosen tables.
func Take(ctx context.Context, st store.Store, o Options) (*Report, error) {
	if o.Now.IsZero() {
		o.Now = time.Now()
	}
	if o.Grace <= 0 {
		o.Grace = 48 * time.Hour
	}
	if o.PageSize <= 0 {
		o.PageSize = 1000
	}
	if o.Tables == nil {
		var err error
		if o.Tables, err = st.Tables(ctx); err != nil {
			return nil, err
		}
	}
	r := &Report{At: o.Now, Grace: o.Grace.String(), Tables: map[string]*Counts{}, Namespaces: map[string]map[string]*Counts{}}
	for _, t := range o.Tables {
		tot := &Counts{}
		r.Tables[t.String()] = tot
		byNS := map[string]*Counts{}
		r.Namespaces[t.String()] = byNS
		var after *store.QueueKey
		for {
			rows, err := st.ListQueues(ctx, t, after, o.PageSize)
			if err != nil {
				return nil, err
			}
			for _, q := range rows {
				c, ns, err := queueCounts(ctx, st, t, q, o)
				if err != nil {
					return nil, err
				}
				if byNS[ns] == nil {
					byNS[ns] = &Counts{}
				}
				byNS[ns].add(c)
				tot.add(c)
			}
			if len(rows) < o.PageSize {
				break
			}
			k := rows[len(rows)-1].QueueKey
			after = &k
		}
	}
	return r, nil
}

// queueCounts counts one queue row and the tasks of its subqueue 0.
func queueCounts(ctx context.Context, st store.Store, t store.Table, q store.QueueRow, o Options) (Counts, string, error) {
	c := Counts{Queues: 1}
	ns := "unknown"
	if id, _, _, err := wire.ParseQueueRowID(q.ID); err == nil {
		ns = id.String()
	}
	info, err := wire.DecodeTaskQueueInfo(q.Encoding, q.Data)
	if err != nil {
		c.BadRows++
	} else if o.Now.Sub(info.LastUpdateTime) >= o.Grace {
		c.IdleQueues++
	}
	var after *store.TaskKey
	for {
		tasks, err := st.ReadTasks(ctx, t, q.QueueKey, after, o.PageSize)
		if err != nil {
			return c, ns, err
		}
		for _, task := range tasks {
			c.Tasks++
			tt, err := wire.DecodeTaskTimes(task.Encoding, task.Data)
			switch {
			case err != nil:
				c.BadRows++
			case wire.Expired(tt.ExpiryTime, o.Now):
				c.Expired++
			case tt.ExpiryTime.IsZero() || tt.ExpiryTime.Unix() <= 0:
				c.NoExpiry++
			default:
				c.Future++
			}
		}
		if len(tasks) < o.PageSize {
			return c, ns, nil
		}
		k := tasks[len(tasks)-1].Key
		after = &k
	}
}

// WriteText writes the report as a table.
func (r *Report) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "table\tnamespace\tqueues\tidle\ttasks\texpired\tfuture\tno expiry\tbad rows\t")
	tables := make([]string, 0, len(r.Tables))
	for t := range r.Tables {
		tables = append(tables, t)
	}
	sort.Strings(tables)
	for _, t := range tables {
		nss := make([]string, 0, len(r.Namespaces[t]))
		for ns := range r.Namespaces[t] {
			nss = append(nss, ns)
		}
		sort.Strings(nss)
		for _, ns := range nss {
			row(tw, t, ns, r.Namespaces[t][ns])
		}
		row(tw, t, "all", r.Tables[t])
	}
	return tw.Flush()
}

func row(w io.Writer, t, ns string, c *Counts) {
	fmt.Fprintf(w, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t\n", t, ns, c.Queues, c.IdleQueues, c.Tasks, c.Expired, c.Future, c.NoExpiry, c.BadRows)
}

// WriteJSON writes the report as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}
