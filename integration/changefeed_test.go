package integration

// The change feed through the Go SDK (latest-version mode, the only one it
// has) and through raw requests (both modes), and B5: every expiry is
// reported exactly once in the all-versions feed, never before it is due.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/mayfly-db/mayfly/internal/partition"
)

// cfPage is one raw change feed response.
type cfPage struct {
	status int
	etag   string
	header http.Header
	rid    string
	docs   []map[string]any
	raw    []byte
}

const wireFormat = "2021-09-15"

// changeFeed sends one change feed request for container coll of database
// "db". hdr adds or overrides headers ("" removes one).
func (e *env) changeFeed(t *testing.T, coll string, allVersions bool, hdr map[string]string) cfPage {
	t.Helper()
	h := map[string]string{"A-IM": "Incremental Feed", "x-ms-documentdb-partitionkeyrangeid": "0"}
	if allVersions {
		h["A-IM"] = "Full-Fidelity Feed"
		h["x-ms-cosmos-changefeed-wire-format-version"] = wireFormat
	}
	for k, v := range hdr {
		h[k] = v
	}
	r := e.do("GET", "/dbs/db/colls/"+coll+"/docs", nil, h)
	p := cfPage{status: r.status, etag: r.header.Get("etag"), header: r.header, raw: r.body}
	if r.status == http.StatusOK {
		var body struct {
			Rid       string           `json:"_rid"`
			Documents []map[string]any `json:"Documents"`
			Count     int              `json:"_count"`
		}
		if err := json.Unmarshal(r.body, &body); err != nil {
			t.Fatalf("change feed body %s: %v", r.body, err)
		}
		if body.Count != len(body.Documents) || r.header.Get("x-ms-item-count") != strconv.Itoa(body.Count) {
			t.Fatalf("_count %d, x-ms-item-count %q for %d documents", body.Count, r.header.Get("x-ms-item-count"), len(body.Documents))
		}
		p.rid, p.docs = body.Rid, body.Documents
	}
	return p
}

// drain reads a feed from etag ("" for the beginning) until a 304, and
// returns everything read and the final etag. All versions cannot start
// from the beginning: there "" stands for "0", where a reader that started
// from now on the new container stands.
func (e *env) drain(t *testing.T, coll string, allVersions bool, etag string, hdr map[string]string) ([]map[string]any, string) {
	t.Helper()
	if allVersions && etag == "" {
		etag = `"0"`
	}
	var out []map[string]any
	for range 10_000 {
		h := map[string]string{"If-None-Match": etag}
		for k, v := range hdr {
			h[k] = v
		}
		p := e.changeFeed(t, coll, allVersions, h)
		switch p.status {
		case http.StatusNotModified:
			if p.etag == "" || len(p.raw) != 0 {
				t.Fatalf("304 with etag %q and body %q", p.etag, p.raw)
			}
			return out, p.etag
		case http.StatusOK:
			if len(p.docs) == 0 {
				t.Fatalf("200 without documents: %s", p.raw)
			}
			out = append(out, p.docs...)
			etag = p.etag
		default:
			t.Fatalf("change feed: %d %s", p.status, p.raw)
		}
	}
	t.Fatal("the change feed never ran dry")
	return nil, ""
}

// meta is an all-versions record's metadata.
func meta(d map[string]any) map[string]any { m, _ := d["metadata"].(map[string]any); return m }

func num(v any) int64 { f, _ := v.(float64); return int64(f) }

