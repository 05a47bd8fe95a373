package integration

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/mayfly-db/mayfly/internal/server"
)

func withPartitions(n int) envOption {
	return func(cfg *server.Config) { cfg.Partitions = n }
}

// With several partition key ranges, every item lives in exactly one range
// (by its effective partition key), the ranges tile ""–"FF", and the SDK's
// per-range paths (read-many, cross-partition queries) see every item once.
func TestSeveralPartitionKeyRanges(t *testing.T) {
	e := start(t, withPartitions(4))
	db := e.database("db")
	c := e.container(db, azcosmos.ContainerProperties{ID: "c", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}, Version: 2}})
	const n = 80
	for i := 0; i < n; i++ {
		pk := fmt.Sprintf("p%d", i)
		if _, err := c.CreateItem(ctx, azcosmos.NewPartitionKeyString(pk), []byte(fmt.Sprintf(`{"id":"%d","pk":"%s","n":%d}`, i, pk, i)), nil); err != nil {
			t.Fatal(err)
		}
	}
	r := e.do("GET", "/dbs/db/colls/c/pkranges", nil, nil)
	var ranges struct {
		PartitionKeyRanges []struct {
			ID           string `json:"id"`
			MinInclusive string `json:"minInclusive"`
			MaxExclusive string `json:"maxExclusive"`
		}
	}
	if err := json.Unmarshal(r.body, &ranges); err != nil || len(ranges.PartitionKeyRanges) != 4 {
		t.Fatalf("pkranges: %s", r.body)
	}
	prev := ""
	seen := map[string]string{}
	for _, rg := range ranges.PartitionKeyRanges {
		if rg.MinInclusive != prev {
			t.Fatalf("ranges do not tile: %s", r.body)
		}
		prev = rg.MaxExclusive
		// Each range's feed holds only its own items.
		f := e.do("GET", "/dbs/db/colls/c/docs", nil, map[string]string{"x-ms-documentdb-partitionkeyrangeid": rg.ID, "x-ms-max-item-count": "-1"})
		var page struct{ Documents []struct{ ID string } }
		if err := json.Unmarshal(f.body, &page); err != nil {
			t.Fatal(err)
		}
		if len(page.Documents) == 0 || len(page.Documents) == n {
			t.Errorf("range %s holds %d of %d items; hashing does not spread them", rg.ID, len(page.Documents), n)
		}
		for _, d := range page.Documents {
			if other, dup := seen[d.ID]; dup {
				t.Fatalf("item %s in ranges %s and %s", d.ID, other, rg.ID)
			}
			seen[d.ID] = rg.ID
		}
		// The range's pages, and the responses on its items, name it in
		// their session tokens and range headers, as a client files them.
		q := e.do("POST", "/dbs/db/colls/c/docs", []byte(`{"query":"SELECT * FROM c"}`), map[string]string{"x-ms-documentdb-partitionkeyrangeid": rg.ID,
			"Content-Type": "application/query+json", "x-ms-documentdb-isquery": "true", "x-ms-documentdb-query-enablecrosspartition": "true"})
		for name, tok := range map[string]string{"feed": f.header.Get("x-ms-session-token"), "query": q.header.Get("x-ms-session-token")} {
			if !strings.HasPrefix(tok, rg.ID+":") {
				t.Errorf("range %s: the %s's session token is %q", rg.ID, name, tok)
			}
		}
		id := page.Documents[0].ID
		one := e.do("GET", "/dbs/db/colls/c/docs/"+id, nil, map[string]string{"x-ms-documentdb-partitionkey": `["p` + id + `"]`})
		if got := one.header.Get("x-ms-documentdb-partitionkeyrangeid"); got != rg.ID || !strings.HasPrefix(one.header.Get("x-ms-session-token"), rg.ID+":") {
			t.Errorf("item %s of range %s: range header %q, session token %q", id, rg.ID, got, one.header.Get("x-ms-session-token"))
		}
	}
	if prev != "FF" || len(seen) != n {
		t.Fatalf("ranges end at %q and hold %d items, want FF and %d", prev, len(seen), n)
	}
	if r := e.do("GET", "/dbs/db/colls/c/docs", nil, map[string]string{"x-ms-documentdb-partitionkeyrangeid": "9"}); r.status != 410 || r.header.Get("x-ms-substatus") != "1002" {
		t.Fatalf("unknown range: %d/%s, want 410/1002", r.status, r.header.Get("x-ms-substatus"))
	}

	// Read-many: the SDK groups ids by range and queries each range.
	var items []azcosmos.ItemIdentity
	for i := 0; i < n; i += 3 {
		items = append(items, azcosmos.ItemIdentity{ID: fmt.Sprint(i), PartitionKey: azcosmos.NewPartitionKeyString(fmt.Sprintf("p%d", i))})
	}
	rm, err := c.ReadManyItems(ctx, items, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rm.Items) != len(items) {
		t.Fatalf("read-many returned %d of %d items", len(rm.Items), len(items))
	}

	// A cross-partition query through the SDK sees every item once.
	if ids := crossIDs(t, c, "SELECT * FROM c WHERE c.n >= 40", nil); len(ids) != 40 {
		t.Fatalf("query returned %d items, want 40", len(ids))
	}

	// A list of partition keys, read partition by partition in each
	// range, a page of two rows at a time: every listed item once.
	ids := crossIDs(t, c, "SELECT * FROM c WHERE c.pk IN ('p3', 'p10', 'p41', 'p77', 'p5', 'none') AND c.n > 4", &azcosmos.QueryOptions{PageSizeHint: 2})
	if want := []string{"10", "41", "5", "77"}; !slices.Equal(ids, want) {
		t.Fatalf("a list of keys: %v, want %v", ids, want)
	}
}

