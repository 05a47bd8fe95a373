package integration

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/mayfly-db/mayfly/internal/server"
)

// TestServiceDefaults: what the service fills in when a client does not
// say — a container's own 400 RU/s offer, and partition key ranges that
// follow the throughput asked for at creation.
func TestServiceDefaults(t *testing.T) {
	e := start(t)
	ctx := t.Context()
	db := e.database("db")
	pk := azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}}
	e.container(db, azcosmos.ContainerProperties{ID: "plain", PartitionKeyDefinition: pk})
	for _, tc := range []struct {
		id      string
		version int
		ru      int32
	}{{"ru18k", 2, 18000}, {"ru30k", 2, 30000}, {"v1ru18k", 1, 18000}} {
		tp := azcosmos.NewManualThroughputProperties(tc.ru)
		def := azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}, Version: tc.version}
		if _, err := db.CreateContainer(ctx, azcosmos.ContainerProperties{ID: tc.id, PartitionKeyDefinition: def}, &azcosmos.CreateContainerOptions{ThroughputProperties: &tp}); err != nil {
			t.Fatal(err)
		}
	}
	tp := azcosmos.NewManualThroughputProperties(1000)
	if _, err := e.client.CreateDatabase(ctx, azcosmos.DatabaseProperties{ID: "shared"}, &azcosmos.CreateDatabaseOptions{ThroughputProperties: &tp}); err != nil {
		t.Fatal(err)
	}
	shared, _ := e.client.NewDatabase("shared")
	e.container(shared, azcosmos.ContainerProperties{ID: "inshared", PartitionKeyDefinition: pk})

	var offers struct {
		Offers []struct {
			Resource        string `json:"resource"`
			OfferResourceID string `json:"offerResourceId"`
			Content         struct {
				OfferThroughput int `json:"offerThroughput"`
			} `json:"content"`
		}
	}
	r := e.do("GET", "/offers", nil, nil)
	if err := json.Unmarshal(r.body, &offers); r.status != 200 || err != nil {
		t.Fatalf("offers: %d %s %v", r.status, r.body, err)
	}
	throughputOf := map[string]int{}
	for _, o := range offers.Offers {
		throughputOf[o.OfferResourceID] = o.Content.OfferThroughput
	}
	ridOf := func(path string) string {
		var res struct {
			Rid string `json:"_rid"`
		}
		r := e.do("GET", path, nil, nil)
		if err := json.Unmarshal(r.body, &res); r.status != 200 || err != nil {
			t.Fatalf("GET %s: %d %s", path, r.status, r.body)
		}
		return res.Rid
	}
	if got := throughputOf[ridOf("/dbs/db/colls/plain")]; got != 400 {
		t.Errorf("container without throughput: offer of %d RU/s, want 400", got)
	}
	if got, ok := throughputOf[ridOf("/dbs/shared/colls/inshared")]; ok {
		t.Errorf("container in a database with shared throughput has its own offer of %d RU/s", got)
	}

	for coll, want := range map[string]int{"plain": 1, "ru18k": 3, "ru30k": 5, "v1ru18k": 3} {
		var ranges struct {
			PartitionKeyRanges []struct{ ID string } `json:"PartitionKeyRanges"`
		}
		r := e.do("GET", "/dbs/db/colls/"+coll+"/pkranges", nil, nil)
		if err := json.Unmarshal(r.body, &ranges); r.status != 200 || err != nil {
			t.Fatalf("pkranges of %s: %d %s", coll, r.status, r.body)
		}
		if got := len(ranges.PartitionKeyRanges); got != want {
			t.Errorf("%s: %d partition key ranges, want %d", coll, got, want)
		}
	}

	// The SDK reads and queries across the three ranges.
	c, _ := db.NewContainer("ru18k")
	for i := range 30 {
		body, _ := json.Marshal(map[string]any{"id": string(rune('a'+i%26)) + string(rune('0'+i/26)), "pk": i})
		if _, err := c.CreateItem(ctx, azcosmos.NewPartitionKeyNumber(float64(i)), body, nil); err != nil {
			t.Fatal(err)
		}
	}
	pager := c.NewQueryItemsPager("SELECT c.id FROM c", azcosmos.NewPartitionKey(), nil)
	total := 0
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		total += len(page.Items)
	}
	if total != 30 {
		t.Errorf("cross-partition query over three ranges returned %d items, want 30", total)
	}
}