func TestChangeFeedGoSDK(t *testing.T) {
	e := start(t)
	db := e.database("db")
	c := e.container(db, azcosmos.ContainerProperties{ID: "c", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}}})
	for i := range 5 {
		key := fmt.Sprintf("p%d", i)
		if _, err := c.CreateItem(ctx, azcosmos.NewPartitionKeyString(key), []byte(fmt.Sprintf(`{"id":"i%d","pk":%q}`, i, key)), nil); err != nil {
			t.Fatal(err)
		}
	}
	props, err := c.Read(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	rid := props.ContainerProperties.ResourceID
	ranges, err := c.ReadFeedRanges(ctx, nil)
	if err != nil || len(ranges) != 1 {
		t.Fatalf("feed ranges: %v %v", ranges, err)
	}

	// Page by page through the SDK's composite continuation.
	var ids []string
	var lsns []int64
	opts := &azcosmos.ChangeFeedOptions{FeedRange: &ranges[0], MaxItemCount: 2}
	var last azcosmos.ChangeFeedResponse
	for range 10 {
		last, err = c.ReadChangeFeed(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		if last.ResourceID != "" && last.ResourceID != rid {
			t.Fatalf("_rid %q, want the container's %q", last.ResourceID, rid)
		}
		if last.ContinuationToken == "" {
			t.Fatal("no continuation token")
		}
		if last.Count == 0 {
			break
		}
		for _, raw := range last.Items {
			var d struct {
				ID  string `json:"id"`
				LSN int64  `json:"_lsn"`
			}
			if err := json.Unmarshal(raw, &d); err != nil {
				t.Fatal(err)
			}
			ids, lsns = append(ids, d.ID), append(lsns, d.LSN)
		}
		if want := strconv.Quote(strconv.FormatInt(lsns[len(lsns)-1], 10)); string(last.ETag) != want {
			t.Errorf("etag %s, want the last item's _lsn %s", last.ETag, want)
		}
		opts = &azcosmos.ChangeFeedOptions{MaxItemCount: 2, Continuation: &last.ContinuationToken}
	}
	if strings.Join(ids, " ") != "i0 i1 i2 i3 i4" || !slices.IsSorted(lsns) {
		t.Fatalf("read %v with _lsn %v", ids, lsns)
	}
	if last.RawResponse.StatusCode != http.StatusNotModified {
		t.Errorf("caught up with status %d, want 304", last.RawResponse.StatusCode)
	}

	// A replace shows the item again, once, in its new version.
	if _, err := c.ReplaceItem(ctx, azcosmos.NewPartitionKeyString("p1"), "i1", []byte(`{"id":"i1","pk":"p1","v":2}`), nil); err != nil {
		t.Fatal(err)
	}
	resp, err := c.ReadChangeFeed(ctx, &azcosmos.ChangeFeedOptions{Continuation: &last.ContinuationToken})
	if err != nil || resp.Count != 1 || !strings.Contains(string(resp.Items[0]), `"v":2`) {
		t.Fatalf("after a replace: %v %v", resp.Items, err)
	}

	// Scoped to one logical partition, from the beginning.
	key := azcosmos.NewPartitionKeyString("p3")
	resp, err = c.ReadChangeFeed(ctx, &azcosmos.ChangeFeedOptions{FeedRange: &ranges[0], PartitionKey: &key})
	if err != nil || resp.Count != 1 || !strings.Contains(string(resp.Items[0]), `"i3"`) {
		t.Fatalf("partition p3: %d items %v", resp.Count, err)
	}

	// A token of another container is refused.
	other := e.container(db, azcosmos.ContainerProperties{ID: "other", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}}})
	if _, err := other.ReadChangeFeed(ctx, &azcosmos.ChangeFeedOptions{Continuation: &last.ContinuationToken}); err == nil {
		t.Error("another container's continuation was accepted")
	}
}

