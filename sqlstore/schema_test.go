package sqlstore_test

import (
	"database/sql"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/tqscavenger/tqscavenger/internal/fixture"
	"github.com/tqscavenger/tqscavenger/internal/testdb"
	"github.com/tqscavenger/tqscavenger/sqlstore"
	"github.com/tqscavenger/tqscavenger/store"
)

// column is one column as the engine's catalog describes it.
type column struct {
	name, typ string
	notNull   bool
}

// tableDef is a table as the catalog describes it: its columns in order,
// its primary key, and its other indexes.
type tableDef struct {
	cols    []column
	pk      []string
	indexes []string // besides the primary key
}

func (d tableDef) String() string {
	var cols []string
	for _, c := range d.cols {
		nn := ""
		if c.notNull {
			nn = " NOT NULL"
		}
		cols = append(cols, c.name+" "+c.typ+nn)
	}
	return fmt.Sprintf("(%s, PRIMARY KEY (%s)) indexes %v", strings.Join(cols, ", "), strings.Join(d.pk, ", "), d.indexes)
}

// temporalDDL is Temporal's four task tables per engine, in the catalog's
// words, as the schema files of temporalio/temporal declare them
// (schema/mysql/v8, schema/postgresql/v12, schema/sqlite/v3).
func temporalDDL(e sqlstore.Engine) map[string]tableDef {
	var rh, id, blob, i64, enc string
	switch e {
	case sqlstore.Postgres:
		rh, id, blob, i64, enc = "bigint", "bytea", "bytea", "bigint", "character varying(16)"
	case sqlstore.MySQL:
		rh, id, blob, i64, enc = "int unsigned", "varbinary(272)", "mediumblob", "bigint", "varchar(16)"
	case sqlstore.SQLite:
		rh, id, blob, i64, enc = "INT UNSIGNED", "VARBINARY(272)", "MEDIUMBLOB", "BIGINT", "VARCHAR(16)"
	}
	queue := tableDef{
		cols: []column{{"range_hash", rh, true}, {"task_queue_id", id, true}, {"range_id", i64, true}, {"data", blob, true}, {"data_encoding", enc, true}},
		pk:   []string{"range_hash", "task_queue_id"},
	}
	tasks := tableDef{
		cols: []column{{"range_hash", rh, true}, {"task_queue_id", id, true}, {"task_id", i64, true}, {"data", blob, true}, {"data_encoding", enc, true}},
		pk:   []string{"range_hash", "task_queue_id", "task_id"},
	}
	tasksV2 := tableDef{
		cols: []column{{"range_hash", rh, true}, {"task_queue_id", id, true}, {"pass", i64, true}, {"task_id", i64, true}, {"data", blob, true}, {"data_encoding", enc, true}},
		pk:   []string{"range_hash", "task_queue_id", "pass", "task_id"},
	}
	return map[string]tableDef{"task_queues": queue, "tasks": tasks, "task_queues_v2": queue, "tasks_v2": tasksV2}
}