// TestPartitionKeyExtraction: a partition key path that leads to an object
// or an array is undefined for the service, not an error, and paths with
// quoted segments work.
func TestPartitionKeyExtraction(t *testing.T) {
	e := start(t)
	db := e.database("db")
	e.container(db, azcosmos.ContainerProperties{ID: "c", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}}})
	e.container(db, azcosmos.ContainerProperties{ID: "q", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{`/"a b"/c`}}})
	for _, tc := range []struct{ coll, body, header string }{
		{"c", `{"id":"obj","pk":{"x":1}}`, `[{}]`},
		{"c", `{"id":"arr","pk":[1,2]}`, `[{}]`},
		{"c", `{"id":"none"}`, `[{}]`},
		{"q", `{"id":"quoted","a b":{"c":"v"}}`, `["v"]`},
	} {
		r := e.do("POST", "/dbs/db/colls/"+tc.coll+"/docs", []byte(tc.body), map[string]string{"x-ms-documentdb-partitionkey": tc.header})
		if r.status != 201 {
			t.Errorf("create %s with partition key %s: %d %s", tc.body, tc.header, r.status, r.body)
			continue
		}
		var doc struct{ ID string }
		_ = json.Unmarshal([]byte(tc.body), &doc)
		r = e.do("GET", "/dbs/db/colls/"+tc.coll+"/docs/"+doc.ID, nil, map[string]string{"x-ms-documentdb-partitionkey": tc.header})
		if r.status != 200 {
			t.Errorf("read %s with partition key %s: %d %s", doc.ID, tc.header, r.status, r.body)
		}
	}
}

// TestContainerAndItemHeaders: the legacy indexes array of an included
// path is accepted and, as the service ignores it, not returned; container reads carry the index
// transformation progress; item responses carry both content paths.
func TestContainerAndItemHeaders(t *testing.T) {
	e := start(t)
	e.database("db")
	policy := `{"indexingMode":"consistent","automatic":true,"includedPaths":[{"path":"/*","indexes":[{"kind":"Range","dataType":"Number","precision":-1},{"kind":"Hash","dataType":"String","precision":3}]}],"excludedPaths":[]}`
	r := e.do("POST", "/dbs/db/colls", []byte(`{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash"},"indexingPolicy":`+policy+`}`), nil)
	if r.status != 201 {
		t.Fatalf("create with legacy indexes: %d %s", r.status, r.body)
	}
	r = e.do("GET", "/dbs/db/colls/c", nil, nil)
	var props struct {
		Rid            string `json:"_rid"`
		IndexingPolicy struct {
			IncludedPaths []struct {
				Path    string
				Indexes []struct{ Kind, DataType string }
			}
		}
	}
	if err := json.Unmarshal(r.body, &props); err != nil || r.status != 200 {
		t.Fatalf("read: %d %s", r.status, r.body)
	}
	if ip := props.IndexingPolicy.IncludedPaths; len(ip) != 1 || ip[0].Path != "/*" || ip[0].Indexes != nil {
		t.Errorf("included paths: want /* without the legacy indexes: %s", r.body)
	}
	if got := r.header.Get("x-ms-documentdb-collection-index-transformation-progress"); got != "100" {
		t.Errorf("index transformation progress %q, want 100", got)
	}
	r = e.do("POST", "/dbs/db/colls/c/docs", []byte(`{"id":"x","pk":"p"}`), map[string]string{"x-ms-documentdb-partitionkey": `["p"]`})
	if r.status != 201 {
		t.Fatalf("create item: %d %s", r.status, r.body)
	}
	for _, method := range []string{"POST", "GET"} {
		if method == "GET" {
			r = e.do("GET", "/dbs/db/colls/c/docs/x", nil, map[string]string{"x-ms-documentdb-partitionkey": `["p"]`})
		}
		if got := r.header.Get("x-ms-alt-content-path"); got != "dbs/db/colls/c" {
			t.Errorf("%s item: x-ms-alt-content-path %q, want dbs/db/colls/c", method, got)
		}
		if got := r.header.Get("x-ms-content-path"); got != props.Rid {
			t.Errorf("%s item: x-ms-content-path %q, want %s", method, got, props.Rid)
		}
	}
}