// TestChangeFeedGoSDKStartFrom: a start time selects the changes made from
// that second on; a future one finds nothing.
func TestChangeFeedGoSDKStartFrom(t *testing.T) {
	te := startTTL(t)
	c := te.coll(t, "c", nil)
	c.create(t, "old")
	te.to(t, 3600, 0)
	since := te.clk.Now()
	c.create(t, "new")
	ranges, err := c.ReadFeedRanges(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.ReadChangeFeed(ctx, &azcosmos.ChangeFeedOptions{FeedRange: &ranges[0], StartFrom: &since})
	if err != nil || resp.Count != 1 || !strings.Contains(string(resp.Items[0]), `"new"`) {
		t.Fatalf("from %v: %d items %v", since, resp.Count, err)
	}
	future := since.Add(time.Hour)
	resp, err = c.ReadChangeFeed(ctx, &azcosmos.ChangeFeedOptions{FeedRange: &ranges[0], StartFrom: &future})
	if err != nil || resp.Count != 0 {
		t.Fatalf("from the future: %d items %v", resp.Count, err)
	}
}

// TestChangeFeedGoSDKSeveralRanges: with several partition key ranges the
// SDK drains each range and sees every item once.
func TestChangeFeedGoSDKSeveralRanges(t *testing.T) {
	e := start(t, withPartitions(4))
	db := e.database("db")
	c := e.container(db, azcosmos.ContainerProperties{ID: "c", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}, Version: 2}})
	const n = 40
	for i := range n {
		key := fmt.Sprintf("p%d", i)
		if _, err := c.CreateItem(ctx, azcosmos.NewPartitionKeyString(key), []byte(fmt.Sprintf(`{"id":"i%d","pk":%q}`, i, key)), nil); err != nil {
			t.Fatal(err)
		}
	}
	seen := map[string]int{}
	opts := &azcosmos.ChangeFeedOptions{FeedRange: &azcosmos.FeedRange{MinInclusive: "", MaxExclusive: "FF"}, MaxItemCount: 7}
	for range 50 {
		resp, err := c.ReadChangeFeed(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		for _, raw := range resp.Items {
			var d struct{ ID string }
			_ = json.Unmarshal(raw, &d)
			seen[d.ID]++
		}
		if resp.Count == 0 && len(seen) == n {
			break
		}
		opts = &azcosmos.ChangeFeedOptions{MaxItemCount: 7, Continuation: &resp.ContinuationToken}
	}
	if len(seen) != n {
		t.Fatalf("saw %d of %d items", len(seen), n)
	}
	for id, k := range seen {
		if k != 1 {
			t.Errorf("%s seen %d times", id, k)
		}
	}
}

