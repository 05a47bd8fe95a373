package integration

import (
	"context"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/mayfly-db/mayfly/internal/server"
	"github.com/mayfly-db/mayfly/internal/storage/pgtest"
)

// mayfly backup copies a running server's data; mayfly restore makes a
// data directory of it, which answers what the original answered at the
// backup's instant, except that items expired since stay expired.
func TestBackupAndRestore(t *testing.T) {
	bin := buildMayfly(t)
	dir := t.TempDir()
	const readOnlyKey = "cmVhZC1vbmx5IGtleSBvZiB0aGlzIHRlc3QsIHdoaWNoIG1heSByZWFkIGJ1dCBuZXZlciBiYWNrIHVw"
	p := startProcess(t, bin, filepath.Join(dir, "data"), "--read-only-key", readOnlyKey)
	e := connect(t, p)
	ctx := context.Background()
	ttlOn := int32(-1)
	c := e.container(e.database("db"), azcosmos.ContainerProperties{ID: "c", DefaultTimeToLive: &ttlOn,
		PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}}})
	pk := azcosmos.NewPartitionKeyString("p")
	put := func(body string) {
		t.Helper()
		if _, err := c.CreateItem(ctx, pk, []byte(body), nil); err != nil {
			t.Fatal(err)
		}
	}
	put(`{"id":"kept","pk":"p"}`)
	put(`{"id":"short","pk":"p","ttl":2}`)
	written := time.Now()

	run := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(bin, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("mayfly %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	backupDir := filepath.Join(dir, "backup")
	run("backup", "--endpoint", p.url, "--insecure", "--to", backupDir)
	// A second backup into the same directory, and one signed with
	// another key, are refused.
	if out, err := exec.Command(bin, "backup", "--endpoint", p.url, "--insecure", "--to", backupDir).CombinedOutput(); err == nil {
		t.Fatalf("a backup into an existing directory succeeded: %s", out)
	}
	otherKey := "dGhpcyBpcyBub3QgdGhlIGFjY291bnQga2V5IGF0IGFsbCwgaXQgaXMgYW5vdGhlciBvbmUgZW50aXJlbHk="
	if out, err := exec.Command(bin, "backup", "--endpoint", p.url, "--insecure", "--key", otherKey, "--to", filepath.Join(dir, "b2")).CombinedOutput(); err == nil || !strings.Contains(string(out), "401") {
		t.Fatalf("a backup signed with another key: %v %s", err, out)
	}
	// Nor into the store's own directory, whose files the store manages.
	if out, err := exec.Command(bin, "backup", "--endpoint", p.url, "--insecure", "--to", filepath.Join(dir, "data", "store", "bk")).CombinedOutput(); err == nil || !strings.Contains(string(out), "inside the store's own directory") {
		t.Fatalf("a backup into the store's directory: %v %s", err, out)
	}
	// A backup holds every item: a key that may only read cannot take one.
	if out, err := exec.Command(bin, "backup", "--endpoint", p.url, "--insecure", "--key", readOnlyKey, "--to", filepath.Join(dir, "b3")).CombinedOutput(); err == nil || !strings.Contains(string(out), "read-only key cannot") {
		t.Fatalf("a backup signed with the read-only key: %v %s", err, out)
	}
	put(`{"id":"after","pk":"p"}`)
	// "short" expires 2 s after it was written; the restored server starts
	// after that.
	time.Sleep(time.Until(written.Add(3 * time.Second)))
	p.stop(t)

	restored := filepath.Join(dir, "restored")
	run("restore", "--from", backupDir, "--data-dir", restored)
	if out, err := exec.Command(bin, "restore", "--from", backupDir, "--data-dir", restored).CombinedOutput(); err == nil {
		t.Fatalf("a restore over a store succeeded: %s", out)
	}
	r := connect(t, startProcess(t, bin, restored))
	rc, err := r.client.NewContainer("db", "c")
	if err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]int{"kept": http.StatusOK, "short": http.StatusNotFound, "after": http.StatusNotFound} {
		_, err := rc.ReadItem(ctx, pk, id, nil)
		got := http.StatusOK
		if err != nil {
			got = statusOf(err)
		}
		if got != want {
			t.Errorf("restored, read %s: %d (%v), want %d", id, got, err, want)
		}
	}
}

// A gateway over PostgreSQL backs up one snapshot of every key into a
// Pebble store; the backup restores into an empty PostgreSQL database and
// into a data directory alike.
func TestBackupOverPostgres(t *testing.T) {
	gw := gateways(t, 1)[0]
	ctx := context.Background()
	c := gw.container(gw.database("db"), azcosmos.ContainerProperties{ID: "c", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}}})
	pk := azcosmos.NewPartitionKeyString("p")
	for i := range 30 {
		if _, err := c.CreateItem(ctx, pk, []byte(`{"id":"i`+itoa(i)+`","pk":"p"}`), nil); err != nil {
			t.Fatal(err)
		}
	}
	dir := filepath.Join(t.TempDir(), "backup")
	if err := transferClient(t, gw).Backup(ctx, dir); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateItem(ctx, pk, []byte(`{"id":"after","pk":"p"}`), nil); err != nil {
		t.Fatal(err)
	}
	url := pgtest.URL(t)
	if err := server.RestoreToPostgres(ctx, dir, url); err != nil {
		t.Fatal(err)
	}
	if err := server.RestoreToPostgres(ctx, dir, url); err == nil {
		t.Fatal("a restore into a database holding data succeeded")
	}
	onPG := start(t, func(cfg *server.Config) { cfg.InMemory, cfg.Postgres, cfg.DataDir = false, url, t.TempDir() })
	dataDir := t.TempDir()
	if err := server.Restore(dir, dataDir); err != nil {
		t.Fatal(err)
	}
	onPebble := start(t, func(cfg *server.Config) { cfg.InMemory, cfg.DataDir = false, dataDir })
	for name, e := range map[string]*env{"PostgreSQL": onPG, "Pebble": onPebble} {
		rc := containerOn(t, e, "db", "c")
		if _, err := rc.ReadItem(ctx, pk, "i29", nil); err != nil {
			t.Errorf("restored into %s, i29: %v", name, err)
		}
		if _, err := rc.ReadItem(ctx, pk, "after", nil); statusOf(err) != http.StatusNotFound {
			t.Errorf("restored into %s, an item written after the backup: %v", name, err)
		}
	}
}
