package integration

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/mayfly-db/mayfly/internal/server"
)

// A full disk refuses writes with 507 and a Cosmos-style error, never a
// 500 or a hang; reads and queries go on; nothing of a refused write is
// stored; writes succeed again once space is freed.
func TestFullDiskAnswers507AndResumes(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a small filesystem takes root")
	}
	disk := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=48m", "tmpfs", disk).CombinedOutput(); err != nil {
		t.Fatalf("mount tmpfs: %v: %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", "-l", disk).Run() })
	filler := filepath.Join(disk, "filler")
	if err := os.WriteFile(filler, make([]byte, 16<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	e := start(t, func(c *server.Config) {
		c.InMemory, c.DataDir, c.DiskReserve = false, filepath.Join(disk, "data"), 8<<20
	})
	ctx := context.Background()
	db := e.database("full")
	c := e.container(db, azcosmos.ContainerProperties{ID: "c", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}}})
	pad := strings.Repeat("x", 100<<10)
	create := func(i int) error {
		body := fmt.Appendf(nil, `{"id":"i%d","pk":"p","pad":%q}`, i, pad)
		_, err := c.CreateItem(ctx, azcosmos.NewPartitionKeyString("p"), body, nil)
		return err
	}
	acked := 0
	var refused *azcore.ResponseError
	for i := 0; i < 1000 && refused == nil; i++ {
		err := create(i)
		if err == nil {
			acked++
			continue
		}
		if !errors.As(err, &refused) {
			t.Fatalf("create %d: %v", i, err)
		}
	}
	if refused == nil {
		t.Fatal("the disk never filled")
	}
	if refused.StatusCode != http.StatusInsufficientStorage {
		t.Fatalf("refused with %d, want 507", refused.StatusCode)
	}
	raw := e.do(http.MethodPost, "/dbs/full/colls/c/docs", []byte(`{"id":"raw","pk":"p"}`), map[string]string{"x-ms-documentdb-partitionkey": `["p"]`})
	if raw.status != http.StatusInsufficientStorage || !strings.Contains(string(raw.body), `"code":"InsufficientStorage"`) {
		t.Fatalf("raw create on a full disk: %d %s", raw.status, raw.body)
	}
	t.Logf("%d creates acknowledged before the 507", acked)
	if _, err := c.ReadItem(ctx, azcosmos.NewPartitionKeyString("p"), "i0", nil); err != nil {
		t.Fatalf("read on a full disk: %v", err)
	}
	if _, err := c.ReadItem(ctx, azcosmos.NewPartitionKeyString("p"), fmt.Sprintf("i%d", acked), nil); err == nil {
		t.Fatal("the refused create is visible")
	}
	pager := c.NewQueryItemsPager("SELECT VALUE COUNT(1) FROM c", azcosmos.NewPartitionKeyString("p"), nil)
	page, err := pager.NextPage(ctx)
	if err != nil {
		t.Fatalf("query on a full disk: %v", err)
	}
	if got := string(page.Items[0]); got != fmt.Sprint(acked) {
		t.Fatalf("COUNT = %s, want %d", got, acked)
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	if err := create(acked); err != nil {
		t.Fatalf("create after space came back: %v", err)
	}
}