// crossIDs drains query q across c's partitions through the SDK and
// returns the ids of its rows, sorted.
func crossIDs(t *testing.T, c *azcosmos.ContainerClient, q string, opts *azcosmos.QueryOptions) []string {
	t.Helper()
	var rows [][]byte
	pager := c.NewQueryItemsPager(q, azcosmos.NewPartitionKey(), opts)
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			t.Fatalf("query %q: %v", q, err)
		}
		rows = append(rows, page.Items...)
	}
	ids := idsOf(t, rows)
	sort.Strings(ids)
	return ids
}

// The SDK's read-many of several ids of one partition key sends one query
// of them (c.pk = @pk0 AND c.id IN (…)): each id is read by its entry,
// and the charge is that of the items read, not of the partition's.
func TestReadManyOfOneKeyReadsItsIDs(t *testing.T) {
	e := start(t)
	db := e.database("db")
	c := e.container(db, azcosmos.ContainerProperties{ID: "c", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}, Version: 2}})
	pk := azcosmos.NewPartitionKeyString("a")
	for i := range 200 {
		if _, err := c.CreateItem(ctx, pk, []byte(fmt.Sprintf(`{"id":"%d","pk":"a","n":%d}`, i, i)), nil); err != nil {
			t.Fatal(err)
		}
	}
	var items []azcosmos.ItemIdentity
	for _, id := range []string{"150", "7", "none", "42"} {
		items = append(items, azcosmos.ItemIdentity{ID: id, PartitionKey: pk})
	}
	rm, err := c.ReadManyItems(ctx, items, nil)
	if err != nil {
		t.Fatal(err)
	}
	ids := idsOf(t, rm.Items)
	sort.Strings(ids)
	if !slices.Equal(ids, []string{"150", "42", "7"}) {
		t.Fatalf("read-many returned %v", ids)
	}
	one, err := c.ReadItem(ctx, pk, "7", nil)
	if err != nil {
		t.Fatal(err)
	}
	// Three records and four entries; the partition's 200 records cost
	// several times as much.
	if rm.RequestCharge > 4*one.RequestCharge {
		t.Errorf("read-many of 3 items charged %.2f RU, a point read %.2f", rm.RequestCharge, one.RequestCharge)
	}
	t.Logf("read-many %.2f RU, point read %.2f RU", rm.RequestCharge, one.RequestCharge)
}