// TestLegacyRootIndexPath: "/", the root path of DocumentDB-era indexing
// policies, indexes the whole document as "/*" does, so ORDER BY on any
// property works, and the policy comes back with "/*".
func TestLegacyRootIndexPath(t *testing.T) {
	e := start(t)
	e.database("db")
	policy := `{"includedPaths":[{"path":"/","indexes":[{"kind":"Range","dataType":"Number"},{"kind":"Range","dataType":"String"}]}]}`
	r := e.do("POST", "/dbs/db/colls", []byte(`{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash"},"indexingPolicy":`+policy+`}`), nil)
	if r.status != 201 {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	var props struct {
		IndexingPolicy struct{ IncludedPaths []struct{ Path string } }
	}
	if err := json.Unmarshal(r.body, &props); err != nil || len(props.IndexingPolicy.IncludedPaths) != 1 || props.IndexingPolicy.IncludedPaths[0].Path != "/*" {
		t.Errorf("included paths: %s", r.body)
	}
	pk := map[string]string{"x-ms-documentdb-partitionkey": `["p"]`}
	for _, doc := range []string{`{"id":"a","pk":"p","n":2}`, `{"id":"b","pk":"p","n":1}`} {
		if r := e.do("POST", "/dbs/db/colls/c/docs", []byte(doc), pk); r.status != 201 {
			t.Fatalf("create %s: %d %s", doc, r.status, r.body)
		}
	}
	r = e.do("POST", "/dbs/db/colls/c/docs", []byte(`{"query":"SELECT VALUE c.id FROM c ORDER BY c.n"}`), map[string]string{
		"Content-Type": "application/query+json", "x-ms-documentdb-isquery": "true", "x-ms-documentdb-partitionkey": `["p"]`})
	if r.status != 200 || !strings.Contains(string(r.body), `"Documents":["b","a"]`) {
		t.Errorf("ORDER BY under the root path: %d %s", r.status, r.body)
	}
}

// TestConflictsFeed: the conflicts feed of a container is empty (200),
// also as a query; it is 404 for a container that does not exist. A
// conflict read or deleted without its partition key is a 400.
func TestConflictsFeed(t *testing.T) {
	e := start(t)
	db := e.database("db")
	e.container(db, azcosmos.ContainerProperties{ID: "c", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}}})
	for _, tc := range []struct {
		method, path string
		body         []byte
		headers      map[string]string
		want         int
	}{
		{"GET", "/dbs/db/colls/c/conflicts", nil, nil, 200},
		{"POST", "/dbs/db/colls/c/conflicts", []byte(`{"query":"SELECT * FROM root r"}`), map[string]string{"Content-Type": "application/query+json", "x-ms-documentdb-isquery": "true"}, 200},
		{"GET", "/dbs/db/colls/missing/conflicts", nil, nil, 404},
		{"GET", "/dbs/db/colls/c/conflicts/x", nil, map[string]string{"x-ms-documentdb-partitionkey": `["x"]`}, 404},
		{"DELETE", "/dbs/db/colls/c/conflicts/x", nil, map[string]string{"x-ms-documentdb-partitionkey": `["x"]`}, 404},
		// A conflict is addressed in its logical partition, as an item is.
		{"GET", "/dbs/db/colls/c/conflicts/x", nil, nil, 400},
		{"DELETE", "/dbs/db/colls/c/conflicts/x", nil, nil, 400},
		{"DELETE", "/dbs/db/colls/c/conflicts/x", nil, map[string]string{"x-ms-documentdb-partitionkey": `[x`}, 400},
	} {
		r := e.do(tc.method, tc.path, tc.body, tc.headers)
		if r.status != tc.want {
			t.Errorf("%s %s: %d %s, want %d", tc.method, tc.path, r.status, r.body, tc.want)
			continue
		}
		if tc.want == 200 {
			var feed struct {
				Conflicts []json.RawMessage
				Count     int `json:"_count"`
			}
			if err := json.Unmarshal(r.body, &feed); err != nil || feed.Conflicts == nil || feed.Count != 0 {
				t.Errorf("%s %s: body %s", tc.method, tc.path, r.body)
			}
		}
	}
}

