package integration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/mayfly-db/mayfly/internal/clock"
	"github.com/mayfly-db/mayfly/internal/server"
	"github.com/mayfly-db/mayfly/internal/storage/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// gateways starts n servers over one new PostgreSQL database, the i-th
// with its own clock skewed by skews[i] when given.
func gateways(t *testing.T, n int, skews ...time.Duration) []*env {
	t.Helper()
	url := pgtest.URL(t)
	var out []*env
	for i := range n {
		out = append(out, start(t, func(c *server.Config) {
			c.InMemory, c.Postgres, c.DataDir = false, url, t.TempDir()
			if i < len(skews) {
				c.Clock = clock.Skewed{Clock: clock.Real{}, Offset: skews[i]}
			}
		}))
	}
	return out
}

func containerOn(t *testing.T, e *env, db, coll string) *azcosmos.ContainerClient {
	t.Helper()
	c, err := e.client.NewContainer(db, coll)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

type gwItem struct {
	ID   string `json:"id"`
	PK   string `json:"pk"`
	N    int    `json:"n"`
	Rid  string `json:"_rid,omitempty"`
	Etag string `json:"_etag,omitempty"`
	U    string `json:"u,omitempty"`
}

// Writes through one gateway are read through the others at once; rids
// and etags made by different gateways never collide; the change feed of
// any gateway holds every write once; unique keys hold across gateways.
func TestGatewaysOverOneStoreAreOneDatabase(t *testing.T) {
	gw := gateways(t, 3)
	ctx := context.Background()
	db := gw[0].database("db")
	gw[0].containerJSON(db, "c", `"partitionKey":{"paths":["/pk"],"kind":"Hash"},"uniqueKeyPolicy":{"uniqueKeys":[{"paths":["/u"]}]},`+
		`"changeFeedPolicy":{"retentionDuration":60}`)
	cs := []*azcosmos.ContainerClient{containerOn(t, gw[0], "db", "c"), containerOn(t, gw[1], "db", "c"), containerOn(t, gw[2], "db", "c")}
	pk := azcosmos.NewPartitionKeyString("p")

	// Read-your-writes across gateways.
	if _, err := cs[1].CreateItem(ctx, pk, mustJSON(t, gwItem{ID: "a", PK: "p", N: 1, U: "a"}), nil); err != nil {
		t.Fatal(err)
	}
	for i, c := range cs {
		if _, err := c.ReadItem(ctx, pk, "a", nil); err != nil {
			t.Fatalf("gateway %d reads the item gateway 1 wrote: %v", i, err)
		}
	}
	if _, err := cs[2].ReplaceItem(ctx, pk, "a", mustJSON(t, gwItem{ID: "a", PK: "p", N: 2, U: "a"}), nil); err != nil {
		t.Fatal(err)
	}
	r, err := cs[0].ReadItem(ctx, pk, "a", nil)
	if err != nil {
		t.Fatal(err)
	}
	var got gwItem
	_ = json.Unmarshal(r.Value, &got)
	if got.N != 2 {
		t.Fatalf("gateway 0 reads n=%d after gateway 2 replaced it with 2", got.N)
	}

	// Concurrent creates through every gateway.
	const each = 20
	var wg sync.WaitGroup
	errs := make(chan error, 3*each)
	for g, c := range cs {
		wg.Go(func() {
			for i := range each {
				_, err := c.CreateItem(ctx, pk, mustJSON(t, gwItem{ID: fmt.Sprintf("g%d-%d", g, i), PK: "p", N: i, U: fmt.Sprintf("g%d-%d", g, i)}), nil)
				if err != nil {
					errs <- fmt.Errorf("gateway %d create %d: %w", g, i, err)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	rids, etags := map[string]string{}, map[string]string{}
	pager := cs[1].NewQueryItemsPager("SELECT * FROM c", pk, nil)
	n := 0
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, raw := range page.Items {
			var it gwItem
			_ = json.Unmarshal(raw, &it)
			if other, dup := rids[it.Rid]; dup {
				t.Fatalf("_rid %s of %s and %s", it.Rid, it.ID, other)
			}
			if other, dup := etags[it.Etag]; dup {
				t.Fatalf("_etag %s of %s and %s", it.Etag, it.ID, other)
			}
			rids[it.Rid], etags[it.Etag] = it.ID, it.ID
			n++
		}
	}
	if n != 1+3*each {
		t.Fatalf("%d items, want %d", n, 1+3*each)
	}

	// Unique keys across gateways: one create of a value wins.
	won := make(chan int, 3)
	for g, c := range cs {
		wg.Go(func() {
			_, err := c.CreateItem(ctx, pk, mustJSON(t, gwItem{ID: fmt.Sprintf("u%d", g), PK: "p", U: "same"}), nil)
			var re *azcore.ResponseError
			switch {
			case err == nil:
				won <- g
			case errors.As(err, &re) && re.StatusCode == http.StatusConflict:
			default:
				t.Errorf("gateway %d unique create: %v", g, err)
			}
		})
	}
	wg.Wait()
	close(won)
	if len(won) != 1 {
		t.Fatalf("%d creates of one unique value succeeded, want 1", len(won))
	}

	// The change feed through any gateway holds every write once: the
	// latest version of each item, and every version with its own LSN.
	items := 1 + 3*each + 1
	latest, _ := gw[2].drain(t, "c", false, "", nil)
	ids := map[string]bool{}
	for _, d := range latest {
		id, _ := d["id"].(string)
		if ids[id] {
			t.Fatalf("item %s twice in the change feed", id)
		}
		ids[id] = true
	}
	if len(ids) != items {
		t.Fatalf("change feed: %d items, want %d", len(ids), items)
	}
	all, _ := gw[0].drain(t, "c", true, "", nil)
	lsns := map[int64]bool{}
	for _, d := range all {
		lsn := num(meta(d)["lsn"])
		if lsns[lsn] {
			t.Fatalf("LSN %d twice in the all-versions feed", lsn)
		}
		lsns[lsn] = true
	}
	if len(all) != items+1 {
		t.Fatalf("all-versions feed: %d records, want %d (every create and the replace)", len(all), items+1)
	}
}

// Deleting a container through one gateway and creating it again with
// another partition key path is what the other gateways serve next.
func TestGatewaysSeeContainerRecreated(t *testing.T) {
	gw := gateways(t, 2)
	ctx := context.Background()
	db := gw[0].database("db")
	gw[0].container(db, azcosmos.ContainerProperties{ID: "c", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}}})
	c1 := containerOn(t, gw[1], "db", "c")
	if _, err := c1.CreateItem(ctx, azcosmos.NewPartitionKeyString("p"), mustJSON(t, gwItem{ID: "a", PK: "p"}), nil); err != nil {
		t.Fatal(err)
	}
	c0 := containerOn(t, gw[0], "db", "c")
	if _, err := c0.Delete(ctx, nil); err != nil {
		t.Fatal(err)
	}
	gw[0].container(db, azcosmos.ContainerProperties{ID: "c", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/other"}}})
	if _, err := c1.ReadItem(ctx, azcosmos.NewPartitionKeyString("p"), "a", nil); err == nil {
		t.Fatal("gateway 1 still serves an item of the dropped container")
	}
	raw := gw[1].do(http.MethodGet, "/dbs/db/colls/c", nil, nil)
	var props struct {
		PartitionKey struct{ Paths []string } `json:"partitionKey"`
	}
	_ = json.Unmarshal(raw.body, &props)
	if raw.status != http.StatusOK || len(props.PartitionKey.Paths) != 1 || props.PartitionKey.Paths[0] != "/other" {
		t.Fatalf("gateway 1 reads the recreated container as %d %s", raw.status, raw.body)
	}
}

// Two gateways whose own clocks are 7 s apart judge every expiry alike:
// by the database's clock (ttl.md A6, B6).
func TestSkewedGatewaysAgreeOnExpiry(t *testing.T) {
	gw := gateways(t, 2, 7*time.Second, -7*time.Second)
	ctx := context.Background()
	db := gw[0].database("db")
	ttl := int32(-1)
	gw[0].container(db, azcosmos.ContainerProperties{ID: "c", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}}, DefaultTimeToLive: &ttl})
	pk := azcosmos.NewPartitionKeyString("p")
	start := time.Now()
	if _, err := containerOn(t, gw[1], "db", "c").CreateItem(ctx, pk, []byte(`{"id":"x","pk":"p","ttl":3}`), nil); err != nil {
		t.Fatal(err)
	}
	visible := func(g int) bool {
		_, err := containerOn(t, gw[g], "db", "c").ReadItem(ctx, pk, "x", nil)
		var re *azcore.ResponseError
		if errors.As(err, &re) && re.StatusCode == http.StatusNotFound {
			return false
		}
		if err != nil {
			t.Fatal(err)
		}
		return true
	}
	if time.Since(start) < 2*time.Second {
		for g := range gw {
			if !visible(g) {
				t.Fatalf("gateway %d (clock skewed %v) sees the item expired within its ttl", g, []time.Duration{7 * time.Second, -7 * time.Second}[g])
			}
		}
	}
	time.Sleep(time.Until(start.Add(4500 * time.Millisecond)))
	for g := range gw {
		if visible(g) {
			t.Fatalf("gateway %d sees the item after its ttl", g)
		}
	}
}
