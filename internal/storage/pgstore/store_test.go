package pgstore_test

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mayfly-db/mayfly/internal/storage"
	"github.com/mayfly-db/mayfly/internal/storage/pgstore"
	"github.com/mayfly-db/mayfly/internal/storage/pgtest"
	"github.com/mayfly-db/mayfly/internal/storage/storagetest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

func open(t *testing.T) storage.Store {
	t.Helper()
	s, err := pgstore.Open(context.Background(), pgstore.Options{URL: pgtest.URL(t)})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestConformance(t *testing.T) {
	storagetest.Run(t, open)
}

// A database written by a newer Mayfly is refused with both versions
// named; the same database reopens at the current version.
func TestNewerSchemaIsRefused(t *testing.T) {
	url := pgtest.URL(t)
	s, err := pgstore.Open(context.Background(), pgstore.Options{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	_ = s.Close()
	s, err = pgstore.Open(context.Background(), pgstore.Options{URL: url})
	if err != nil {
		t.Fatalf("reopen at the same version: %v", err)
	}
	_ = s.Close()
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(context.Background(), `UPDATE mayfly_meta SET value = '99' WHERE name = 'schema'`); err != nil {
		t.Fatal(err)
	}
	_ = conn.Close(context.Background())
	_, err = pgstore.Open(context.Background(), pgstore.Options{URL: url})
	if !errors.Is(err, pgstore.ErrSchemaTooNew) || !strings.Contains(err.Error(), "99") {
		t.Fatalf("open a newer schema: %v, want ErrSchemaTooNew naming version 99", err)
	}
}

// A database of schema version 1 (no column for long keys) opens migrated:
// its rows read as before, and long keys can be written.
func TestSchemaOneIsMigrated(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	for _, stmt := range []string{
		`CREATE TABLE mayfly_meta (name TEXT PRIMARY KEY, value TEXT NOT NULL)`,
		`CREATE TABLE mayfly_kv (k BYTEA PRIMARY KEY, v BYTEA NOT NULL)`,
		`INSERT INTO mayfly_meta (name, value) VALUES ('schema', '1')`,
		`INSERT INTO mayfly_kv (k, v) VALUES ('a', 'old')`,
	} {
		if _, err := conn.Exec(ctx, stmt); err != nil {
			t.Fatal(err)
		}
	}
	s, err := pgstore.Open(ctx, pgstore.Options{URL: url})
	if err != nil {
		t.Fatalf("open a version 1 database: %v", err)
	}
	defer s.Close()
	long := strings.Repeat("0123456789", 500)
	if err := s.Update(ctx, func(tx storage.Txn) error { return tx.Set([]byte(long), []byte("new")) }); err != nil {
		t.Fatalf("write a long key: %v", err)
	}
	err = s.View(ctx, func(r storage.Reader) error {
		for k, want := range map[string]string{"a": "old", long: "new"} {
			if v, err := r.Get([]byte(k)); err != nil || string(v) != want {
				t.Errorf("Get(key of %d bytes) = %q, %v; want %q", len(k), v, err, want)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var v string
	if err := conn.QueryRow(ctx, `SELECT value FROM mayfly_meta WHERE name = 'schema'`).Scan(&v); err != nil || v != strconv.Itoa(pgstore.SchemaVersion) {
		t.Errorf("schema version %q, %v; want %d", v, err, pgstore.SchemaVersion)
	}
	_ = conn.Close(ctx)
}

// An unreachable server is a clear error at Open, wrapping ErrUnavailable.
func TestUnreachableServer(t *testing.T) {
	_, err := pgstore.Open(context.Background(), pgstore.Options{URL: "postgres://mayfly@127.0.0.1:1/none?sslmode=disable&connect_timeout=2"})
	if !errors.Is(err, storage.ErrUnavailable) || !strings.Contains(err.Error(), "cannot reach PostgreSQL") {
		t.Fatalf("open an unreachable server: %v", err)
	}
}

// The store's clock is the database's.
func TestClock(t *testing.T) {
	s := open(t).(*pgstore.Store)
	defer s.Close()
	a, err := s.Now(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.Now(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if a.IsZero() || b.Before(a) {
		t.Fatalf("clock readings %v then %v", a, b)
	}
}

// A transaction given a deadline commits before it, and one that cannot
// is re-run, each run free to take a later deadline; one that never can
// ends in ErrConflict and leaves nothing behind.
func TestCommitBefore(t *testing.T) {
	s := open(t).(*pgstore.Store)
	defer s.Close()
	ctx := context.Background()
	runs := 0
	err := s.Update(ctx, func(tx storage.Txn) error {
		runs++
		now, err := s.Now(ctx)
		if err != nil {
			return err
		}
		at := now.Add(time.Minute)
		if runs == 1 {
			at = now.Add(-time.Millisecond) // already late: this run fails
		}
		if !storage.CommitBefore(tx, at) {
			t.Fatal("a pgstore transaction is not a Deadliner")
		}
		return tx.Set([]byte("in-time"), []byte("v"))
	})
	if err != nil || runs != 2 {
		t.Fatalf("Update: %v after %d runs, want success on the second", err, runs)
	}
	err = s.Update(ctx, func(tx storage.Txn) error {
		storage.CommitBefore(tx, time.Unix(0, 0))
		return tx.Set([]byte("late"), []byte("v"))
	})
	if !errors.Is(err, storage.ErrConflict) {
		t.Fatalf("a transaction that is always late: %v, want ErrConflict", err)
	}
	err = s.View(ctx, func(r storage.Reader) error {
		if _, err := r.Get([]byte("late")); !errors.Is(err, storage.ErrNotFound) {
			t.Errorf("the late write: %v, want ErrNotFound", err)
		}
		_, err := r.Get([]byte("in-time"))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A gateway may run as a user that reads and writes Mayfly's tables but
// may not create tables, once their owner has made them.
func TestUserWithoutCreateRights(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	s, err := pgstore.Open(ctx, pgstore.Options{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	_ = s.Close()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	role := "gw_" + strconv.FormatInt(time.Now().UnixNano(), 36)
	for _, stmt := range []string{
		`CREATE ROLE ` + role + ` LOGIN`,
		`REVOKE CREATE ON SCHEMA public FROM PUBLIC`,
		`GRANT SELECT, INSERT, UPDATE, DELETE ON mayfly_meta, mayfly_kv TO ` + role,
	} {
		if _, err := conn.Exec(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	t.Cleanup(func() {
		ctx := context.Background()
		if conn, err := pgx.Connect(ctx, url); err == nil {
			_, _ = conn.Exec(ctx, `DROP OWNED BY `+role)
			_, _ = conn.Exec(ctx, `DROP ROLE `+role)
			_ = conn.Close(ctx)
		}
	})
	limited := strings.Replace(url, "mayfly@", role+"@", 1)
	if limited == url {
		t.Skip("the test server's URL names no user to replace")
	}
	s, err = pgstore.Open(ctx, pgstore.Options{URL: limited})
	if err != nil {
		t.Fatalf("open as a user without CREATE rights: %v", err)
	}
	defer s.Close()
	if err := s.Update(ctx, func(tx storage.Txn) error { return tx.Set([]byte("k"), []byte("v")) }); err != nil {
		t.Fatalf("a write as that user: %v", err)
	}
}