// describe reads table from the catalog of db.
func describe(t *testing.T, db *sql.DB, e sqlstore.Engine, table string) tableDef {
	t.Helper()
	var d tableDef
	rowsOf := func(q string, args ...any) *sql.Rows {
		rows, err := db.QueryContext(ctx, q, args...)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return rows
	}
	strs := func(q string, args ...any) []string {
		rows := rowsOf(q, args...)
		defer rows.Close()
		var out []string
		for rows.Next() {
			var s string
			if err := rows.Scan(&s); err != nil {
				t.Fatal(err)
			}
			out = append(out, s)
		}
		return out
	}
	switch e {
	case sqlstore.SQLite:
		rows := rowsOf("SELECT name, type, \"notnull\", pk FROM pragma_table_info(?) ORDER BY cid", table)
		pk := map[int]string{}
		for rows.Next() {
			var c column
			var n int
			if err := rows.Scan(&c.name, &c.typ, &c.notNull, &n); err != nil {
				t.Fatal(err)
			}
			d.cols = append(d.cols, c)
			if n > 0 {
				pk[n] = c.name
			}
		}
		rows.Close()
		for i := 1; i <= len(pk); i++ {
			d.pk = append(d.pk, pk[i])
		}
		for _, ix := range strs("SELECT name FROM pragma_index_list(?) WHERE origin <> 'pk'", table) {
			d.indexes = append(d.indexes, ix)
		}
	case sqlstore.Postgres:
		rows := rowsOf(`SELECT column_name, CASE WHEN character_maximum_length IS NULL THEN data_type ELSE data_type || '(' || character_maximum_length || ')' END, is_nullable = 'NO'
			FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = $1 ORDER BY ordinal_position`, table)
		for rows.Next() {
			var c column
			if err := rows.Scan(&c.name, &c.typ, &c.notNull); err != nil {
				t.Fatal(err)
			}
			d.cols = append(d.cols, c)
		}
		rows.Close()
		d.pk = strs(`SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)
			WHERE i.indrelid = (current_schema() || '.' || $1)::regclass AND i.indisprimary ORDER BY array_position(i.indkey, a.attnum)`, table)
		d.indexes = strs(`SELECT indexname FROM pg_indexes WHERE schemaname = current_schema() AND tablename = $1 AND indexname <> $2`, table, table+"_pkey")
	case sqlstore.MySQL:
		// MariaDB and MySQL 5.7 show integer display widths, MySQL 8 does
		// not: compare without them.
		width := regexp.MustCompile(`^((tiny|small|medium|big)?int)\(\d+\)`)
		rows := rowsOf(`SELECT column_name, column_type, is_nullable = 'NO' FROM information_schema.columns
			WHERE table_schema = DATABASE() AND table_name = ? ORDER BY ordinal_position`, table)
		for rows.Next() {
			var c column
			if err := rows.Scan(&c.name, &c.typ, &c.notNull); err != nil {
				t.Fatal(err)
			}
			c.typ = width.ReplaceAllString(c.typ, "$1")
			d.cols = append(d.cols, c)
		}
		rows.Close()
		d.pk = strs(`SELECT column_name FROM information_schema.statistics WHERE table_schema = DATABASE() AND table_name = ? AND index_name = 'PRIMARY' ORDER BY seq_in_index`, table)
		d.indexes = strs(`SELECT DISTINCT index_name FROM information_schema.statistics WHERE table_schema = DATABASE() AND table_name = ? AND index_name <> 'PRIMARY'`, table)
	}
	return d
}

func TestSetupCreatesTemporalDDL(t *testing.T) {
	for _, e := range testdb.Engines {
		t.Run(string(e), func(t *testing.T) {
			t.Parallel()
			db, err := sqlstore.Open(ctx, testdb.Empty(t, e), sqlstore.Options{Create: true})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			for range 2 { // Setup is idempotent
				if err := db.Setup(ctx); err != nil {
					t.Fatal(err)
				}
			}
			for table, want := range temporalDDL(e) {
				if got := describe(t, db.SQL(), e, table); got.String() != want.String() {
					t.Errorf("%s:\n got %s\nwant %s", table, got, want)
				}
			}
			tables, err := db.Tables(ctx)
			if err != nil || !slices.Equal(tables, []store.Table{store.V1, store.V2}) {
				t.Errorf("Tables() = %v, %v", tables, err)
			}
			info, err := db.Check(ctx)
			if err != nil {
				t.Fatalf("Check after Setup: %v", err)
			}
			if info.Version != "" {
				t.Errorf("Setup recorded a Temporal schema version %q: it must not claim a full Temporal schema", info.Version)
			}
		})
	}
}

