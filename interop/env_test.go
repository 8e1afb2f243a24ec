package interop

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// settings are the suite's knobs, all from the environment.
type settings struct {
	postgres *url.URL // TQS_TEST_POSTGRES, as the main module's tests
	mysql    *url.URL // TQS_TEST_MYSQL
	short    bool     // TQS_INTEROP_SHORT=1: a laptop run
	engines  []string // TQS_INTEROP_ENGINES=postgres,mysql,sqlite (default: every configured one)
	fairness []bool   // TQS_INTEROP_FAIRNESS=off,on
	brk      string   // TQS_INTEROP_BREAK=clock|fence|none: which broken scavengers must be caught
	keep     bool     // TQS_INTEROP_KEEP=1: keep databases and logs
	parallel bool     // TQS_INTEROP_PARALLEL=0 runs every run alone (default: side by side)
	journal  string   // TQS_INTEROP_SQLITE_JOURNAL=wal|delete: the SQLite file's journal mode (default wal)
	work     string   // directory for configs, logs and SQLite files
	temporal string   // the temporal-server binary (built if not given)
	tqs      string   // the tqscavenger binary (built if not given)
}

var (
	settingsOnce sync.Once
	theSettings  settings
	settingsErr  error
)

func loadSettings(t *testing.T) settings {
	t.Helper()
	if os.Getenv("TQS_INTEROP") != "1" {
		t.Skip("the interop suite runs a real Temporal server: set TQS_INTEROP=1 (and TQS_TEST_POSTGRES / TQS_TEST_MYSQL), or run ../.ci/interop")
	}
	settingsOnce.Do(func() { theSettings, settingsErr = readSettings() })
	if settingsErr != nil {
		t.Fatal(settingsErr)
	}
	return theSettings
}

func readSettings() (settings, error) {
	var s settings
	var err error
	if v := os.Getenv("TQS_TEST_POSTGRES"); v != "" {
		if s.postgres, err = url.Parse(v); err != nil {
			return s, fmt.Errorf("TQS_TEST_POSTGRES: %v", err)
		}
	}
	if v := os.Getenv("TQS_TEST_MYSQL"); v != "" {
		if s.mysql, err = url.Parse(v); err != nil {
			return s, fmt.Errorf("TQS_TEST_MYSQL: %v", err)
		}
	}
	s.short = os.Getenv("TQS_INTEROP_SHORT") == "1"
	s.keep = os.Getenv("TQS_INTEROP_KEEP") == "1"
	s.parallel = os.Getenv("TQS_INTEROP_PARALLEL") != "0"
	switch s.journal = os.Getenv("TQS_INTEROP_SQLITE_JOURNAL"); s.journal {
	case "":
		s.journal = "wal"
	case "wal", "delete":
	default:
		return s, fmt.Errorf("TQS_INTEROP_SQLITE_JOURNAL=%q: use wal or delete (a rollback journal, as Temporal's dev server keeps its files)", s.journal)
	}
	if v := os.Getenv("TQS_INTEROP_ENGINES"); v != "" {
		s.engines = strings.Split(v, ",")
	} else {
		if s.postgres != nil {
			s.engines = append(s.engines, "postgres")
		}
		if s.mysql != nil {
			s.engines = append(s.engines, "mysql")
		}
		s.engines = append(s.engines, "sqlite")
		if s.short {
			s.engines = s.engines[:1]
		}
	}
	ci := os.Getenv("CI") == "true"
	if ci && os.Getenv("TQS_INTEROP_ENGINES") == "" {
		// CI cannot pass by leaving an engine out.
		for _, v := range []string{"TQS_TEST_POSTGRES", "TQS_TEST_MYSQL"} {
			if os.Getenv(v) == "" {
				return s, fmt.Errorf("CI=true: the interop suite must run on PostgreSQL and MariaDB, and %s is not set", v)
			}
		}
	}
	for _, e := range s.engines {
		if err := s.serversFor(e); err != nil {
			return s, err
		}
	}
	// Every server a selected engine needs answers, or the suite fails at
	// once with the reason (the URL's password redacted), rather than in
	// Temporal's schema tool or not at all.
	for _, e := range s.engines {
		servers := map[string]*url.URL{}
		switch e {
		case "postgres":
			servers["PostgreSQL (TQS_TEST_POSTGRES)"] = s.postgres
		case "mysql":
			servers["MariaDB (TQS_TEST_MYSQL)"] = s.mysql
			servers["PostgreSQL (TQS_TEST_POSTGRES, for visibility)"] = s.postgres
		}
		for name, u := range servers {
			if err := pingServer(u); err != nil {
				return s, fmt.Errorf("engine %s: %s at %s is unreachable: %v", e, name, u.Redacted(), err)
			}
		}
	}
	fv := os.Getenv("TQS_INTEROP_FAIRNESS")
	if fv == "" {
		fv = "off,on"
		if s.short {
			fv = "off"
		}
	}
	for _, f := range strings.Split(fv, ",") {
		switch f {
		case "off":
			s.fairness = append(s.fairness, false)
		case "on":
			s.fairness = append(s.fairness, true)
		default:
			return s, fmt.Errorf("TQS_INTEROP_FAIRNESS: %q is neither off nor on", f)
		}
	}
	s.brk = os.Getenv("TQS_INTEROP_BREAK")
	if s.brk == "" {
		s.brk = "fence"
	}
	for _, b := range strings.Split(s.brk, ",") {
		switch b {
		case "clock", "fence", "none":
		default:
			return s, fmt.Errorf("TQS_INTEROP_BREAK: %q is not clock, fence or none", b)
		}
	}
	s.work = os.Getenv("TQS_INTEROP_WORKDIR")
	if s.work == "" {
		s.work = filepath.Join(os.TempDir(), fmt.Sprintf("tqs-interop-%d", os.Getpid()))
	}
	if err := os.MkdirAll(s.work, 0o755); err != nil {
		return s, err
	}
	s.temporal = os.Getenv("TQS_INTEROP_TEMPORAL_BIN")
	if s.temporal == "" {
		s.temporal = filepath.Join(s.work, "temporal-server")
		if err := goBuild(".", s.temporal, "./cmd/temporal-server"); err != nil {
			return s, err
		}
	}
	s.tqs = os.Getenv("TQS_INTEROP_TQSCAVENGER_BIN")
	if s.tqs == "" {
		s.tqs = filepath.Join(s.work, "tqscavenger")
		if err := goBuild("..", s.tqs, "./cmd/tqscavenger"); err != nil {
			return s, err
		}
	}
	return s, nil
}

