// Package pgtest gives tests a PostgreSQL database of their own: on the
// server named by MAYFLY_TEST_POSTGRES when it is set, otherwise on a
// throwaway cluster it starts once per test binary from the machine's
// PostgreSQL binaries (initdb into a temporary directory, a Unix socket
// and 127.0.0.1 on a free port) and removes when the tests end. Tests
// reach such a cluster through its socket, whose round trips cost less.
//
// A package that uses it runs its tests through Main:
//
//	func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
//
// Tests fail, rather than skip, when no PostgreSQL can be had, unless
// MAYFLY_SKIP_POSTGRES=1 says to skip them: a check that silently never
// runs protects nothing.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

var (
	once     sync.Once
	server   string // URL of the server's maintenance database
	startErr error
	stop     func()
	// restart stops the cluster started here, waits, and starts it again.
	restart func(down time.Duration) error

	// spare holds databases that tests are done with, emptied, for the
	// next test to take: the engine's tests over PostgreSQL open hundreds
	// of stores, and with a database made for each (by file copy, below)
	// and dropped at the test's end, two of them took 19.8 and 23.0 s
	// against 12.9 and 16.8 s with databases emptied and taken again.
	spareMu sync.Mutex
	spare   []string
)

// Restart stops the test server ("fast" shutdown: sessions are ended and
// transactions in flight roll back), keeps it down for down, and starts it
// again on the same port. Tests that use it must not run in parallel with
// others of their binary. It skips t on a server it did not start.
func Restart(t testing.TB, down time.Duration) {
	t.Helper()
	if restart == nil {
		t.Skip("the PostgreSQL server was not started by these tests (MAYFLY_TEST_POSTGRES), so it cannot be restarted")
	}
	if err := restart(down); err != nil {
		t.Fatalf("restart PostgreSQL: %v", err)
	}
}

// Main runs the tests and then stops the cluster Main's tests started.
func Main(m *testing.M) int {
	code := m.Run()
	if stop != nil {
		stop()
	}
	return code
}

// URL returns the connection string of an empty database for t alone on
// the test server: a new one, or one an earlier test of the binary used,
// emptied when that test ended.
func URL(t testing.TB) string {
	t.Helper()
	if os.Getenv("MAYFLY_SKIP_POSTGRES") == "1" {
		t.Skip("MAYFLY_SKIP_POSTGRES=1")
	}
	once.Do(func() {
		if u := os.Getenv("MAYFLY_TEST_POSTGRES"); u != "" {
			server = u
			return
		}
		server, stop, restart, startErr = startCluster()
	})
	if startErr != nil {
		t.Fatalf("PostgreSQL for tests: %v (install PostgreSQL's server binaries, set MAYFLY_TEST_POSTGRES to a server URL, or MAYFLY_SKIP_POSTGRES=1)", startErr)
	}
	cfg, err := pgx.ParseConfig(server)
	if err != nil {
		t.Fatal(err)
	}
	spareMu.Lock()
	name := ""
	if n := len(spare); n > 0 {
		name, spare = spare[n-1], spare[:n-1]
	}
	spareMu.Unlock()
	if name == "" {
		name = "t_" + randomHex(6)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		admin, err := pgx.Connect(ctx, server)
		if err != nil {
			t.Fatalf("connect to the test server: %v", err)
		}
		defer admin.Close(ctx)
		// FILE_COPY copies the template's files and then checkpoints,
		// which with fsync off costs little: 40 ms a database, where
		// PostgreSQL 15's default (WAL_LOG, which writes the template
		// through the WAL) took 100-140 ms, and the engine's tests
		// over PostgreSQL make hundreds. A server before 15 has no
		// STRATEGY, and takes the plain statement.
		if _, err := admin.Exec(ctx, "CREATE DATABASE "+name+" STRATEGY FILE_COPY"); err != nil {
			if _, err := admin.Exec(ctx, "CREATE DATABASE "+name); err != nil {
				t.Fatalf("create database %s: %v", name, err)
			}
		}
	}
	url := withDatabase(server, cfg.Database, name)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if empty(ctx, url) == nil {
			spareMu.Lock()
			spare = append(spare, name)
			spareMu.Unlock()
			return
		}
		if admin, err := pgx.Connect(ctx, server); err == nil {
			_, _ = admin.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
			_ = admin.Close(ctx)
		}
	})
	return url
}

// empty ends every other session on the database at url, which a test is
// done with, and leaves the database as CREATE DATABASE makes it: its
// public schema empty, with the privileges PostgreSQL gives it.
func empty(ctx context.Context, url string) error {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	for _, stmt := range []string{
		`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`,
		`DROP SCHEMA public CASCADE`,
		`CREATE SCHEMA public AUTHORIZATION pg_database_owner`,
		`GRANT USAGE ON SCHEMA public TO PUBLIC`,
	} {
		if _, err := conn.Exec(ctx, stmt); err != nil {
			return err
		}
	}
	return nil
}