// TestSetupMatchesTemporalSQLite compares Setup's SQLite tables with those
// of a database written by Temporal's own dev server.
func TestSetupMatchesTemporalSQLite(t *testing.T) {
	real, err := sqlstore.Open(ctx, fixture.Path(t, "temporal-1.32-fair-aged72h"), sqlstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer real.Close()
	ours := testdb.Open(t, sqlstore.SQLite)
	for table := range temporalDDL(sqlstore.SQLite) {
		got, want := describe(t, ours.SQL(), sqlstore.SQLite, table), describe(t, real.SQL(), sqlstore.SQLite, table)
		if got.String() != want.String() {
			t.Errorf("%s:\n ours     %s\n Temporal %s", table, got, want)
		}
		var rowid int
		q := "SELECT count(*) FROM sqlite_master WHERE name = ? AND sql LIKE '%WITHOUT ROWID%'"
		if err := ours.SQL().QueryRowContext(ctx, q, table).Scan(&rowid); err != nil || rowid != 0 {
			t.Errorf("%s is not a rowid table like Temporal's (%v)", table, err)
		}
	}
}

func TestCheck(t *testing.T) {
	type tc struct {
		name    string
		prepare []string // SQL run after Setup (or on an empty database)
		empty   bool     // no Setup
		tables  []store.Table
		problem string // "" for none; else a part of the ErrSchema message
	}
	cases := []tc{
		{"Setup's tables", nil, false, []store.Table{store.V1, store.V2}, ""},
		{"no task tables", nil, true, nil, "tables task_queues and tasks do not exist"},
		{"v1 only", []string{"DROP TABLE tasks_v2", "DROP TABLE task_queues_v2"}, false, []store.Table{store.V1}, ""},
		{"v2 only", []string{"DROP TABLE tasks", "DROP TABLE task_queues"}, false, []store.Table{store.V2}, "tables task_queues and tasks do not exist"},
		{"a missing column", []string{"ALTER TABLE tasks DROP COLUMN data_encoding"}, false, []store.Table{store.V2}, "table tasks does not have Temporal's columns"},
		{"a missing v2 column", []string{"ALTER TABLE tasks_v2 DROP COLUMN data"}, false, []store.Table{store.V1}, "table tasks_v2 does not have Temporal's columns"},
		{"a renamed column", []string{"ALTER TABLE task_queues RENAME COLUMN range_id TO rangeid"}, false, []store.Table{store.V2}, "table task_queues does not have Temporal's columns"},
		{"half of v2", []string{"DROP TABLE task_queues_v2"}, false, []store.Table{store.V1}, "table task_queues_v2 is missing while tasks_v2 exists"},
	}
	for _, e := range testdb.Engines {
		t.Run(string(e), func(t *testing.T) {
			t.Parallel()
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					db, err := sqlstore.Open(ctx, testdb.Empty(t, e), sqlstore.Options{Create: true})
					if err != nil {
						t.Fatal(err)
					}
					defer db.Close()
					if !c.empty {
						if err := db.Setup(ctx); err != nil {
							t.Fatal(err)
						}
					}
					for _, q := range c.prepare {
						testdb.Exec(t, db, q)
					}
					checkSchema(t, db, c.tables, "", c.problem)
				})
			}
		})
	}
}

func checkSchema(t *testing.T, db *sqlstore.DB, tables []store.Table, version, problem string) store.SchemaInfo {
	t.Helper()
	info, err := db.Check(ctx)
	if problem == "" && err != nil {
		t.Fatalf("Check: %v", err)
	}
	if problem != "" {
		if !errors.Is(err, store.ErrSchema) {
			t.Fatalf("Check: %v, want ErrSchema", err)
		}
		if !strings.Contains(err.Error(), problem) {
			t.Errorf("Check: %q does not say %q", err, problem)
		}
	}
	if !slices.Equal(info.Tables, tables) {
		t.Errorf("usable tables %v, want %v", info.Tables, tables)
	}
	if info.Version != version {
		t.Errorf("version %q, want %q", info.Version, version)
	}
	return info
}