// serversFor reports why an engine cannot run with these settings: an
// unknown engine, or a server it needs that is not configured.
func (s settings) serversFor(engine string) error {
	switch engine {
	case "postgres":
		if s.postgres == nil {
			return fmt.Errorf("engine postgres needs TQS_TEST_POSTGRES")
		}
	case "mysql":
		if s.mysql == nil {
			return fmt.Errorf("engine mysql needs TQS_TEST_MYSQL")
		}
		if s.postgres == nil {
			return fmt.Errorf("engine mysql keeps Temporal's visibility on PostgreSQL: it needs TQS_TEST_POSTGRES too")
		}
	case "sqlite":
	default:
		return fmt.Errorf("TQS_INTEROP_ENGINES: unknown engine %q (postgres, mysql, sqlite)", engine)
	}
	return nil
}

// pingServer connects to a server of TQS_TEST_POSTGRES or TQS_TEST_MYSQL
// within 15 s.
func pingServer(u *url.URL) error {
	driver, dsn := "pgx", u.String()
	if u.Scheme == "mysql" {
		driver, dsn = "mysql", mysqlDriverDSN(u, strings.TrimPrefix(u.Path, "/"))
	}
	db, err := sql.Open(driver, dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	return db.PingContext(ctx)
}

func goBuild(dir, out, pkg string) error {
	start := time.Now()
	cmd := exec.Command("go", "build", "-o", out, pkg)
	cmd.Dir = dir
	b, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("go build %s: %v\n%s", pkg, err, b)
	}
	fmt.Printf("built %s in %s\n", pkg, time.Since(start).Round(time.Second))
	return nil
}

// sideBySide marks t parallel unless TQS_INTEROP_PARALLEL=0: each run has
// its own server, databases and queues, and waits on its workload's timers
// far more than it computes.
func (s settings) sideBySide(t *testing.T) {
	if s.parallel {
		t.Parallel()
	}
}

func (s settings) breaks() []string {
	var out []string
	for _, b := range strings.Split(s.brk, ",") {
		if b != "none" {
			out = append(out, b)
		}
	}
	return out
}

// freePorts returns n consecutive free loopback ports below 32768 (Temporal
// keeps membership ports in a smallint), starting near a spot derived from
// the process id so that concurrent runs seldom collide.
var (
	portsMu   sync.Mutex
	portsNext int
)

func freePorts(n int) (int, error) {
	portsMu.Lock()
	defer portsMu.Unlock()
	start := portsNext
	if start == 0 {
		start = 20000 + (os.Getpid()*37)%10000
	}
	for base := start; base < 32000; base += n {
		ok := true
		for p := base; p < base+n; p++ {
			l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
			if err != nil {
				ok = false
				break
			}
			l.Close()
		}
		if ok {
			portsNext = base + n
			return base, nil
		}
	}
	return 0, fmt.Errorf("no %d consecutive free ports from %d", n, start)
}

// TestEngineSettings: an engine whose server is not configured is refused
// with its reason, and a SQLite-only run (no TQS_TEST_POSTGRES) drops its
// files without a server. Runs without TQS_INTEROP: no Temporal here.
func TestEngineSettings(t *testing.T) {
	pg, _ := url.Parse("postgres://u@127.0.0.1:5432/x")
	for _, c := range []struct {
		s      settings
		engine string
		want   string // "": accepted
	}{
		{settings{}, "sqlite", ""},
		{settings{}, "postgres", "needs TQS_TEST_POSTGRES"},
		{settings{}, "mysql", "needs TQS_TEST_MYSQL"},
		{settings{mysql: pg}, "mysql", "needs TQS_TEST_POSTGRES too"},
		{settings{postgres: pg}, "cockroach", `unknown engine "cockroach"`},
		{settings{postgres: pg}, "postgres", ""},
	} {
		err := c.s.serversFor(c.engine)
		if (err == nil) != (c.want == "") || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s with postgres %v, mysql %v: %v, want %q", c.engine, c.s.postgres != nil, c.s.mysql != nil, err, c.want)
		}
	}
	dir := t.TempDir()
	e := &engineDB{engine: "sqlite", name: filepath.Join(dir, "t.db"), visName: filepath.Join(dir, "t-visibility.db"), s: settings{work: dir}}
	for _, f := range []string{e.name, e.name + "-wal", e.visName} {
		if err := os.WriteFile(f, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	e.drop(t)
	for _, f := range []string{e.name, e.name + "-wal", e.visName} {
		if _, err := os.Stat(f); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s left after drop: %v", f, err)
		}
	}
}
