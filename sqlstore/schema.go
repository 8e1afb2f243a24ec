// This file owns the schema: creating Temporal's task tables and
// checking them.

package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/tqscavenger/tqscavenger/store"
)

// ddl is Temporal's DDL for the four task tables, per engine, exactly as
// Temporal's schema tools create them.
func ddl(d *dialect) []string {
	rh, id, blob := d.ddlTypes[0], d.ddlTypes[1], d.ddlTypes[2]
	queue := func(name string) string {
		return "CREATE TABLE IF NOT EXISTS " + name + " (\n" +
			"  range_hash " + rh + " NOT NULL,\n" +
			"  task_queue_id " + id + " NOT NULL,\n" +
			"  range_id BIGINT NOT NULL,\n" +
			"  data " + blob + " NOT NULL,\n" +
			"  data_encoding VARCHAR(16) NOT NULL,\n" +
			"  PRIMARY KEY (range_hash, task_queue_id)\n)"
	}
	task := func(name string, pass bool) string {
		p, pk := "", ""
		if pass {
			p, pk = "  pass BIGINT NOT NULL,\n", "pass, "
		}
		return "CREATE TABLE IF NOT EXISTS " + name + " (\n" +
			"  range_hash " + rh + " NOT NULL,\n" +
			"  task_queue_id " + id + " NOT NULL,\n" + p +
			"  task_id BIGINT NOT NULL,\n" +
			"  data " + blob + " NOT NULL,\n" +
			"  data_encoding VARCHAR(16) NOT NULL,\n" +
			"  PRIMARY KEY (range_hash, task_queue_id, " + pk + "task_id)\n)"
	}
	return []string{queue("task_queues"), task("tasks", false), queue("task_queues_v2"), task("tasks_v2", true)}
}

// Setup creates Temporal's four task tables where they do not exist. It
// does not write Temporal's schema_version: that would claim a full
// Temporal schema.
func (s *DB) Setup(ctx context.Context) error {
	for _, q := range ddl(s.d) {
		if _, err := s.db.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("schema setup: %w", s.d.classify(err))
		}
	}
	return nil
}

var columns = map[string][]string{
	"task_queues":    {"range_hash", "task_queue_id", "range_id", "data", "data_encoding"},
	"tasks":          {"range_hash", "task_queue_id", "task_id", "data", "data_encoding"},
	"task_queues_v2": {"range_hash", "task_queue_id", "range_id", "data", "data_encoding"},
	"tasks_v2":       {"range_hash", "task_queue_id", "pass", "task_id", "data", "data_encoding"},
}

// Check inspects the schema. It returns an error wrapping store.ErrSchema if the
// v1 task tables are missing or a present task table lacks a column the
// scavenger uses; the SchemaInfo says what was found either way.
//
// A statement of the check that could not finish (a table lock held by
// another session, a timeout, a lost connection, a cancelled ctx) says
// nothing about the schema: Check then returns that error, transient or
// ctx's, not store.ErrSchema, and the SchemaInfo is incomplete. Its
// statements are bounded by Options.StatementTimeout, or 30s without one.
func (s *DB) Check(ctx context.Context) (store.SchemaInfo, error) {
	ctx, cancel := s.withStartup(ctx)
	defer cancel()
	info := store.SchemaInfo{Engine: string(s.d.engine)}
	names, err := s.tableNames(ctx)
	if err != nil {
		return info, err
	}
	// unfinished reports whether err, a statement's, is one that did not
	// finish rather than one that found something wrong.
	unfinished := func(err error) bool {
		return ctx.Err() != nil || errors.Is(err, store.ErrTransient)
	}
	if names["schema_version"] {
		v, err := s.schemaVersion(ctx)
		if err != nil {
			if err = s.wrap(ctx, "read schema_version", err); unfinished(err) {
				return info, err
			}
			info.Problems = append(info.Problems, "cannot read schema_version: "+err.Error())
		}
		info.Version = v
	}
	for _, t := range []store.Table{store.V1, store.V2} {
		qt, tt := queueTable(t), taskTable(t)
		if !names[qt] && !names[tt] {
			if t == store.V1 {
				info.Problems = append(info.Problems, "tables task_queues and tasks do not exist")
			}
			continue
		}
		ok := true
		for _, name := range []string{qt, tt} {
			if !names[name] {
				info.Problems = append(info.Problems, fmt.Sprintf("table %s is missing while %s exists", name, map[string]string{qt: tt, tt: qt}[name]))
				ok = false
				continue
			}
			q := "SELECT " + strings.Join(columns[name], ", ") + " FROM " + name + " WHERE 1 = 0"
			rows, err := s.db.QueryContext(ctx, q)
			if err != nil {
				if err := s.wrap(ctx, "check the columns of "+name, err); unfinished(err) {
					return info, err
				}
				info.Problems = append(info.Problems, fmt.Sprintf("table %s does not have Temporal's columns (%s): %v", name, strings.Join(columns[name], ", "), err))
				ok = false
				continue
			}
			rows.Close()
		}
		if ok && info.Version != "" && s.d.engine != SQLite {
			need := "1.0"
			if t == store.V2 {
				need = "1.18"
			}
			if !versionAtLeast(info.Version, need) {
				info.Problems = append(info.Problems, fmt.Sprintf("%s tables need Temporal schema >= %s, found %s", t, need, info.Version))
				ok = false
			}
		}
		if ok {
			info.Tables = append(info.Tables, t)
		}
	}
	if len(info.Problems) > 0 {
		return info, fmt.Errorf("%w: %s: %s", store.ErrSchema, s.dsn, strings.Join(info.Problems, "; "))
	}
	return info, nil
}

func (s *DB) schemaVersion(ctx context.Context) (string, error) {
	b := s.newBuilder()
	b.w("SELECT curr_version FROM schema_version WHERE version_partition = 0 AND db_name = ").p(s.dsn.Database())
	var v string
	err := s.db.QueryRowContext(ctx, b.String(), b.args...).Scan(&v)
	if err != nil {
		// Some Temporal setups record a different db_name; take any row.
		if err2 := s.db.QueryRowContext(ctx, "SELECT curr_version FROM schema_version WHERE version_partition = 0").Scan(&v); err2 == nil {
			return v, nil
		}
		return "", err
	}
	return v, nil
}

// versionAtLeast compares dotted versions numerically ("1.18" > "1.9").
func versionAtLeast(have, need string) bool {
	h, n := strings.Split(have, "."), strings.Split(need, ".")
	for i := 0; i < len(n); i++ {
		var hv int
		if i < len(h) {
			hv, _ = strconv.Atoi(h[i])
		}
		nv, _ := strconv.Atoi(n[i])
		if hv != nv {
			return hv > nv
		}
	}
	return true
}

// tableNames lists the tables of the store's schema (PostgreSQL) or
// database.
func (s *DB) tableNames(ctx context.Context) (map[string]bool, error) {
	rows, err := s.db.QueryContext(ctx, s.d.listTables)
	if err != nil {
		return nil, s.wrap(ctx, "list tables", err)
	}
	defer rows.Close()
	names := map[string]bool{}
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, s.wrap(ctx, "list tables", err)
		}
		names[n] = true
	}
	return names, s.wrap(ctx, "list tables", rows.Err())
}