// TestCheckSchemaVersion gives the task tables a schema_version table as
// Temporal's SQL tool makes it.
func TestCheckSchemaVersion(t *testing.T) {
	type tc struct {
		name    string
		version string
		dbName  string // "" is the store's database
		dropV2  bool
		tables  []store.Table
		problem string
	}
	cases := []tc{
		{"current", "1.19", "", false, []store.Table{store.V1, store.V2}, ""},
		{"newer than we know", "1.25", "", false, []store.Table{store.V1, store.V2}, ""},
		{"exactly the first with v2", "1.18", "", false, []store.Table{store.V1, store.V2}, ""},
		{"v2 tables before 1.18", "1.17", "", false, []store.Table{store.V1}, "v2 tables need Temporal schema >= 1.18, found 1.17"},
		// 1.9 is older than 1.18: versions compare by number, not as text.
		{"1.9 is older than 1.18", "1.9", "", false, []store.Table{store.V1}, "v2 tables need Temporal schema >= 1.18, found 1.9"},
		{"old schema without v2 tables", "1.12", "", true, []store.Table{store.V1}, ""},
		{"another db_name", "1.19", "temporal_elsewhere", false, []store.Table{store.V1, store.V2}, ""},
	}
	for _, e := range testdb.Engines {
		t.Run(string(e), func(t *testing.T) {
			t.Parallel()
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					db := testdb.Open(t, e)
					created := "TIMESTAMP"
					if e == sqlstore.MySQL {
						created = "DATETIME(6)"
					}
					testdb.Exec(t, db, `CREATE TABLE schema_version (
						version_partition INT NOT NULL,
						db_name VARCHAR(255) NOT NULL,
						creation_time `+created+`,
						curr_version VARCHAR(64),
						min_compatible_version VARCHAR(64),
						PRIMARY KEY (version_partition, db_name))`)
					dbName := c.dbName
					if dbName == "" {
						dbName = db.DSN().Database()
					}
					testdb.Exec(t, db, fmt.Sprintf("INSERT INTO schema_version VALUES (0, '%s', CURRENT_TIMESTAMP, '%s', '1.0')", dbName, c.version))
					if c.dropV2 {
						testdb.Exec(t, db, "DROP TABLE tasks_v2")
						testdb.Exec(t, db, "DROP TABLE task_queues_v2")
					}
					tables, problem := c.tables, c.problem
					if e == sqlstore.SQLite {
						// Temporal numbers SQLite schemas apart (0.x) and its dev
						// server writes no version: the tables decide.
						tables, problem = []store.Table{store.V1, store.V2}, ""
						if c.dropV2 {
							tables = []store.Table{store.V1}
						}
					}
					info := checkSchema(t, db, tables, c.version, problem)
					if !strings.Contains(info.String(), "temporal schema version: "+c.version+"\n") {
						t.Errorf("report does not show the version:\n%s", info)
					}
				})
			}
		})
	}
}

// TestCheckTemporalFixtures checks databases written by Temporal's dev
// server: no schema_version, both generations of task tables.
func TestCheckTemporalFixtures(t *testing.T) {
	for _, name := range []string{"temporal-1.32-aged72h", "temporal-1.32-fair-aged72h", "temporal-1.29-fresh"} {
		t.Run(name, func(t *testing.T) {
			db, err := sqlstore.Open(ctx, "sqlite:"+fixture.Path(t, name), sqlstore.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			info := checkSchema(t, db, []store.Table{store.V1, store.V2}, "", "")
			for _, line := range []string{"engine: sqlite", "temporal schema version: none recorded", "v1 task tables: present", "v2 task tables: present"} {
				if !strings.Contains(info.String(), line) {
					t.Errorf("report does not say %q:\n%s", line, info)
				}
			}
		})
	}
}

func TestVersionAtLeast(t *testing.T) {
	for _, c := range []struct {
		have, need string
		ok         bool
	}{
		{"1.18", "1.18", true},
		{"1.19", "1.18", true},
		{"1.9", "1.18", false},
		{"1.17.99", "1.18", false},
		{"1.18.0", "1.18", true},
		{"2.0", "1.18", true},
		{"1", "1.0", true},
		{"0.11", "1.0", false},
	} {
		if got := sqlstore.VersionAtLeast(c.have, c.need); got != c.ok {
			t.Errorf("versionAtLeast(%q, %q) = %v, want %v", c.have, c.need, got, c.ok)
		}
	}
}