// withDatabase replaces the database of a URL or key=value string.
func withDatabase(conn, old, name string) string {
	if strings.HasPrefix(conn, "postgres://") || strings.HasPrefix(conn, "postgresql://") {
		base, query, _ := strings.Cut(conn, "?")
		if i := strings.LastIndex(base, "/"); i > len("postgresql://") {
			base = base[:i]
		}
		out := base + "/" + name
		if query != "" {
			out += "?" + query
		}
		return out
	}
	return conn + " dbname=" + name
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// binDir finds the directory holding initdb, pg_ctl and postgres.
func binDir() (string, error) {
	if p, err := exec.LookPath("pg_ctl"); err == nil {
		if _, err := exec.LookPath("initdb"); err == nil {
			return filepath.Dir(p), nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "pg_ctl")); err == nil {
			return d, nil
		}
	}
	return "", errors.New("no initdb/pg_ctl on PATH or under /usr/lib/postgresql/*/bin")
}

func version(dir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(dir)))
	return n
}

// startCluster initialises and starts a cluster in a temporary directory
// and returns the URL of its postgres database and its stop function. As
// root, the cluster runs as the postgres user, since PostgreSQL refuses
// to run as root.
func startCluster() (string, func(), func(time.Duration) error, error) {
	bin, err := binDir()
	if err != nil {
		return "", nil, nil, err
	}
	reapClusters(bin)
	dir, err := os.MkdirTemp("", "mayfly-pg-")
	if err != nil {
		return "", nil, nil, err
	}
	// The test binary that owns the cluster, for reapClusters.
	if err := os.WriteFile(filepath.Join(dir, "owner.pid"), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		return "", nil, nil, err
	}
	var asUser []string
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			return "", nil, nil, fmt.Errorf("running as root needs a postgres user: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			return "", nil, nil, err
		}
		asUser = []string{"runuser", "-u", "postgres", "--"}
	}
	run := func(args ...string) error {
		full := append(append([]string{}, asUser...), args...)
		out, err := exec.Command(full[0], full[1:]...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("%s: %w: %s", strings.Join(args, " "), err, out)
		}
		return nil
	}
	data := filepath.Join(dir, "data")
	if err := run(filepath.Join(bin, "initdb"), "-D", data, "-U", "mayfly", "--auth=trust", "-E", "UTF8", "--no-sync"); err != nil {
		_ = os.RemoveAll(dir)
		return "", nil, nil, err
	}
	// The port is free when chosen, but a test binary of another package,
	// starting its own cluster at the same moment, may take it first:
	// the server then cannot bind, and a new port is tried.
	var port int
	var opts string
	for attempt := 1; ; attempt++ {
		if port, err = freePort(); err != nil {
			return "", nil, nil, err
		}
		// fsync off: these clusters hold test data and die with the
		// tests; no test here pulls the plug on the machine.
		opts = fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200", port, dir)
		err = run(filepath.Join(bin, "pg_ctl"), "-D", data, "-o", opts, "-l", filepath.Join(dir, "log"), "-w", "-t", "60", "start")
		if err == nil {
			break
		}
		if attempt == 3 {
			_ = os.RemoveAll(dir)
			return "", nil, nil, err
		}
	}
	stop := func() {
		_ = run(filepath.Join(bin, "pg_ctl"), "-D", data, "-m", "immediate", "-w", "stop")
		_ = os.RemoveAll(dir)
	}
	restart := func(down time.Duration) error {
		if err := run(filepath.Join(bin, "pg_ctl"), "-D", data, "-m", "fast", "-w", "stop"); err != nil {
			return err
		}
		time.Sleep(down)
		return run(filepath.Join(bin, "pg_ctl"), "-D", data, "-o", opts, "-l", filepath.Join(dir, "log"), "-w", "-t", "60", "start")
	}
	return fmt.Sprintf("postgres://mayfly@/postgres?host=%s&port=%d&sslmode=disable", dir, port), stop, restart, nil
}

// reapClusters stops and removes the clusters earlier test binaries
// started and could not stop, because they were killed (a test timeout
// ends the binary without running Main's clean-up): a cluster whose owner
// process is gone.
func reapClusters(bin string) {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), "mayfly-pg-*"))
	for _, dir := range dirs {
		b, err := os.ReadFile(filepath.Join(dir, "owner.pid"))
		if err != nil {
			continue // not one of ours, or not started yet
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || pid == os.Getpid() || processAlive(pid) {
			continue
		}
		stop := []string{filepath.Join(bin, "pg_ctl"), "-D", filepath.Join(dir, "data"), "-m", "immediate", "-w", "stop"}
		if os.Geteuid() == 0 {
			stop = append([]string{"runuser", "-u", "postgres", "--"}, stop...)
		}
		_ = exec.Command(stop[0], stop[1:]...).Run()
		_ = os.RemoveAll(dir)
	}
}

// processAlive reports whether process pid exists.
func processAlive(pid int) bool {
	_, err := os.Stat(filepath.Join("/proc", strconv.Itoa(pid)))
	return err == nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