func TestChangeFeedRawProtocol(t *testing.T) {
	e := start(t)
	e.database("db")
	hp := `{"id":"h","partitionKey":{"paths":["/t","/u"],"kind":"MultiHash","version":2},"changeFeedPolicy":{"retentionDuration":60}}`
	for _, body := range []string{`{"id":"c","partitionKey":{"paths":["/pk"]},"defaultTtl":-1,"changeFeedPolicy":{"retentionDuration":60}}`, hp} {
		if r := e.do("POST", "/dbs/db/colls", []byte(body), nil); r.status != 201 {
			t.Fatalf("create container: %d %s", r.status, r.body)
		}
	}
	write := func(coll, key, body string) {
		t.Helper()
		if r := e.do("POST", "/dbs/db/colls/"+coll+"/docs", []byte(body), map[string]string{"x-ms-documentdb-partitionkey": key, "x-ms-documentdb-is-upsert": "true"}); r.status >= 300 {
			t.Fatalf("write %s: %d %s", body, r.status, r.body)
		}
	}

	// Empty container: 304 from the beginning and from now.
	for _, inm := range []string{"", "*"} {
		if p := e.changeFeed(t, "c", false, map[string]string{"If-None-Match": inm}); p.status != 304 || p.etag != `"0"` {
			t.Errorf("empty, If-None-Match %q: %d etag %s", inm, p.status, p.etag)
		}
	}
	write("c", `["a"]`, `{"id":"1","pk":"a"}`)
	write("c", `["b"]`, `{"id":"2","pk":"b","ttl":3600}`)
	now := e.changeFeed(t, "c", false, map[string]string{"If-None-Match": "*"})
	if now.status != 304 || now.etag != `"2"` {
		t.Fatalf("from now: %d etag %s, want 304 with the current LSN", now.status, now.etag)
	}
	write("c", `["a"]`, `{"id":"1","pk":"a","v":2}`)
	p := e.changeFeed(t, "c", false, map[string]string{"If-None-Match": now.etag})
	if p.status != 200 || len(p.docs) != 1 || p.docs[0]["v"] != 2.0 || p.docs[0]["_lsn"] != 3.0 || p.etag != `"3"` || p.rid == "" {
		t.Fatalf("after now: %d %s etag %s", p.status, p.raw, p.etag)
	}
	if p := e.changeFeed(t, "c", false, map[string]string{"If-None-Match": "3"}); p.status != 304 || p.etag != `"3"` {
		t.Errorf("unquoted etag: %d %s", p.status, p.etag)
	}

	// Start times, as Go and JS format them.
	past := time.Now().Add(-time.Hour).UTC()
	for _, ims := range []string{past.Format(time.RFC1123), past.Format(http.TimeFormat)} {
		if p := e.changeFeed(t, "c", false, map[string]string{"If-Modified-Since": ims}); p.status != 200 || len(p.docs) != 2 {
			t.Errorf("If-Modified-Since %s: %d %s", ims, p.status, p.raw)
		}
	}
	future := time.Now().Add(time.Hour).UTC().Format(time.RFC1123)
	if p := e.changeFeed(t, "c", false, map[string]string{"If-Modified-Since": future}); p.status != 304 {
		t.Errorf("If-Modified-Since in the future: %d %s", p.status, p.raw)
	}

	// All versions: create, create, replace, then a delete.
	if r := e.do("DELETE", "/dbs/db/colls/c/docs/2", nil, map[string]string{"x-ms-documentdb-partitionkey": `["b"]`}); r.status != 204 {
		t.Fatalf("delete: %d", r.status)
	}
	// All versions starts from now or a continuation, not the beginning.
	if p := e.changeFeed(t, "c", true, nil); p.status != 400 {
		t.Errorf("all versions from the beginning: %d %s, want 400", p.status, p.raw)
	}
	recs, etag := e.drain(t, "c", true, "", nil)
	var ops []string
	for _, d := range recs {
		ops = append(ops, fmt.Sprintf("%v@%v", meta(d)["operationType"], meta(d)["lsn"]))
	}
	if strings.Join(ops, " ") != "create@1 create@2 replace@3 delete@4" || etag != `"4"` {
		t.Fatalf("all versions: %v, etag %s", ops, etag)
	}
	repl, del := recs[2], recs[3]
	if repl["current"].(map[string]any)["v"] != 2.0 || repl["previous"].(map[string]any)["_lsn"] != 1.0 || num(meta(repl)["previousImageLSN"]) != 1 {
		t.Errorf("replace record: %v", repl)
	}
	if _, ok := del["current"]; ok || meta(del)["id"] != "2" || fmt.Sprint(meta(del)["partitionKey"]) != "map[pk:b]" ||
		meta(del)["timeToLiveExpired"] != false || num(meta(del)["crts"]) < time.Now().Add(-time.Minute).Unix() {
		t.Errorf("delete record: %v", del)
	}
	// The latest-version feed does not show the delete.
	if docs, _ := e.drain(t, "c", false, "", nil); len(docs) != 1 || docs[0]["id"] != "1" {
		t.Errorf("latest version after the delete: %v", docs)
	}

	// Scopes: a hierarchical prefix by header and by EPK range.
	write("h", `["x","1"]`, `{"id":"a","t":"x","u":"1"}`)
	write("h", `["y","1"]`, `{"id":"b","t":"y","u":"1"}`)
	write("h", `["x","2"]`, `{"id":"c","t":"x","u":"2"}`)
	def := partition.Definition{Paths: []string{"/t", "/u"}, Kind: partition.MultiHash, Version: 2}
	lo, hi, err := partition.EPKRange(def, partition.Key{partition.String("x")})
	if err != nil {
		t.Fatal(err)
	}
	for name, hdr := range map[string]map[string]string{
		"prefix header": {"x-ms-documentdb-partitionkey": `["x"]`},
		"EPK range":     {"x-ms-start-epk": lo, "x-ms-end-epk": hi, "x-ms-read-key-type": "EffectivePartitionKeyRange"},
	} {
		for _, all := range []bool{false, true} {
			docs, _ := e.drain(t, "h", all, "", hdr)
			if len(docs) != 2 {
				t.Errorf("%s (all versions %v): %d documents, want a and c", name, all, len(docs))
			}
		}
	}

	// Refusals.
	for _, c := range []struct {
		name   string
		all    bool
		hdr    map[string]string
		status int
		sub    string
	}{
		{"unknown range", false, map[string]string{"x-ms-documentdb-partitionkeyrangeid": "7"}, 410, "1002"},
		{"not an etag", false, map[string]string{"If-None-Match": `"0a1b-0000"`}, 400, "0"},
		{"not a date", false, map[string]string{"If-Modified-Since": "yesterday"}, 400, "0"},
		{"unknown A-IM", false, map[string]string{"A-IM": "Everything"}, 400, "0"},
		{"no wire format", true, map[string]string{"x-ms-cosmos-changefeed-wire-format-version": ""}, 400, "0"},
		{"bad page size", false, map[string]string{"x-ms-max-item-count": "many"}, 400, "0"},
		{"EPK not hexadecimal", false, map[string]string{"x-ms-start-epk": "zz", "x-ms-read-key-type": "EffectivePartitionKeyRange"}, 400, "0"},
		{"EPK range reversed", false, map[string]string{"x-ms-start-epk": "3F", "x-ms-end-epk": "00", "x-ms-read-key-type": "EffectivePartitionKeyRange"}, 400, "0"},
	} {
		p := e.changeFeed(t, "c", c.all, c.hdr)
		var body struct{ Code, Message string }
		if p.status != c.status || p.header.Get("x-ms-substatus") != c.sub || json.Unmarshal(p.raw, &body) != nil || body.Message == "" {
			t.Errorf("%s: %d/%s %s, want %d/%s with a Cosmos error body", c.name, p.status, p.header.Get("x-ms-substatus"), p.raw, c.status, c.sub)
		}
	}
	if r := e.do("GET", "/dbs/db/colls/nope/docs", nil, map[string]string{"A-IM": "Incremental Feed"}); r.status != 404 {
		t.Errorf("missing container: %d", r.status)
	}
}