// TestAccountConsistency: the account reports the configured default
// consistency, and an unknown level is refused at start.
func TestAccountConsistency(t *testing.T) {
	e := start(t, func(cfg *server.Config) { cfg.Consistency = "Strong" })
	var account struct {
		UserConsistencyPolicy struct{ DefaultConsistencyLevel string }
	}
	r := e.do("GET", "/", nil, nil)
	if err := json.Unmarshal(r.body, &account); err != nil || account.UserConsistencyPolicy.DefaultConsistencyLevel != "Strong" {
		t.Errorf("account: %d %s", r.status, r.body)
	}
	if _, err := server.New(server.Config{InMemory: true, Consistency: "Sometimes"}); err == nil {
		t.Error("an unknown consistency level was accepted")
	}
}

// TestPartitionStatistics: a container read with
// x-ms-documentdb-populatepartitionstatistics carries "statistics", one
// entry per partition key range whose counts add up to the container's.
func TestPartitionStatistics(t *testing.T) {
	e := start(t)
	e.database("db")
	if r := e.do("POST", "/dbs/db/colls", []byte(`{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2}}`),
		map[string]string{"x-ms-offer-throughput": "24000"}); r.status != 201 {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	for i := range 40 {
		pk := fmt.Sprintf("p%d", i)
		if r := e.do("POST", "/dbs/db/colls/c/docs", []byte(fmt.Sprintf(`{"id":"x","pk":%q,"pad":"%0500d"}`, pk, i)),
			map[string]string{"x-ms-documentdb-partitionkey": fmt.Sprintf(`[%q]`, pk)}); r.status != 201 {
			t.Fatalf("create item: %d %s", r.status, r.body)
		}
	}
	if r := e.do("GET", "/dbs/db/colls/c", nil, nil); strings.Contains(string(r.body), `"statistics"`) {
		t.Errorf("statistics without asking: %s", r.body)
	}
	r := e.do("GET", "/dbs/db/colls/c", nil, map[string]string{"x-ms-documentdb-populatepartitionstatistics": "true"})
	var props struct {
		Statistics []struct {
			ID            string
			SizeInKB      int64
			DocumentCount int64
			PartitionKeys []any
		}
	}
	if err := json.Unmarshal(r.body, &props); err != nil || r.status != 200 {
		t.Fatalf("read: %d %s", r.status, r.body)
	}
	var count, size int64
	nonEmpty := 0
	for i, st := range props.Statistics {
		if st.ID != strconv.Itoa(i) || st.PartitionKeys == nil {
			t.Errorf("statistics[%d] = %+v", i, st)
		}
		count += st.DocumentCount
		size += st.SizeInKB
		if st.DocumentCount > 0 {
			nonEmpty++
		}
	}
	if len(props.Statistics) != 4 || count != 40 || nonEmpty < 2 || size < 10 {
		t.Errorf("statistics of 40 items of about 0.5 KB over 4 ranges: %s", r.body)
	}
}

// TestOfferReplaceChecksIds: a replace of an offer whose body names
// another offer, by id or _rid, or names none (null), is a 400; the offer
// read back and sent again replaces it.
func TestOfferReplaceChecksIds(t *testing.T) {
	e := start(t)
	e.database("db")
	if r := e.do("POST", "/dbs/db/colls", []byte(`{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2}}`),
		map[string]string{"x-ms-offer-throughput": "400"}); r.status != 201 {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	var feed struct{ Offers []map[string]any }
	if r := e.do("GET", "/offers", nil, nil); json.Unmarshal(r.body, &feed) != nil || len(feed.Offers) != 1 {
		t.Fatalf("offers: %d %s", r.status, r.body)
	}
	offer := feed.Offers[0]
	rid := offer["_rid"].(string)
	offer["content"] = map[string]any{"offerThroughput": 500}
	for _, tc := range []struct {
		name string
		edit func(map[string]any)
		want int
	}{
		{"another _rid", func(o map[string]any) { o["_rid"] = "NotAllowed" }, 400},
		{"another id", func(o map[string]any) { o["id"] = "InvalidRid" }, 400},
		{"null id and _rid", func(o map[string]any) { o["id"], o["_rid"] = nil, nil }, 400},
		{"the offer as read", func(map[string]any) {}, 200},
	} {
		o := map[string]any{}
		for k, v := range offer {
			o[k] = v
		}
		tc.edit(o)
		body, _ := json.Marshal(o)
		if r := e.doRid("PUT", "/offers/"+rid, rid, body, nil); r.status != tc.want {
			t.Errorf("%s: %d %s, want %d", tc.name, r.status, r.body, tc.want)
		}
	}
}

// TestOfferMigrationHeaders: an offer changes between manual and
// autoscale only through the service's migration headers; a plain
// replace that would change it is a 400 with the service's message.
func TestOfferMigrationHeaders(t *testing.T) {
	e := start(t)
	e.database("db")
	if r := e.do("POST", "/dbs/db/colls", []byte(`{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2}}`),
		map[string]string{"x-ms-offer-throughput": "2400"}); r.status != 201 {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	var feed struct{ Offers []map[string]any }
	if r := e.do("GET", "/offers", nil, nil); json.Unmarshal(r.body, &feed) != nil || len(feed.Offers) != 1 {
		t.Fatalf("offers: %d %s", r.status, r.body)
	}
	rid := feed.Offers[0]["_rid"].(string)
	// At creation: one kind of throughput, and autoscale only with a
	// partition key (the service's create references).
	both := map[string]string{"x-ms-offer-throughput": "400", "x-ms-cosmos-offer-autopilot-settings": `{"maxThroughput":4000}`}
	autoscale := map[string]string{"x-ms-cosmos-offer-autopilot-settings": `{"maxThroughput":4000}`}
	for _, c := range []struct {
		path, body string
		headers    map[string]string
	}{
		{"/dbs", `{"id":"both"}`, both},
		{"/dbs/db/colls", `{"id":"both","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2}}`, both},
		{"/dbs/db/colls", `{"id":"nokey"}`, autoscale},
	} {
		if r := e.do("POST", c.path, []byte(c.body), c.headers); r.status != 400 {
			t.Errorf("create %s in %s with %v: %d %s, want 400", c.body, c.path, c.headers, r.status, r.body)
		}
	}
	toAuto := map[string]string{"x-ms-cosmos-migrate-offer-to-autopilot": "true"}
	toManual := map[string]string{"x-ms-cosmos-migrate-offer-to-manual-throughput": "true"}
	for _, tc := range []struct {
		name, content string
		headers       map[string]string
		status        int
		want          string
	}{
		{"autoscale by a plain replace", `{"offerAutopilotSettings":{"maxThroughput":4000}}`, nil, 400, "x-ms-cosmos-migrate-offer-to-autopilot must be supplied"},
		{"both headers", `{"offerThroughput":400}`, map[string]string{"x-ms-cosmos-migrate-offer-to-autopilot": "true", "x-ms-cosmos-migrate-offer-to-manual-throughput": "true"}, 400, "not both"},
		{"to autoscale", `{"offerThroughput":400}`, toAuto, 200, `"maxThroughput":2000`},
		{"manual by a plain replace", `{"offerThroughput":400}`, nil, 400, "x-ms-cosmos-migrate-offer-to-manual-throughput must be supplied"},
		{"autoscale maximum", `{"offerAutopilotSettings":{"maxThroughput":6000}}`, nil, 200, `"maxThroughput":6000`},
		{"to manual", `{"offerAutopilotSettings":{"maxThroughput":6000}}`, toManual, 200, `"offerThroughput":6000`},
	} {
		body := []byte(`{"id":"` + rid + `","_rid":"` + rid + `","content":` + tc.content + `}`)
		r := e.doRid("PUT", "/offers/"+rid, rid, body, tc.headers)
		if r.status != tc.status || !strings.Contains(string(r.body), tc.want) {
			t.Errorf("%s: %d %s, want %d with %s", tc.name, r.status, r.body, tc.status, tc.want)
		}
	}
}