// TestChangeFeedSurvivesRestart: the version log is in the store.
func TestChangeFeedSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	te := startTTL(t, withDataDir(dir))
	c := te.coll(t, "c", i32(-1))
	c.create(t, "a")
	c.create(t, "b", `"ttl":2`)
	te.to(t, 2, 0)
	te.pass(t)
	before, etag := te.drain(t, "c", true, "", nil)
	te = te.restart(t, dir)
	te.stopPurger(t)
	after, etag2 := te.drain(t, "c", true, "", nil)
	if len(before) != 3 || etag != etag2 || fmt.Sprint(before) != fmt.Sprint(after) {
		t.Fatalf("before the restart %d records (etag %s), after %d (etag %s)", len(before), etag, len(after), etag2)
	}
	if meta(after[2])["timeToLiveExpired"] != true {
		t.Errorf("the expiry of b: %v", after[2])
	}
}

// TestB5_ExpiryRecordsExactlyOnce: 1,000 items with ttl 1–3 s, purged by
// the purger on a manual clock, yield exactly 1,000 expiry records in the
// all-versions feed: none duplicated, none before the item was due (at the
// moment it appears, and by its crts), and none for items whose expiry was
// pushed back before it came due.
func TestB5_ExpiryRecordsExactlyOnce(t *testing.T) {
	te := startTTL(t)
	c := te.coll(t, "c", i32(-1))
	const n, pushed = 1000, 50
	due := map[string]int64{}
	ids := make(chan int)
	var wg sync.WaitGroup
	var mu sync.Mutex
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range ids {
				id := fmt.Sprintf("i%04d", i)
				ttl := 1 + i%3
				if i >= n {
					ttl = 1 // pushed back below
				}
				r, err := c.CreateItem(ctx, pk, doc(id, fmt.Sprintf(`"ttl":%d`, ttl)), &azcosmos.ItemOptions{EnableContentResponseOnWrite: true})
				if err != nil {
					t.Errorf("create %s: %v", id, err)
					continue
				}
				var m struct {
					TS int64 `json:"_ts"`
				}
				_ = json.Unmarshal(r.Value, &m)
				mu.Lock()
				due[id] = m.TS + int64(ttl)
				mu.Unlock()
			}
		}()
	}
	for i := range n + pushed {
		ids <- i
	}
	close(ids)
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	// Pushed back before they come due: these never expire.
	te.to(t, 0, 900*time.Millisecond)
	for i := n; i < n+pushed; i++ {
		id := fmt.Sprintf("i%04d", i)
		if _, err := c.UpsertItem(ctx, pk, doc(id, `"ttl":-1`), nil); err != nil {
			t.Fatal(err)
		}
		delete(due, id)
	}

	seen := map[string]int{}
	etag := ""
	for step := 1; step <= 20; step++ {
		te.to(t, 0, time.Duration(step)*250*time.Millisecond+900*time.Millisecond)
		now := te.clk.Now()
		for range 100 {
			if res := te.pass(t); !res.More && res.Deferred == 0 {
				break
			}
		}
		var recs []map[string]any
		recs, etag = te.drain(t, "c", true, etag, nil)
		for _, d := range recs {
			md := meta(d)
			if md["operationType"] != "delete" {
				continue
			}
			id, _ := md["id"].(string)
			if md["timeToLiveExpired"] != true {
				t.Errorf("%s: a delete not marked timeToLiveExpired: %v", id, md)
			}
			want, ok := due[id]
			switch {
			case !ok:
				t.Errorf("expiry record for %s, which never expires", id)
			case now.Before(time.Unix(want, 0)):
				t.Errorf("%s: expiry record at %v, before it was due at %d", id, now, want)
			case num(md["crts"]) < want:
				t.Errorf("%s: crts %d before it was due at %d", id, num(md["crts"]), want)
			}
			if fmt.Sprint(md["partitionKey"]) != "map[pk:"+ttlPK+"]" {
				t.Errorf("%s: partitionKey %v", id, md["partitionKey"])
			}
			seen[id]++
		}
	}
	dups := 0
	for _, k := range seen {
		if k > 1 {
			dups++
		}
	}
	if len(seen) != n || dups != 0 {
		t.Fatalf("%d items have expiry records (%d more than once), want %d, each once", len(seen), dups, n)
	}
	if docs, _ := te.drain(t, "c", false, "", nil); len(docs) != pushed {
		t.Errorf("latest version: %d items, want the %d pushed back", len(docs), pushed)
	}
}

// TestB5_ExpiryRecordsRealClock: the same on the real clock with the
// purger running, kept short: expiry records arrive within about a second
// of expiry.
func TestB5_ExpiryRecordsRealClock(t *testing.T) {
	e := start(t)
	db := e.database("db")
	c := e.containerJSON(db, "c", `"partitionKey":{"paths":["/pk"],"kind":"Hash"},"defaultTtl":-1,"changeFeedPolicy":{"retentionDuration":60}`)
	const n = 40
	due := map[string]int64{}
	for i := range n {
		id := fmt.Sprintf("r%d", i)
		ttl := 1 + i%2
		r, err := c.CreateItem(ctx, pk, doc(id, fmt.Sprintf(`"ttl":%d`, ttl)), &azcosmos.ItemOptions{EnableContentResponseOnWrite: true})
		if err != nil {
			t.Fatal(err)
		}
		var m struct {
			TS int64 `json:"_ts"`
		}
		_ = json.Unmarshal(r.Value, &m)
		due[id] = m.TS + int64(ttl)
	}
	seen := map[string]int{}
	etag := ""
	deadline := time.Now().Add(6 * time.Second)
	for len(seen) < n && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
		var recs []map[string]any
		recs, etag = e.drain(t, "c", true, etag, nil)
		for _, d := range recs {
			md := meta(d)
			if md["timeToLiveExpired"] != true {
				continue
			}
			id := md["id"].(string)
			seen[id]++
			crts := num(md["crts"])
			if crts < due[id] {
				t.Errorf("%s: crts %d before it was due at %d", id, crts, due[id])
			}
			// crts is in whole seconds: purged within a second of expiry
			// gives at most due+1; allow one more for a loaded machine.
			if crts > due[id]+2 {
				t.Errorf("%s: purged at %d, due at %d", id, crts, due[id])
			}
		}
	}
	if len(seen) != n {
		t.Fatalf("%d of %d expiries reported", len(seen), n)
	}
	for id, k := range seen {
		if k != 1 {
			t.Errorf("%s reported %d times", id, k)
		}
	}
}
