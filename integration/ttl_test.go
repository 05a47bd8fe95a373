package integration

// Time-to-live through the Go SDK against a real listener, one test per rule
// of ttl.md (Part A, B1, B2), on a manual clock. Request dates are checked
// against the wall clock and expiry against the manual one, so the tests
// move time by whole seconds without sleeping.
//
// The instant semantics are exact: an item written when the clock reads
// S+0.5 s has _ts S; with ttl m it is visible up to S+m-1ns and gone from
// S+m on. Every check looks through every read path at once (see expect).

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/mayfly-db/mayfly/internal/clock"
	"github.com/mayfly-db/mayfly/internal/engine"
	"github.com/mayfly-db/mayfly/internal/partition"
	"github.com/mayfly-db/mayfly/internal/server"
	"github.com/mayfly-db/mayfly/internal/storage"
	"github.com/mayfly-db/mayfly/internal/storage/pebblestore"
	"github.com/mayfly-db/mayfly/internal/ttl"
)

const ttlPK = "p" // every item of these tests is in one logical partition

// never is the due second of an item that does not expire.
const never = 0

// ttlEnv is a server on a manual clock with database "db". base is the
// whole second S; the clock starts at S+0.5 s, so writes made before it
// moves get _ts S.
type ttlEnv struct {
	*env
	clk  *clock.Manual
	db   *azcosmos.DatabaseClient
	base int64
}

// startTTL starts the server with its purge loop stopped: expired items
// stay on disk until the test runs a pass, so every check meets them
// unpurged first (timeline checks again after a pass).
func startTTL(t *testing.T, opts ...envOption) *ttlEnv {
	t.Helper()
	te := startTTLWithPurger(t, opts...)
	te.stopPurger(t)
	return te
}

// startTTLWithPurger leaves the purge loop running on the manual clock.
func startTTLWithPurger(t *testing.T, opts ...envOption) *ttlEnv {
	t.Helper()
	base := time.Now().Unix()
	clk := clock.NewManual(time.Unix(base, 0).Add(500 * time.Millisecond))
	e := start(t, append([]envOption{withManualClock(clk)}, opts...)...)
	return &ttlEnv{env: e, clk: clk, db: e.database("db"), base: base}
}

func withDataDir(dir string) envOption {
	return func(cfg *server.Config) { cfg.InMemory, cfg.DataDir = false, dir }
}

// sec is the instant S+n seconds.
func (te *ttlEnv) sec(n int64) time.Time { return time.Unix(te.base+n, 0) }

// setClock moves the clock to at; moving it backwards is a test bug.
func (te *ttlEnv) setClock(t *testing.T, at time.Time) {
	t.Helper()
	if at.Before(te.clk.Now()) {
		t.Fatalf("test bug: clock to %v, before %v", at, te.clk.Now())
	}
	te.clk.Set(at)
}

// to moves the clock to S+n s plus d.
func (te *ttlEnv) to(t *testing.T, n int64, d time.Duration) {
	t.Helper()
	te.setClock(t, te.sec(n).Add(d))
}

// stopPurger stops the background purge loop, so the test alone decides
// when a pass runs (Pass still works).
func (te *ttlEnv) stopPurger(t *testing.T) {
	t.Helper()
	if err := te.srv.Purger().Close(); err != nil {
		t.Fatal(err)
	}
}

func (te *ttlEnv) pass(t *testing.T) ttl.PassResult {
	t.Helper()
	res, err := te.srv.Purger().Pass(ctx)
	if err != nil {
		t.Fatalf("purge pass: %v", err)
	}
	return res
}

// purgeAll runs purge passes until one leaves nothing behind, and returns
// how many items they purged in all.
func (te *ttlEnv) purgeAll(t *testing.T) int {
	t.Helper()
	n := 0
	for {
		res := te.pass(t)
		n += res.Purged
		if !res.More {
			return n
		}
	}
}

// checkIndexes verifies that the expiry and id indexes match the items and
// returns what each container holds on disk.
func (te *ttlEnv) checkIndexes(t *testing.T) map[string]engine.IndexCounts {
	t.Helper()
	counts, err := te.srv.Engine().CheckIndexes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return counts
}

func i32(n int32) *int32 { return &n }

// ttlColl is a container of database "db" with partition key /pk.
type ttlColl struct {
	*azcosmos.ContainerClient
	te *ttlEnv
	id string
}

// coll creates container id with partition key /pk, defaultTTL, and a
// change feed policy, so that the all-versions feed reports its expiries
// (ttl.md B5).
func (te *ttlEnv) coll(t *testing.T, id string, defaultTTL *int32) *ttlColl {
	t.Helper()
	props := `"partitionKey":{"paths":["/pk"],"kind":"Hash"},"changeFeedPolicy":{"retentionDuration":60}`
	if defaultTTL != nil {
		props += `,"defaultTtl":` + strconv.Itoa(int(*defaultTTL))
	}
	c := te.containerJSON(te.db, id, props)
	return &ttlColl{ContainerClient: c, te: te, id: id}
}

func (c *ttlColl) link() string { return "dbs/db/colls/" + c.id }

// doc is an item body: id, the test partition key and extra JSON fields,
// e.g. doc("a", `"ttl":5`).
func doc(id string, fields ...string) []byte {
	s := `{"id":"` + id + `","pk":"` + ttlPK + `"`
	for _, f := range fields {
		s += "," + f
	}
	return []byte(s + "}")
}

var pk = azcosmos.NewPartitionKeyString(ttlPK)

// create writes a new item and returns its body as stored.
func (c *ttlColl) create(t *testing.T, id string, fields ...string) map[string]any {
	t.Helper()
	r, err := c.CreateItem(ctx, pk, doc(id, fields...), &azcosmos.ItemOptions{EnableContentResponseOnWrite: true})
	if err != nil {
		t.Fatalf("create %s in %s: %v", id, c.id, err)
	}
	return c.checkTS(t, r.Value)
}

// checkTS decodes a written item and checks that its _ts is the clock's
// whole second (A2).
func (c *ttlColl) checkTS(t *testing.T, body []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("item body %s: %v", body, err)
	}
	if ts, want := m["_ts"], float64(c.te.clk.Now().Unix()); ts != want {
		t.Fatalf("_ts = %v, want the clock's whole second %v", ts, want)
	}
	return m
}

// readStatus is a point read's status: 200 or 404.
func (c *ttlColl) readStatus(t *testing.T, id string) int {
	t.Helper()
	_, err := c.ReadItem(ctx, pk, id, nil)
	switch s := statusOf(err); {
	case err == nil:
		return 200
	case s == 404:
		return 404
	default:
		t.Fatalf("read %s: %v", id, err)
		return 0
	}
}

func (c *ttlColl) read(t *testing.T, id string) azcosmos.ItemResponse {
	t.Helper()
	r, err := c.ReadItem(ctx, pk, id, nil)
	if err != nil {
		t.Fatalf("read %s in %s: %v", id, c.id, err)
	}
	return r
}

// feedIDs reads the whole read feed, page by page.
func (c *ttlColl) feedIDs(t *testing.T) []string {
	t.Helper()
	var ids []string
	cont := ""
	for {
		hdr := map[string]string{"x-ms-max-item-count": "7"}
		if cont != "" {
			hdr["x-ms-continuation"] = cont
		}
		r := c.te.do("GET", "/"+c.link()+"/docs", nil, hdr)
		if r.status != 200 {
			t.Fatalf("read feed of %s: %d %s", c.id, r.status, r.body)
		}
		var page struct{ Documents []struct{ ID string } }
		if err := json.Unmarshal(r.body, &page); err != nil {
			t.Fatal(err)
		}
		for _, d := range page.Documents {
			ids = append(ids, d.ID)
		}
		if cont = r.header.Get("x-ms-continuation"); cont == "" {
			return ids
		}
	}
}

// query runs a query to the end and returns its rows.
func (c *ttlColl) query(t *testing.T, q string, key azcosmos.PartitionKey) [][]byte {
	t.Helper()
	var rows [][]byte
	p := c.NewQueryItemsPager(q, key, &azcosmos.QueryOptions{PageSizeHint: 7})
	for p.More() {
		page, err := p.NextPage(ctx)
		if err != nil {
			t.Fatalf("query %q on %s: %v", q, c.id, err)
		}
		rows = append(rows, page.Items...)
	}
	return rows
}

func idsOf(t *testing.T, rows [][]byte) []string {
	t.Helper()
	ids := make([]string, 0, len(rows))
	for _, r := range rows {
		var d struct{ ID string }
		if err := json.Unmarshal(r, &d); err != nil {
			t.Fatalf("row %s: %v", r, err)
		}
		ids = append(ids, d.ID)
	}
	return ids
}

// changeFeedIDs reads the change feed (latest version) from the
// beginning to the end.
func (c *ttlColl) changeFeedIDs(t *testing.T) []string {
	t.Helper()
	ranges, err := c.ReadFeedRanges(ctx, nil)
	if err != nil {
		t.Fatalf("feed ranges of %s: %v", c.id, err)
	}
	var ids []string
	for _, rg := range ranges {
		opts := &azcosmos.ChangeFeedOptions{FeedRange: &rg, MaxItemCount: 7}
		for n := 0; ; n++ {
			r, err := c.ReadChangeFeed(ctx, opts)
			if err != nil {
				t.Fatalf("change feed of %s: %v", c.id, err)
			}
			if r.Count == 0 {
				break
			}
			if n == 1000 {
				t.Fatalf("change feed of %s does not end", c.id)
			}
			ids = append(ids, idsOf(t, r.Items)...)
			opts = &azcosmos.ChangeFeedOptions{MaxItemCount: 7, Continuation: &r.ContinuationToken}
		}
	}
	return ids
}

func (c *ttlColl) count(t *testing.T) int {
	t.Helper()
	rows := c.query(t, "SELECT VALUE COUNT(1) FROM c", pk)
	if len(rows) != 1 {
		t.Fatalf("COUNT gave %d rows: %q", len(rows), rows)
	}
	n, err := strconv.Atoi(string(rows[0]))
	if err != nil {
		t.Fatalf("COUNT row %s: %v", rows[0], err)
	}
	return n
}

// usage is the container's x-ms-resource-usage: documentsCount and
// documentsSize (KB).
func (c *ttlColl) usage(t *testing.T) (count, sizeKB int) {
	t.Helper()
	r, err := c.Read(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	h := r.RawResponse.Header.Get("x-ms-resource-usage")
	count, sizeKB = -1, -1
	for _, kv := range strings.Split(h, ";") {
		k, v, _ := strings.Cut(kv, "=")
		n, _ := strconv.Atoi(v)
		switch k {
		case "documentsCount":
			count = n
		case "documentsSize":
			sizeKB = n
		}
	}
	if count < 0 || sizeKB < 0 {
		t.Fatalf("x-ms-resource-usage %q lacks documentsCount or documentsSize", h)
	}
	return count, sizeKB
}

// expect checks that exactly the items want of all are visible, through
// every read path: point reads, read-many, the read feed, the change feed,
// cross-partition and single-partition queries (index-served, ORDER BY,
// DISTINCT, TOP), COUNT, SUM and the container's usage.
func (c *ttlColl) expect(t *testing.T, all []string, want []string) {
	t.Helper()
	want = slices.Sorted(slices.Values(want))
	at := c.te.clk.Now().Sub(time.Unix(c.te.base, 0))
	fail := func(path string, got any) {
		t.Helper()
		t.Errorf("%s at S+%v, %s: got %v, want %v", c.id, at, path, got, want)
	}
	var read []string
	for _, id := range all {
		if c.readStatus(t, id) == 200 {
			read = append(read, id)
		}
	}
	if slices.Sort(read); !slices.Equal(read, want) {
		fail("point reads", read)
	}
	idents := make([]azcosmos.ItemIdentity, len(all))
	for i, id := range all {
		idents[i] = azcosmos.ItemIdentity{ID: id, PartitionKey: pk}
	}
	if len(idents) > 0 {
		rm, err := c.ReadManyItems(ctx, idents, nil)
		if err != nil {
			t.Fatalf("read many: %v", err)
		}
		if got := slices.Sorted(slices.Values(idsOf(t, rm.Items))); !slices.Equal(got, want) {
			fail("read-many", got)
		}
	}
	if got := slices.Sorted(slices.Values(c.feedIDs(t))); !slices.Equal(got, want) {
		fail("read feed", got)
	}
	if got := slices.Sorted(slices.Values(idsOf(t, c.query(t, "SELECT * FROM c", azcosmos.NewPartitionKey())))); !slices.Equal(got, want) {
		fail("cross-partition query", got)
	}
	if got := slices.Sorted(slices.Values(idsOf(t, c.query(t, "SELECT * FROM c WHERE c.pk = 'p'", pk)))); !slices.Equal(got, want) {
		fail("single-partition query", got)
	}
	// Queries the range index serves, and ones that need every document.
	in := `"` + strings.Join(all, `","`) + `"`
	for _, q := range []string{
		"SELECT * FROM c WHERE c.id > ''",
		"SELECT * FROM c WHERE STARTSWITH(c.id, '')",
		"SELECT * FROM c WHERE c.id IN (" + in + ")",
		"SELECT * FROM c ORDER BY c.id",
		"SELECT DISTINCT c.id FROM c",
		"SELECT TOP 1000 c.id FROM c",
	} {
		if got := slices.Sorted(slices.Values(idsOf(t, c.query(t, q, pk)))); !slices.Equal(got, want) {
			fail(q, got)
		}
	}
	if got := slices.Sorted(slices.Values(c.changeFeedIDs(t))); !slices.Equal(got, want) {
		fail("change feed", got)
	}
	if n := c.count(t); n != len(want) {
		fail("COUNT", n)
	}
	if rows := c.query(t, "SELECT VALUE SUM(1) FROM c", pk); len(want) > 0 && (len(rows) != 1 || string(rows[0]) != strconv.Itoa(len(want))) {
		fail("SUM", string(bytes.Join(rows, []byte(","))))
	}
	if n, _ := c.usage(t); n != len(want) {
		fail("documentsCount", n)
	}
}

// dues maps item ids to the second (relative to S) at which they expire,
// never for items that do not.
type dues map[string]int64

func (d dues) ids() []string { return slices.Sorted(maps.Keys(d)) }

// visibleAt lists the items not expired at instant S+at.
func (d dues) visibleAt(at time.Duration) []string {
	var out []string
	for id, due := range d {
		if due == never || time.Duration(due)*time.Second > at {
			out = append(out, id)
		}
	}
	return out
}

// timeline checks the visible items of each container now, then walks the
// clock through every later due second, stopping one nanosecond before it
// and at it, and then far into the future, checking at every stop before
// and after a purge pass.
func (te *ttlEnv) timeline(t *testing.T, plan map[*ttlColl]dues) {
	t.Helper()
	var stops []time.Duration
	for _, d := range plan {
		for _, due := range d {
			if due != never {
				stops = append(stops, time.Duration(due)*time.Second-time.Nanosecond, time.Duration(due)*time.Second)
			}
		}
	}
	now := te.clk.Now().Sub(time.Unix(te.base, 0))
	stops = append(stops, now, 1_000_000*time.Second)
	slices.Sort(stops)
	stops = slices.Compact(stops)
	for _, at := range stops {
		if at < now {
			continue // already past: the check at now covers it
		}
		te.setClock(t, time.Unix(te.base, 0).Add(at))
		for c, d := range plan {
			c.expect(t, d.ids(), d.visibleAt(at))
		}
		// The purge changes nothing anyone can see.
		te.pass(t)
		for c, d := range plan {
			c.expect(t, d.ids(), d.visibleAt(at))
		}
		if t.Failed() {
			t.FailNow()
		}
	}
}

// TestA1_Matrix checks the full matrix of ttl.md A1: container defaultTtl
// absent, -1 or n, against item ttl absent, -1 or m (shorter and longer
// than n).
func TestA1_Matrix(t *testing.T) {
	te := startTTL(t)
	const n = 10
	cols := []struct {
		name string
		def  *int32
	}{{"off", nil}, {"minus1", i32(-1)}, {"n10", i32(n)}}
	rows := []struct {
		id    string
		field string
	}{{"absent", ""}, {"minus1", `"ttl":-1`}, {"m5", `"ttl":5`}, {"m20", `"ttl":20`}}
	want := map[string]dues{
		"off":    {"absent": never, "minus1": never, "m5": never, "m20": never},
		"minus1": {"absent": never, "minus1": never, "m5": 5, "m20": 20},
		"n10":    {"absent": n, "minus1": never, "m5": 5, "m20": 20},
	}
	plan := map[*ttlColl]dues{}
	for _, col := range cols {
		c := te.coll(t, col.name, col.def)
		for _, r := range rows {
			var fields []string
			if r.field != "" {
				fields = append(fields, r.field)
			}
			if got := c.create(t, r.id, fields...)["_ts"]; got != float64(te.base) {
				t.Fatalf("_ts %v, want %d", got, te.base)
			}
		}
		plan[c] = want[col.name]
	}
	te.timeline(t, plan)
}

// TestA1_ValidDefaultTTL: -1, 1 and 2147483647 are accepted and read back;
// an integral number written as 5.0 is 5; null is off.
func TestA1_ValidDefaultTTL(t *testing.T) {
	te := startTTL(t)
	for i, tt := range []struct {
		value string
		want  *int32
	}{{"-1", i32(-1)}, {"1", i32(1)}, {"2147483647", i32(2147483647)}, {"5.0", i32(5)}, {"null", nil}} {
		id := "c" + strconv.Itoa(i)
		r := te.do("POST", "/dbs/db/colls", []byte(`{"id":"`+id+`","partitionKey":{"paths":["/pk"]},"defaultTtl":`+tt.value+`}`), nil)
		if r.status != 201 {
			t.Fatalf("defaultTtl %s: %d %s", tt.value, r.status, r.body)
		}
		c, _ := te.db.NewContainer(id)
		got, err := c.Read(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if g := got.ContainerProperties.DefaultTimeToLive; (g == nil) != (tt.want == nil) || (g != nil && *g != *tt.want) {
			t.Errorf("defaultTtl %s reads back as %v", tt.value, g)
		}
	}
}

var invalidDefaultTTLs = []string{"0", "-2", "2147483648", "1.5", `"10"`, "true", "{}", "[]", "-1.5"}

// TestA1_InvalidDefaultTTL: invalid values are refused with 400 naming
// defaultTtl, on create and on replace, and nothing is created or changed.
func TestA1_InvalidDefaultTTL(t *testing.T) {
	te := startTTL(t)
	c := te.coll(t, "c", i32(10))
	c.create(t, "a")
	before, err := c.Read(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range invalidDefaultTTLs {
		t.Run(v, func(t *testing.T) {
			r := te.do("POST", "/dbs/db/colls", []byte(`{"id":"x","partitionKey":{"paths":["/pk"]},"defaultTtl":`+v+`}`), nil)
			checkBadRequest(t, r, "defaultTtl")
			if r := te.do("GET", "/dbs/db/colls/x", nil, nil); r.status != 404 {
				t.Fatalf("a refused container was created: %d", r.status)
			}
			r = te.do("PUT", "/dbs/db/colls/c", []byte(`{"id":"c","partitionKey":{"paths":["/pk"]},"defaultTtl":`+v+`}`), nil)
			checkBadRequest(t, r, "defaultTtl")
			after, err := c.Read(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if after.ETag != before.ETag || *after.ContainerProperties.DefaultTimeToLive != 10 {
				t.Fatalf("a refused replace changed the container: etag %s→%s, defaultTtl %v", before.ETag, after.ETag, *after.ContainerProperties.DefaultTimeToLive)
			}
		})
	}
	// The setting in force is still 10: the item goes at S+10.
	te.timeline(t, map[*ttlColl]dues{c: {"a": 10}})
}

// checkBadRequest checks a 400 whose message names property.
func checkBadRequest(t *testing.T, r rawResponse, property string) {
	t.Helper()
	if r.status != 400 {
		t.Fatalf("status %d, want 400: %s", r.status, r.body)
	}
	var body struct{ Code, Message string }
	if err := json.Unmarshal(r.body, &body); err != nil || body.Code != "BadRequest" {
		t.Fatalf("error body %s", r.body)
	}
	if !strings.Contains(body.Message, " "+property+" ") && !strings.Contains(body.Message, "'"+property+"'") {
		t.Errorf("message %q does not name %s", body.Message, property)
	}
}

var invalidItemTTLs = []string{"0", "-2", "1.5", `"5"`, "{}", "true", "[]", "2147483648", "-0.5"}

// TestA1_InvalidItemTTL: while TTL is on, an invalid item ttl is refused
// with 400 naming ttl by create, upsert, replace and patch, and nothing is
// written; while TTL is off the same values are ordinary fields, stored and
// inert.
func TestA1_InvalidItemTTL(t *testing.T) {
	te := startTTL(t)
	for _, def := range []*int32{i32(-1), i32(100)} {
		c := te.coll(t, fmt.Sprintf("on%d", *def), def)
		keep := c.create(t, "keep", `"ttl":50`)
		for i, v := range invalidItemTTLs {
			t.Run(fmt.Sprintf("defaultTtl %d ttl %s", *def, v), func(t *testing.T) {
				id := "new" + strconv.Itoa(i)
				_, err := c.CreateItem(ctx, pk, doc(id, `"ttl":`+v), nil)
				checkSDKBadRequest(t, "create", err)
				_, err = c.UpsertItem(ctx, pk, doc(id, `"ttl":`+v), nil)
				checkSDKBadRequest(t, "upsert new", err)
				_, err = c.UpsertItem(ctx, pk, doc("keep", `"ttl":`+v), nil)
				checkSDKBadRequest(t, "upsert existing", err)
				_, err = c.ReplaceItem(ctx, pk, "keep", doc("keep", `"ttl":`+v), nil)
				checkSDKBadRequest(t, "replace", err)
				var ops azcosmos.PatchOperations
				ops.AppendSet("/ttl", json.RawMessage(v))
				_, err = c.PatchItem(ctx, pk, "keep", ops, nil)
				checkSDKBadRequest(t, "patch", err)
				b := c.NewTransactionalBatch(pk)
				b.UpsertItem(doc(id, `"ttl":`+v), nil)
				if r, err := c.ExecuteTransactionalBatch(ctx, b, nil); err != nil || r.Success || r.OperationResults[0].StatusCode != 400 {
					t.Errorf("batch upsert: %v %+v, want the operation to fail with 400", err, r.OperationResults)
				}
				if s := c.readStatus(t, id); s != 404 {
					t.Errorf("a refused write created %s", id)
				}
				if r := c.read(t, "keep"); string(r.ETag) != keep["_etag"] {
					t.Errorf("a refused write changed keep: etag %s, was %s", r.ETag, keep["_etag"])
				}
			})
		}
	}

	off := te.coll(t, "off", nil)
	plan := dues{}
	for i, v := range invalidItemTTLs {
		id := "v" + strconv.Itoa(i)
		got := off.create(t, id, `"ttl":`+v)
		raw, _ := json.Marshal(got["ttl"])
		var want any
		_ = json.Unmarshal([]byte(v), &want)
		wantRaw, _ := json.Marshal(want)
		if string(raw) != string(wantRaw) {
			t.Errorf("ttl %s stored as %s while TTL is off", v, raw)
		}
		plan[id] = never
	}
	// Replace and patch with the same values work too.
	if _, err := off.ReplaceItem(ctx, pk, "v0", doc("v0", `"ttl":"5"`), nil); err != nil {
		t.Fatalf("replace with ttl \"5\" while off: %v", err)
	}
	var ops azcosmos.PatchOperations
	ops.AppendSet("/ttl", 0)
	if _, err := off.PatchItem(ctx, pk, "v1", ops, nil); err != nil {
		t.Fatalf("patch ttl 0 while off: %v", err)
	}
	te.timeline(t, map[*ttlColl]dues{off: plan})
}

func checkSDKBadRequest(t *testing.T, what string, err error) {
	t.Helper()
	if statusOf(err) != 400 {
		t.Errorf("%s: %v, want 400", what, err)
		return
	}
	if !strings.Contains(err.Error(), "input ttl") {
		t.Errorf("%s: the error does not name ttl: %v", what, err)
	}
}

// TestA1_NullTTLInherits: an explicit "ttl": null behaves as an absent ttl:
// it inherits the container default, in every column of the matrix, and a
// patch that sets ttl to null makes an item inherit again.
func TestA1_NullTTLInherits(t *testing.T) {
	te := startTTL(t)
	off := te.coll(t, "off", nil)
	minus := te.coll(t, "minus1", i32(-1))
	n := te.coll(t, "n10", i32(10))
	for _, c := range []*ttlColl{off, minus, n} {
		c.create(t, "null", `"ttl":null`)
		c.create(t, "own", `"ttl":3`)
	}
	te.to(t, 2, 500*time.Millisecond)
	for _, c := range []*ttlColl{off, minus, n} {
		var ops azcosmos.PatchOperations
		ops.AppendSet("/ttl", nil)
		r, err := c.PatchItem(ctx, pk, "own", ops, &azcosmos.ItemOptions{EnableContentResponseOnWrite: true})
		if err != nil {
			t.Fatalf("patch ttl null in %s: %v", c.id, err)
		}
		if m := c.checkTS(t, r.Value); m["ttl"] != nil {
			t.Fatalf("patched ttl = %v", m["ttl"])
		}
	}
	te.timeline(t, map[*ttlColl]dues{
		off:   {"null": never, "own": never},
		minus: {"null": never, "own": never},
		n:     {"null": 10, "own": 12},
	})
}

// write is one kind of item write, applied to item id with the given extra
// fields (for patch: the ttl to set, or a plain field when none).
type write struct {
	name string
	do   func(t *testing.T, c *ttlColl, id string, ttlField string) []byte
}

var writes = []write{
	{"replace", func(t *testing.T, c *ttlColl, id, f string) []byte {
		r, err := c.ReplaceItem(ctx, pk, id, doc(id, nonEmpty(f, `"v":2`)...), &azcosmos.ItemOptions{EnableContentResponseOnWrite: true})
		if err != nil {
			t.Fatalf("replace %s: %v", id, err)
		}
		return r.Value
	}},
	{"upsert", func(t *testing.T, c *ttlColl, id, f string) []byte {
		r, err := c.UpsertItem(ctx, pk, doc(id, nonEmpty(f, `"v":2`)...), &azcosmos.ItemOptions{EnableContentResponseOnWrite: true})
		if err != nil || r.RawResponse.StatusCode != 200 {
			t.Fatalf("upsert %s: %v", id, err)
		}
		return r.Value
	}},
	{"patch", func(t *testing.T, c *ttlColl, id, f string) []byte {
		var ops azcosmos.PatchOperations
		ops.AppendSet("/v", 2)
		if f != "" {
			v := strings.TrimPrefix(f, `"ttl":`)
			ops.AppendSet("/ttl", json.RawMessage(v))
		}
		r, err := c.PatchItem(ctx, pk, id, ops, &azcosmos.ItemOptions{EnableContentResponseOnWrite: true})
		if err != nil {
			t.Fatalf("patch %s: %v", id, err)
		}
		return r.Value
	}},
	{"batch replace", batchWrite("replace")},
	{"batch upsert", batchWrite("upsert")},
	{"batch patch", batchWrite("patch")},
}

// batchWrite runs one operation in a transactional batch and returns the
// item it wrote.
func batchWrite(op string) func(t *testing.T, c *ttlColl, id, f string) []byte {
	return func(t *testing.T, c *ttlColl, id, f string) []byte {
		b := c.NewTransactionalBatch(pk)
		switch op {
		case "replace":
			b.ReplaceItem(id, doc(id, nonEmpty(f, `"v":2`)...), nil)
		case "upsert":
			b.UpsertItem(doc(id, nonEmpty(f, `"v":2`)...), nil)
		case "patch":
			var ops azcosmos.PatchOperations
			ops.AppendSet("/v", 2)
			if f != "" {
				ops.AppendSet("/ttl", json.RawMessage(strings.TrimPrefix(f, `"ttl":`)))
			}
			b.PatchItem(id, ops, nil)
		}
		r, err := c.ExecuteTransactionalBatch(ctx, b, &azcosmos.TransactionalBatchOptions{EnableContentResponseOnWrite: true})
		if err != nil || !r.Success || len(r.OperationResults) != 1 {
			t.Fatalf("batch %s %s: %v %+v", op, id, err, r.OperationResults)
		}
		return r.OperationResults[0].ResourceBody
	}
}

func nonEmpty(fs ...string) []string {
	var out []string
	for _, f := range fs {
		if f != "" {
			out = append(out, f)
		}
	}
	return out
}

// TestA2_WriteRestartsCountdown: every write sets _ts to the clock's whole
// second and restarts the countdown from it; a write that changes ttl
// changes the period.
func TestA2_WriteRestartsCountdown(t *testing.T) {
	for _, w := range writes {
		t.Run(w.name, func(t *testing.T) {
			te := startTTL(t)
			c := te.coll(t, "c", i32(10))
			c.create(t, "inherit")
			c.create(t, "own", `"ttl":4`)
			c.create(t, "shorter", `"ttl":4`)
			c.create(t, "longer", `"ttl":4`)
			c.create(t, "untouched", `"ttl":4`)
			te.to(t, 3, 500*time.Millisecond)
			for id, f := range map[string]string{"inherit": "", "own": `"ttl":4`, "shorter": `"ttl":2`, "longer": `"ttl":12`} {
				if strings.HasSuffix(w.name, "patch") && id == "own" {
					f = "" // a patch that leaves ttl alone
				}
				c.checkTS(t, w.do(t, c, id, f))
			}
			te.timeline(t, map[*ttlColl]dues{c: {"untouched": 4, "shorter": 5, "own": 7, "inherit": 13, "longer": 15}})
		})
	}
}

// TestA2_RemovingTTLInherits: a replace without ttl, or a patch that
// removes it, makes the item inherit the container default from its new
// _ts.
func TestA2_RemovingTTLInherits(t *testing.T) {
	te := startTTL(t)
	n := te.coll(t, "n10", i32(10))
	minus := te.coll(t, "minus1", i32(-1))
	for _, c := range []*ttlColl{n, minus} {
		c.create(t, "replaced", `"ttl":3`)
		c.create(t, "patched", `"ttl":3`)
		c.create(t, "upserted", `"ttl":3`)
	}
	te.to(t, 2, 500*time.Millisecond)
	for _, c := range []*ttlColl{n, minus} {
		if _, err := c.ReplaceItem(ctx, pk, "replaced", doc("replaced"), nil); err != nil {
			t.Fatal(err)
		}
		if _, err := c.UpsertItem(ctx, pk, doc("upserted"), nil); err != nil {
			t.Fatal(err)
		}
		var ops azcosmos.PatchOperations
		ops.AppendRemove("/ttl")
		r, err := c.PatchItem(ctx, pk, "patched", ops, &azcosmos.ItemOptions{EnableContentResponseOnWrite: true})
		if err != nil {
			t.Fatal(err)
		}
		if m := c.checkTS(t, r.Value); m["ttl"] != nil {
			t.Fatalf("ttl still present after patch remove: %v", m["ttl"])
		}
	}
	te.timeline(t, map[*ttlColl]dues{
		n:     {"replaced": 12, "patched": 12, "upserted": 12},
		minus: {"replaced": never, "patched": never, "upserted": never},
	})
}

// TestA2_MinusOneStopsExpiry: setting ttl to -1 by replace, upsert or patch
// stops an item expiring, whatever the default.
func TestA2_MinusOneStopsExpiry(t *testing.T) {
	te := startTTL(t)
	c := te.coll(t, "c", i32(5))
	c.create(t, "inherit")
	c.create(t, "own", `"ttl":3`)
	c.create(t, "patched", `"ttl":3`)
	c.create(t, "control", `"ttl":3`)
	te.to(t, 2, 500*time.Millisecond)
	if _, err := c.ReplaceItem(ctx, pk, "inherit", doc("inherit", `"ttl":-1`), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.UpsertItem(ctx, pk, doc("own", `"ttl":-1`), nil); err != nil {
		t.Fatal(err)
	}
	var ops azcosmos.PatchOperations
	ops.AppendSet("/ttl", -1)
	if _, err := c.PatchItem(ctx, pk, "patched", ops, nil); err != nil {
		t.Fatal(err)
	}
	te.timeline(t, map[*ttlColl]dues{c: {"inherit": never, "own": never, "patched": never, "control": 3}})
}

// TestA2_ExpiredAtTSPlusTTL: an item is expired when _ts + ttl <= now, now
// not rounded: written at any fraction of second S, it has _ts S and is
// gone from S+ttl exactly, one nanosecond after being visible.
func TestA2_ExpiredAtTSPlusTTL(t *testing.T) {
	te := startTTL(t)
	own := te.coll(t, "own", i32(-1))
	inherit1 := te.coll(t, "inherit1", i32(1))
	inherit3 := te.coll(t, "inherit3", i32(3))
	var next int64 = 1
	for _, frac := range []time.Duration{0, 500 * time.Millisecond, time.Second - time.Nanosecond} {
		for _, m := range []int64{1, 3} {
			s := next
			next += 10
			te.to(t, s, frac)
			id := fmt.Sprintf("at%d", s)
			target := inherit1
			if m == 3 {
				target = inherit3
			}
			own.create(t, id, fmt.Sprintf(`"ttl":%d`, m))
			target.create(t, id)
			for _, c := range []*ttlColl{own, target} {
				if c.readStatus(t, id) != 200 {
					t.Fatalf("%s/%s not visible right after its write", c.id, id)
				}
			}
			te.to(t, s+m, -time.Nanosecond)
			for _, c := range []*ttlColl{own, target} {
				if c.readStatus(t, id) != 200 {
					t.Errorf("%s/%s (written at S+%d+%v, ttl %d) gone 1ns before _ts+ttl", c.id, id, s, frac, m)
				}
			}
			te.to(t, s+m, 0)
			for _, c := range []*ttlColl{own, target} {
				if c.readStatus(t, id) != 404 {
					t.Errorf("%s/%s (written at S+%d+%v, ttl %d) visible at _ts+ttl", c.id, id, s, frac, m)
				}
			}
		}
	}
}

// TestA3_ExpiredItemIsGone: from its expiry instant an item is invisible to
// every read, no operation can act on it (404), and create and upsert with
// its id succeed as for a new item (201).
func TestA3_ExpiredItemIsGone(t *testing.T) {
	te := startTTL(t)
	c := te.coll(t, "c", i32(5))
	old := c.create(t, "x", `"old":true`)
	c.create(t, "keep", `"ttl":-1`)
	te.to(t, 5, 0)
	all := []string{"x", "keep"}
	c.expect(t, all, []string{"keep"})

	etag := azcore.ETag(old["_etag"].(string))
	if _, err := c.ReplaceItem(ctx, pk, "x", doc("x"), nil); statusOf(err) != 404 {
		t.Errorf("replace expired: %v, want 404", err)
	}
	if _, err := c.ReplaceItem(ctx, pk, "x", doc("x"), &azcosmos.ItemOptions{IfMatchEtag: &etag}); statusOf(err) != 404 {
		t.Errorf("replace expired with its etag: %v, want 404", err)
	}
	if _, err := c.DeleteItem(ctx, pk, "x", nil); statusOf(err) != 404 {
		t.Errorf("delete expired: %v, want 404", err)
	}
	var ops azcosmos.PatchOperations
	ops.AppendSet("/v", 1)
	if _, err := c.PatchItem(ctx, pk, "x", ops, nil); statusOf(err) != 404 {
		t.Errorf("patch expired: %v, want 404", err)
	}
	if r := te.do("GET", "/"+c.link()+"/docs/x", nil, map[string]string{"x-ms-documentdb-partitionkey": `["p"]`, "If-None-Match": old["_etag"].(string)}); r.status != 404 {
		t.Errorf("conditional read of expired: %d, want 404", r.status)
	}
	c.expect(t, all, []string{"keep"})

	// Upsert with its id creates a new item.
	r, err := c.UpsertItem(ctx, pk, doc("x", `"new":1`), &azcosmos.ItemOptions{EnableContentResponseOnWrite: true})
	if err != nil || r.RawResponse.StatusCode != 201 {
		t.Fatalf("upsert over expired: %v, want 201", err)
	}
	if m := c.checkTS(t, r.Value); m["old"] != nil || m["new"] != float64(1) || m["_etag"] == old["_etag"] {
		t.Errorf("upsert over expired kept something of the old item: %v", m)
	}
	c.expect(t, all, all)

	// It expires again; then create with its id succeeds.
	te.to(t, 10, 0)
	c.expect(t, all, []string{"keep"})
	cr, err := c.CreateItem(ctx, pk, doc("x", `"newer":1`), &azcosmos.ItemOptions{EnableContentResponseOnWrite: true})
	if err != nil || cr.RawResponse.StatusCode != 201 {
		t.Fatalf("create over expired: %v, want 201", err)
	}
	if m := c.checkTS(t, cr.Value); m["new"] != nil || m["old"] != nil {
		t.Errorf("create over expired kept something of an old version: %v", m)
	}
	c.expect(t, all, all)
	te.checkIndexes(t)
}

// TestA3_BatchOnExpiredItem: in a transactional batch an expired item is
// missing: reading, replacing, patching or deleting it fails the batch with
// 404 and writes nothing, while creating or upserting it creates a new
// item (201).
func TestA3_BatchOnExpiredItem(t *testing.T) {
	te := startTTL(t)
	c := te.coll(t, "c", i32(5))
	c.create(t, "x", `"old":true`)
	c.create(t, "keep", `"ttl":-1`)
	te.to(t, 5, 0)
	all := []string{"x", "keep", "y"}
	var patch azcosmos.PatchOperations
	patch.AppendSet("/v", 1)
	for _, tc := range []struct {
		op  string
		add func(b *azcosmos.TransactionalBatch)
	}{
		{"read", func(b *azcosmos.TransactionalBatch) { b.ReadItem("x", nil) }},
		{"replace", func(b *azcosmos.TransactionalBatch) { b.ReplaceItem("x", doc("x"), nil) }},
		{"patch", func(b *azcosmos.TransactionalBatch) { b.PatchItem("x", patch, nil) }},
		{"delete", func(b *azcosmos.TransactionalBatch) { b.DeleteItem("x", nil) }},
	} {
		b := c.NewTransactionalBatch(pk)
		b.UpsertItem(doc("y"), nil) // must be rolled back
		tc.add(&b)
		r, err := c.ExecuteTransactionalBatch(ctx, b, nil)
		if err != nil {
			t.Fatalf("batch %s: %v", tc.op, err)
		}
		if r.Success || len(r.OperationResults) != 2 || r.OperationResults[1].StatusCode != 404 || r.OperationResults[0].StatusCode != http.StatusFailedDependency {
			t.Errorf("batch %s of an expired item: success %v, results %+v; want 424 then 404", tc.op, r.Success, r.OperationResults)
		}
		c.expect(t, all, []string{"keep"})
	}
	for i, op := range []string{"upsert", "create"} {
		b := c.NewTransactionalBatch(pk)
		if op == "upsert" {
			b.UpsertItem(doc("x", `"new":1`), nil)
		} else {
			b.CreateItem(doc("x", `"new":2`), nil)
		}
		r, err := c.ExecuteTransactionalBatch(ctx, b, &azcosmos.TransactionalBatchOptions{EnableContentResponseOnWrite: true})
		if err != nil || !r.Success || r.OperationResults[0].StatusCode != 201 {
			t.Fatalf("batch %s over an expired item: %v %+v, want 201", op, err, r.OperationResults)
		}
		if m := c.checkTS(t, r.OperationResults[0].ResourceBody); m["old"] != nil || m["new"] != float64(i+1) {
			t.Errorf("batch %s over an expired item kept something of the old one: %v", op, m)
		}
		c.expect(t, all, []string{"x", "keep"})
		te.to(t, int64(10+5*i), 0) // x expires again
		c.expect(t, all, []string{"keep"})
	}
	te.checkIndexes(t)
}

// TestA3_ExpiryAcrossPartitionKeyRanges: with several partition key
// ranges, expiry is judged alike in every range, by the per-range feeds,
// cross-partition queries, read-many and point reads, before and after the
// purge.
func TestA3_ExpiryAcrossPartitionKeyRanges(t *testing.T) {
	te := startTTL(t, withPartitions(4))
	cl := te.container(te.db, azcosmos.ContainerProperties{ID: "c", DefaultTimeToLive: i32(10),
		PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}, Version: 2}})
	plan := dues{}
	for i := range 60 {
		id, field := fmt.Sprintf("i%02d", i), ""
		switch i % 3 {
		case 0:
			plan[id] = 10
		case 1:
			field, plan[id] = `,"ttl":5`, 5
		case 2:
			field, plan[id] = `,"ttl":-1`, never
		}
		body := fmt.Sprintf(`{"id":%q,"pk":"k%d"%s}`, id, i, field)
		if _, err := cl.CreateItem(ctx, azcosmos.NewPartitionKeyString(fmt.Sprintf("k%d", i)), []byte(body), nil); err != nil {
			t.Fatal(err)
		}
	}
	keyOf := func(id string) azcosmos.PartitionKey {
		n, _ := strconv.Atoi(id[1:])
		return azcosmos.NewPartitionKeyString(fmt.Sprintf("k%d", n))
	}
	var ranges []string
	var pr struct {
		PartitionKeyRanges []struct{ ID string } `json:"PartitionKeyRanges"`
	}
	if err := json.Unmarshal(te.do("GET", "/dbs/db/colls/c/pkranges", nil, nil).body, &pr); err != nil || len(pr.PartitionKeyRanges) != 4 {
		t.Fatalf("pkranges: %v %+v", err, pr)
	}
	for _, r := range pr.PartitionKeyRanges {
		ranges = append(ranges, r.ID)
	}
	check := func(at time.Duration) {
		t.Helper()
		want := slices.Sorted(slices.Values(plan.visibleAt(at)))
		var read []string
		var idents []azcosmos.ItemIdentity
		for _, id := range plan.ids() {
			idents = append(idents, azcosmos.ItemIdentity{ID: id, PartitionKey: keyOf(id)})
			_, err := cl.ReadItem(ctx, keyOf(id), id, nil)
			switch {
			case err == nil:
				read = append(read, id)
			case statusOf(err) != 404:
				t.Fatalf("read %s: %v", id, err)
			}
		}
		var feed []string
		for _, rg := range ranges {
			r := te.do("GET", "/dbs/db/colls/c/docs", nil, map[string]string{"x-ms-documentdb-partitionkeyrangeid": rg, "x-ms-max-item-count": "-1"})
			var page struct{ Documents []struct{ ID string } }
			if err := json.Unmarshal(r.body, &page); err != nil || r.status != 200 {
				t.Fatalf("feed of range %s: %d %s", rg, r.status, r.body)
			}
			for _, d := range page.Documents {
				feed = append(feed, d.ID)
			}
		}
		var query []string
		p := cl.NewQueryItemsPager("SELECT * FROM c", azcosmos.NewPartitionKey(), nil)
		for p.More() {
			page, err := p.NextPage(ctx)
			if err != nil {
				t.Fatal(err)
			}
			query = append(query, idsOf(t, page.Items)...)
		}
		rm, err := cl.ReadManyItems(ctx, idents, nil)
		if err != nil {
			t.Fatal(err)
		}
		for path, got := range map[string][]string{"point reads": read, "range feeds": feed, "cross-partition query": query, "read-many": idsOf(t, rm.Items)} {
			if got = slices.Sorted(slices.Values(got)); !slices.Equal(got, want) {
				t.Errorf("at S+%v, %s: got %v, want %v", at, path, got, want)
			}
		}
	}
	for _, at := range []time.Duration{5*time.Second - time.Nanosecond, 5 * time.Second, 10*time.Second - time.Nanosecond, 10 * time.Second} {
		te.setClock(t, time.Unix(te.base, 0).Add(at))
		check(at)
		te.pass(t)
		check(at)
	}
	if got := te.checkIndexes(t)["dbs/db/colls/c"]; got.Items != 20 {
		t.Errorf("on disk after the purges: %+v, want the 20 items with ttl -1", got)
	}
}

// TestA3_ExpiredItemFreesUniqueKey: an expired item no longer holds its
// unique key values; a new item may take them, before and after the purge.
func TestA3_ExpiredItemFreesUniqueKey(t *testing.T) {
	te := startTTL(t)
	cl := te.container(te.db, azcosmos.ContainerProperties{ID: "u", DefaultTimeToLive: i32(5),
		PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}},
		UniqueKeyPolicy:        &azcosmos.UniqueKeyPolicy{UniqueKeys: []azcosmos.UniqueKey{{Paths: []string{"/email"}}}}})
	c := &ttlColl{ContainerClient: cl, te: te, id: "u"}
	c.create(t, "a", `"email":"x@y"`)
	if _, err := c.CreateItem(ctx, pk, doc("b", `"email":"x@y"`), nil); statusOf(err) != 409 {
		t.Fatalf("unique key while a is live: %v, want 409", err)
	}
	te.to(t, 5, 0)
	c.create(t, "b", `"email":"x@y"`)
	c.create(t, "a", `"email":"z@y"`)
	te.checkIndexes(t)
	te.pass(t)
	te.checkIndexes(t)
	if _, err := c.CreateItem(ctx, pk, doc("c", `"email":"x@y"`), nil); statusOf(err) != 409 {
		t.Fatalf("b must hold the value now: %v, want 409", err)
	}
	c.expect(t, []string{"a", "b", "c"}, []string{"a", "b"})
}

// TestA3_UsageExcludesExpired: the container's documentsCount and
// documentsSize drop at the expiry instant, before any purge.
func TestA3_UsageExcludesExpired(t *testing.T) {
	te := startTTL(t)
	c := te.coll(t, "c", i32(10))
	pad := `"pad":"` + strings.Repeat("x", 4096) + `"`
	c.create(t, "inherit", pad)
	c.create(t, "own", pad, `"ttl":5`)
	c.create(t, "never", pad, `"ttl":-1`)
	steps := []struct {
		at    time.Duration
		count int
	}{
		{5*time.Second - time.Nanosecond, 3},
		{5 * time.Second, 2},
		{10*time.Second - time.Nanosecond, 2},
		{10 * time.Second, 1},
	}
	for _, s := range steps {
		te.setClock(t, time.Unix(te.base, 0).Add(s.at))
		n, kb := c.usage(t)
		if n != s.count || kb < 4*s.count || kb > 5*s.count {
			t.Errorf("at S+%v: documentsCount=%d documentsSize=%d KB, want %d items of about 4 KB", s.at, n, kb, s.count)
		}
	}
	if counts := te.checkIndexes(t)[c.link()]; counts.Items != 3 || counts.Expired != 2 {
		t.Errorf("on disk before the purge: %+v, want 3 items of which 2 expired", counts)
	}
}

// TestA4_PurgeUsesSpareCapacityOnly: the purger takes only the capacity
// user requests leave: while they keep a container's budget in debt its
// batches are deferred, and when load stops it catches up at the
// container's rate. Its work is never charged to a user request, and the
// deferred items stay invisible meanwhile.
func TestA4_PurgeUsesSpareCapacityOnly(t *testing.T) {
	const rate = 100 // RU/s: 20 items a second at ttl.DefaultItemCost
	te := startTTL(t, func(cfg *server.Config) { cfg.PurgeRUPerSecond = rate })
	c := te.coll(t, "c", i32(1))
	plan := dues{"keep": never}
	c.create(t, "keep", `"ttl":-1`)
	for i := range 50 {
		id := fmt.Sprintf("i%02d", i)
		c.create(t, id) // 50 writes of 6 RU: the budget is in debt
		plan[id] = 1
	}
	charge := func() float32 {
		t.Helper()
		r, err := c.ReadItem(ctx, pk, "keep", nil)
		if err != nil {
			t.Fatal(err)
		}
		return r.RequestCharge
	}
	readCharge := charge()

	te.to(t, 1, 0)
	if res := te.pass(t); res.Purged != 0 || res.Deferred != 1 {
		t.Fatalf("pass under user load: purged %d, deferred %d; want 0 and 1", res.Purged, res.Deferred)
	}
	if got := te.metrics(t)[`mayfly_ttl_purge_batches_deferred_total{container="dbs/db/colls/c"}`]; got != 1 {
		t.Errorf("mayfly_ttl_purge_batches_deferred_total = %v, want 1", got)
	}
	c.expect(t, plan.ids(), []string{"keep"})

	// Load stops; two seconds later the bucket is full again: one second
	// of the rate, 20 items a pass, each second.
	for i, want := range []int{20, 20, 10, 0} {
		te.to(t, int64(3+i), 0)
		if res := te.pass(t); res.Purged != want {
			t.Errorf("pass %d after the load: purged %d, want %d", i, res.Purged, want)
		}
	}
	if got := te.checkIndexes(t)[c.link()]; got.Items != 1 {
		t.Errorf("on disk after catching up: %+v, want only keep", got)
	}
	if got := charge(); got != readCharge {
		t.Errorf("a read costs %v after the purge, %v before", got, readCharge)
	}
	c.expect(t, plan.ids(), []string{"keep"})
}

// memStore opens an in-memory store that t closes.
func memStore(t *testing.T) storage.Store {
	t.Helper()
	mem, err := pebblestore.Open(pebblestore.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mem.Close() })
	return mem
}

// twoGateways starts two servers on one manual clock over st, as two
// gateways over one store; only the first runs a purger.
func twoGateways(t *testing.T, st storage.Store) (g1, g2 *ttlEnv) {
	t.Helper()
	shared := func(cfg *server.Config) { cfg.Store = st }
	g1 = startTTL(t, shared)
	e2 := start(t, withManualClock(g1.clk), shared)
	if err := e2.srv.Purger().Close(); err != nil {
		t.Fatal(err)
	}
	db2, _ := e2.client.NewDatabase("db")
	return g1, &ttlEnv{env: e2, clk: g1.clk, db: db2, base: g1.base}
}

// TestA6_GatewaysAgree: two gateways over one store judge every item the
// same at every instant, including right after a setting change made
// through the other.
func TestA6_GatewaysAgree(t *testing.T) {
	g1, g2 := twoGateways(t, memStore(t))
	c1 := g1.coll(t, "c", i32(10))
	c2 := g2.open("c")
	c1.create(t, "inherit")
	c1.create(t, "own", `"ttl":5`)
	c1.create(t, "never", `"ttl":-1`)
	all := []string{"inherit", "own", "never"}
	both := func(want ...string) {
		t.Helper()
		c1.expect(t, all, want)
		c2.expect(t, all, want)
	}
	both(all...)
	g1.to(t, 5, -time.Nanosecond)
	both(all...)
	g1.to(t, 5, 0)
	both("inherit", "never")
	// A change through one gateway holds at once through the other, on a
	// clock that stands still.
	g1.to(t, 7, 500*time.Millisecond)
	c2.setDefaultTTL(t, i32(3))
	both("never")
	g1.to(t, 8, 500*time.Millisecond)
	c1.setDefaultTTL(t, nil)
	both("never")
	g1.to(t, 100, 0)
	both("never")
}

// TestA6_GatewaysAgreeUnderConcurrentChange: a setting change made through
// one gateway, dated before an item fell due but committed after, must not
// contradict what another gateway answered meanwhile (A6, B1).
func TestA6_GatewaysAgreeUnderConcurrentChange(t *testing.T) {
	gs := &gatedStore{Store: memStore(t), held: make(chan struct{}, 1)}
	g1, g2 := twoGateways(t, gs)
	c1 := g1.coll(t, "c", i32(10))
	c2 := g2.open("c")
	c1.create(t, "x")
	props := readProps(t, c2.ContainerClient)
	props.DefaultTimeToLive = nil

	g1.to(t, 9, 500*time.Millisecond) // x falls due at S+10
	gs.shut()
	replaced := make(chan error, 1)
	go func() {
		_, err := c2.Replace(ctx, props, nil)
		replaced <- err
	}()
	<-gs.held // dated S+9.5, not committed
	g1.to(t, 10, 500*time.Millisecond)
	first := c1.readStatus(t, "x") // gateway 1 is not held
	gs.open()
	if err := <-replaced; err != nil {
		t.Fatal(err)
	}
	if then, now := first, c1.readStatus(t, "x"); then != now {
		t.Errorf("x read %d through gateway 1 while the change was in flight, %d after it", then, now)
	}
}

// TestA5_DisableStopsExpiry: defaultTtl null turns TTL off completely: no
// item expires, not even one with its own ttl, and nothing is purged. That
// differs from -1, under which own ttls still count.
func TestA5_DisableStopsExpiry(t *testing.T) {
	te := startTTL(t)
	off := te.coll(t, "off", i32(10))
	minus := te.coll(t, "minus1", i32(10))
	for _, c := range []*ttlColl{off, minus} {
		c.create(t, "inherit")
		c.create(t, "own", `"ttl":5`)
		c.create(t, "never", `"ttl":-1`)
	}
	te.to(t, 2, 500*time.Millisecond)
	off.setDefaultTTL(t, nil)
	minus.setDefaultTTL(t, i32(-1))
	te.timeline(t, map[*ttlColl]dues{
		off:   {"inherit": never, "own": never, "never": never},
		minus: {"inherit": never, "own": 5, "never": never},
	})
	// The passes of the timeline purged minus1/own and nothing of off.
	counts := te.checkIndexes(t)
	if counts[off.link()].Items != 3 || counts[minus.link()].Items != 2 {
		t.Errorf("on disk: %+v, want all 3 items of off and 2 of minus1", counts)
	}
}

// setDefaultTTL replaces the container with defaultTtl v (nil: off),
// through the SDK, and checks the setting reads back.
func (c *ttlColl) setDefaultTTL(t *testing.T, v *int32) {
	t.Helper()
	r, err := c.Read(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	props := *r.ContainerProperties
	props.DefaultTimeToLive = v
	if _, err := c.Replace(ctx, props, nil); err != nil {
		t.Fatalf("replace %s with defaultTtl %v: %v", c.id, v, err)
	}
	r, err = c.Read(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if g := r.ContainerProperties.DefaultTimeToLive; (g == nil) != (v == nil) || (g != nil && *g != *v) {
		t.Fatalf("defaultTtl reads back as %v", g)
	}
}

// TestA5_EnableMakesOverdueVanish: enabling TTL brings items' own ttls into
// force at once, measured from their existing _ts, so overdue items vanish
// immediately. A ttl stored while off that is not valid counts as absent.
func TestA5_EnableMakesOverdueVanish(t *testing.T) {
	te := startTTL(t)
	n := te.coll(t, "n50", nil)
	minus := te.coll(t, "minus1", nil)
	for _, c := range []*ttlColl{n, minus} {
		c.create(t, "inherit")
		c.create(t, "own", `"ttl":5`)
		c.create(t, "later", `"ttl":200`)
		c.create(t, "never", `"ttl":-1`)
		c.create(t, "junk", `"ttl":"5"`)
	}
	all := []string{"inherit", "own", "later", "never", "junk"}
	te.to(t, 100, 500*time.Millisecond)
	n.expect(t, all, all)
	minus.expect(t, all, all)
	n.setDefaultTTL(t, i32(50))
	minus.setDefaultTTL(t, i32(-1))
	n.expect(t, all, []string{"later", "never"})
	minus.expect(t, all, []string{"inherit", "later", "never", "junk"})
	te.timeline(t, map[*ttlColl]dues{
		n:     {"inherit": 50, "own": 5, "later": 200, "never": never, "junk": 50},
		minus: {"inherit": never, "own": 5, "later": 200, "never": never, "junk": never},
	})
}

// TestA5_IndexingModeNone: TTL needs indexing. Creating a container with
// defaultTtl and indexing mode none, adding defaultTtl to a container
// without indexing, and switching a container with defaultTtl to none are
// all refused with 400, changing nothing.
func TestA5_IndexingModeNone(t *testing.T) {
	te := startTTL(t)
	none := &azcosmos.IndexingPolicy{IndexingMode: azcosmos.IndexingModeNone}
	key := azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}}
	for _, def := range []int32{-1, 10} {
		_, err := te.db.CreateContainer(ctx, azcosmos.ContainerProperties{ID: "x", PartitionKeyDefinition: key, DefaultTimeToLive: i32(def), IndexingPolicy: none}, nil)
		if statusOf(err) != 400 || !strings.Contains(err.Error(), "defaultTtl") {
			t.Errorf("create with defaultTtl %d and indexing none: %v, want 400", def, err)
		}
	}
	if r := te.do("GET", "/dbs/db/colls/x", nil, nil); r.status != 404 {
		t.Fatalf("a refused container was created: %d", r.status)
	}

	// No indexing, no TTL: fine. Then adding TTL is refused.
	unindexed := te.container(te.db, azcosmos.ContainerProperties{ID: "unindexed", PartitionKeyDefinition: key, IndexingPolicy: none})
	props := readProps(t, unindexed)
	props.DefaultTimeToLive = i32(10)
	if _, err := unindexed.Replace(ctx, props, nil); statusOf(err) != 400 {
		t.Errorf("adding defaultTtl to an unindexed container: %v, want 400", err)
	}
	if p := readProps(t, unindexed); p.DefaultTimeToLive != nil || p.IndexingPolicy.IndexingMode != azcosmos.IndexingModeNone && p.IndexingPolicy.IndexingMode != "none" {
		t.Errorf("refused replace changed the container: defaultTtl %v, mode %q", p.DefaultTimeToLive, p.IndexingPolicy.IndexingMode)
	}

	// TTL on: switching to none is refused, with defaultTtl -1 or n.
	for _, def := range []int32{-1, 10} {
		id := fmt.Sprintf("ttl%d", def)
		c := te.container(te.db, azcosmos.ContainerProperties{ID: id, PartitionKeyDefinition: key, DefaultTimeToLive: i32(def)})
		props := readProps(t, c)
		props.IndexingPolicy = none
		if _, err := c.Replace(ctx, props, nil); statusOf(err) != 400 {
			t.Errorf("switching %s to indexing none: %v, want 400", id, err)
		}
		if p := readProps(t, c); p.DefaultTimeToLive == nil || *p.DefaultTimeToLive != def || strings.EqualFold(string(p.IndexingPolicy.IndexingMode), "none") {
			t.Errorf("refused replace changed %s: defaultTtl %v, mode %q", id, p.DefaultTimeToLive, p.IndexingPolicy.IndexingMode)
		}
		// Dropping TTL and indexing together is allowed.
		props.DefaultTimeToLive = nil
		if _, err := c.Replace(ctx, props, nil); err != nil {
			t.Errorf("turning off TTL and indexing together on %s: %v", id, err)
		}
	}
}

func readProps(t *testing.T, c *azcosmos.ContainerClient) azcosmos.ContainerProperties {
	t.Helper()
	r, err := c.Read(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	return *r.ContainerProperties
}

// TestB1_ExpiryIsFinal: once expired, an item stays gone whatever the
// setting becomes (off, a longer default, -1), with the purger never run,
// and then after the purge.
func TestB1_ExpiryIsFinal(t *testing.T) {
	changes := []struct {
		name string
		to   *int32
	}{{"disable", nil}, {"lengthen", i32(1000)}, {"minus one", i32(-1)}}
	for _, ch := range changes {
		t.Run(ch.name, func(t *testing.T) {
			te := startTTL(t)
			c := te.coll(t, "c", i32(5))
			c.create(t, "inherit")
			c.create(t, "own", `"ttl":3`)
			c.create(t, "never", `"ttl":-1`)
			all := []string{"inherit", "own", "never"}
			te.to(t, 6, 0)
			c.expect(t, all, []string{"never"})
			c.setDefaultTTL(t, ch.to)
			c.expect(t, all, []string{"never"})
			te.to(t, 1000, 0)
			c.expect(t, all, []string{"never"})
			// A second change does not bring them back either.
			c.setDefaultTTL(t, i32(2000))
			c.setDefaultTTL(t, nil)
			c.expect(t, all, []string{"never"})
			if counts := te.checkIndexes(t)[c.link()]; counts.Items != 3 || counts.Expired != 2 {
				t.Errorf("before the purge: %+v, want 3 items on disk of which 2 expired", counts)
			}
			if res := te.pass(t); res.Purged != 2 {
				t.Errorf("the purge after the change removed %d items, want 2", res.Purged)
			}
			c.expect(t, all, []string{"never"})
			if counts := te.checkIndexes(t)[c.link()]; counts.Items != 1 {
				t.Errorf("after the purge: %+v, want 1 item on disk", counts)
			}
		})
	}
}

// TestB1_ExpiryIsFinalAcrossRestart: expired items stay gone after the
// setting changes and the server restarts on the same data, before and
// after the purge.
func TestB1_ExpiryIsFinalAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	te := startTTL(t, withDataDir(dir))
	c := te.coll(t, "c", i32(5))
	c.create(t, "inherit")
	c.create(t, "own", `"ttl":3`)
	c.create(t, "never", `"ttl":-1`)
	c.create(t, "late", `"ttl":100`)
	all := []string{"inherit", "own", "never", "late"}
	te.to(t, 6, 0)
	c.setDefaultTTL(t, nil) // TTL off: "late" no longer expires
	c.expect(t, all, []string{"never", "late"})

	te.close(t)
	// Offline, before any purger could run: the expired items are on disk
	// and still judged expired.
	offline(t, dir, te.clk, func(eng *engine.Engine) {
		counts, err := eng.CheckIndexes(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got := counts[c.link()]; got.Items != 4 || got.Expired != 2 {
			t.Errorf("on disk after close: %+v, want 4 items of which 2 expired", got)
		}
		for _, id := range all {
			_, err := eng.ReadItem(ctx, engine.ReadItemParams{ItemRef: engine.ItemRef{DB: "db", Coll: "c",
				PartitionKey: partition.Key{partition.String(ttlPK)}, HasKey: true}, ID: id})
			var ee *engine.Error
			gone := errors.As(err, &ee) && ee.Code == engine.NotFound
			if wantGone := id == "inherit" || id == "own"; gone != wantGone || (!gone && err != nil) {
				t.Errorf("offline read of %s: %v", id, err)
			}
		}
	})
	// Restart (the new purger may run at once), purge, restart again.
	for round := 0; round < 2; round++ {
		te = te.restart(t, dir)
		c = te.open("c")
		te.stopPurger(t)
		c.expect(t, all, []string{"never", "late"})
		te.pass(t)
		if counts := te.checkIndexes(t)[c.link()]; counts.Items != 2 || counts.Expired != 0 {
			t.Errorf("round %d: on disk %+v, want 2 live items", round, counts)
		}
	}
	te.to(t, 200, 0)
	c.expect(t, all, []string{"never", "late"})
}

// close stops the server; the harness's Close at the end of the test is
// then harmless. Dropping the client's idle connections first spares the
// server's wait for HTTP/2 clients to hang up.
func (te *ttlEnv) close(t *testing.T) {
	t.Helper()
	te.http.CloseIdleConnections()
	if err := te.srv.Close(ctx); err != nil {
		t.Fatalf("close: %v", err)
	}
}

// restart closes the server and starts another on the same data directory
// and clock.
func (te *ttlEnv) restart(t *testing.T, dir string) *ttlEnv {
	t.Helper()
	te.close(t)
	e := start(t, withManualClock(te.clk), withDataDir(dir))
	db, err := e.client.NewDatabase("db")
	if err != nil {
		t.Fatal(err)
	}
	return &ttlEnv{env: e, clk: te.clk, db: db, base: te.base}
}

// offline opens the store of a server's data directory directly, without
// a server or a purger, and runs fn on an engine over it.
func offline(t *testing.T, dir string, clk clock.Clock, fn func(*engine.Engine)) {
	t.Helper()
	st, err := pebblestore.Open(pebblestore.Options{Dir: filepath.Join(dir, "store")})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := st.Close(); err != nil {
			t.Error(err)
		}
	}()
	eng, err := engine.New(engine.Config{Store: st, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	fn(eng)
}

// open returns a client for an existing container.
func (te *ttlEnv) open(id string) *ttlColl {
	c, _ := te.db.NewContainer(id)
	return &ttlColl{ContainerClient: c, te: te, id: id}
}

// TestB1_ExpiryIsFinalAtTheChangeInstant: reads made at the very instant
// a setting change is dated must not be contradicted by it. Two cases, on
// a clock that stands still at S+7:
//   - an item due at S+7 exactly is judged expired at S+7, then TTL is
//     turned off at S+7;
//   - defaultTtl is shortened at S+7, which expires an item at once, and
//     then turned off at the same instant.
//
// Each time the item must stay gone.
func TestB1_ExpiryIsFinalAtTheChangeInstant(t *testing.T) {
	te := startTTL(t)
	due := te.coll(t, "due", i32(-1))
	due.create(t, "x", `"ttl":7`)
	twice := te.coll(t, "twice", i32(10))
	twice.create(t, "x")
	te.to(t, 7, 0)
	due.expect(t, []string{"x"}, nil) // due at S+7: expired at S+7
	due.setDefaultTTL(t, nil)
	due.expect(t, []string{"x"}, nil)

	twice.expect(t, []string{"x"}, []string{"x"})
	twice.setDefaultTTL(t, i32(3)) // S+3 <= S+7: expired at once
	twice.expect(t, []string{"x"}, nil)
	twice.setDefaultTTL(t, nil)
	twice.expect(t, []string{"x"}, nil)
}

// gatedStore holds every Update at a gate while the test keeps it shut, so
// a test can stop a write between the moment it took its instant and its
// commit.
type gatedStore struct {
	storage.Store
	mu   sync.Mutex
	gate chan struct{} // nil when open
	held chan struct{} // told of each Update held
}

func (s *gatedStore) Update(ctx context.Context, fn func(storage.Txn) error) error {
	s.mu.Lock()
	g := s.gate
	s.mu.Unlock()
	if g != nil {
		s.held <- struct{}{}
		<-g
	}
	return s.Store.Update(ctx, fn)
}

func (s *gatedStore) shut() {
	s.mu.Lock()
	s.gate = make(chan struct{})
	s.mu.Unlock()
}

func (s *gatedStore) open() {
	s.mu.Lock()
	close(s.gate)
	s.gate = nil
	s.mu.Unlock()
}

// TestB1_ExpiryIsFinalUnderConcurrentChange: a setting change asked for
// before an item fell due, but held back from committing until after, takes
// effect at the instant it commits; reads made while it waits judge by the
// old setting, and the change does not contradict them. Reads during the
// change and after it all agree, through every read path.
func TestB1_ExpiryIsFinalUnderConcurrentChange(t *testing.T) {
	gs := &gatedStore{Store: memStore(t), held: make(chan struct{}, 1)}
	te := startTTL(t, func(cfg *server.Config) { cfg.Store = gs })
	c := te.coll(t, "c", i32(10))
	c.create(t, "x")
	c.create(t, "y", `"ttl":-1`)
	props := readProps(t, c.ContainerClient)
	props.DefaultTimeToLive = nil

	te.to(t, 9, 500*time.Millisecond) // x falls due at S+10
	gs.shut()
	replaced := make(chan error, 1)
	go func() {
		_, err := c.Replace(ctx, props, nil)
		replaced <- err
	}()
	<-gs.held // the change was asked for at S+9.5 and waits to commit
	te.to(t, 10, 500*time.Millisecond)

	type seen struct {
		path string
		got  string
	}
	during := make(chan seen, 3)
	go func() {
		status := 200
		if _, err := c.ReadItem(ctx, pk, "x", nil); err != nil {
			status = statusOf(err)
		}
		during <- seen{"point read", strconv.Itoa(status)}
	}()
	go func() {
		rows, err := queryRows(c, "SELECT VALUE COUNT(1) FROM c")
		if err != nil {
			during <- seen{"COUNT", err.Error()}
			return
		}
		during <- seen{"COUNT", string(rows[0])}
	}()
	go func() {
		r, err := c.Read(ctx, nil)
		if err != nil {
			during <- seen{"usage", err.Error()}
			return
		}
		u := r.RawResponse.Header.Get("x-ms-resource-usage")
		i := strings.Index(u, "documentsCount=")
		during <- seen{"usage", strings.Split(u[i+len("documentsCount="):], ";")[0]}
	}()
	time.Sleep(100 * time.Millisecond)
	gs.open()
	if err := <-replaced; err != nil {
		t.Fatalf("replace: %v", err)
	}
	// The change commits at S+10.5, after x fell due at S+10 under the old
	// setting: x expired while the change waited, and stays expired.
	want := map[string]string{"point read": "404", "COUNT": "1", "usage": "1"}
	for range 3 {
		s := <-during
		if s.got != want[s.path] {
			t.Errorf("%s while the change was in flight: %s, want %s", s.path, s.got, want[s.path])
		}
	}
	te.timeline(t, map[*ttlColl]dues{c: {"x": 10, "y": never}})
}

// TestB1_NotYetExpiredFollowNewSetting: items that had not expired when the
// setting changed follow the new setting from then on: a longer default
// delays them, a shorter one may expire them at once, off or -1 keeps
// inheriting items forever, and own ttls count while TTL is on.
func TestB1_NotYetExpiredFollowNewSetting(t *testing.T) {
	te := startTTL(t)
	cases := []struct {
		name string
		to   *int32
		want dues
	}{
		{"lengthen", i32(30), dues{"inherit": 30, "own": 20, "late": 33}},
		{"shorten", i32(4), dues{"inherit": 4, "own": 20, "late": 7}},
		{"disable", nil, dues{"inherit": never, "own": never, "late": never}},
		{"minus one", i32(-1), dues{"inherit": never, "own": 20, "late": never}},
	}
	colls := map[string]*ttlColl{}
	for _, tc := range cases {
		c := te.coll(t, strings.ReplaceAll(tc.name, " ", ""), i32(10))
		c.create(t, "inherit")
		c.create(t, "own", `"ttl":20`)
		colls[tc.name] = c
	}
	te.to(t, 3, 500*time.Millisecond)
	for _, c := range colls {
		c.create(t, "late")
	}
	te.to(t, 5, 500*time.Millisecond)
	plan := map[*ttlColl]dues{}
	for _, tc := range cases {
		colls[tc.name].setDefaultTTL(t, tc.to)
		plan[colls[tc.name]] = tc.want
	}
	// "shorten" expires "inherit" (S+4) the moment the change lands.
	colls["shorten"].expect(t, []string{"inherit", "own", "late"}, []string{"own", "late"})
	te.timeline(t, plan)
}

// TestB2_DefaultChangeAppliesAtOnce: a defaultTtl change takes effect for
// every item at once. Queries running while it lands see either the old
// setting or the new one, never a mix, and once one sees the new setting
// no later one sees the old.
func TestB2_DefaultChangeAppliesAtOnce(t *testing.T) {
	te := startTTL(t)
	c := te.coll(t, "c", i32(1000))
	plan := dues{}
	for s := int64(0); s < 10; s++ {
		te.to(t, s, 500*time.Millisecond)
		for i := 0; i < 10; i++ {
			id := fmt.Sprintf("s%d-%d", s, i)
			c.create(t, id)
			plan[id] = s + 15
		}
	}
	te.to(t, 20, 500*time.Millisecond)
	if n := c.count(t); n != 100 {
		t.Fatalf("COUNT before the change = %d", n)
	}
	const newCount = 40 // _ts + 15 <= S+20.5 for _ts <= S+5: 60 items go
	var wg sync.WaitGroup
	stop := make(chan struct{})
	errs := make(chan string, 100)
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			seenNew := false
			for {
				select {
				case <-stop:
					return
				default:
				}
				rows, err := queryRows(c, "SELECT VALUE COUNT(1) FROM c")
				if err != nil {
					errs <- err.Error()
					return
				}
				switch n := string(rows[0]); {
				case n == strconv.Itoa(newCount):
					seenNew = true
				case n == "100" && !seenNew:
				default:
					errs <- fmt.Sprintf("COUNT %s during the change (seen new: %v)", n, seenNew)
					return
				}
			}
		}()
	}
	time.Sleep(20 * time.Millisecond)
	c.setDefaultTTL(t, i32(15))
	if n := c.count(t); n != newCount {
		t.Errorf("COUNT right after the change = %d, want %d", n, newCount)
	}
	time.Sleep(20 * time.Millisecond)
	close(stop)
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	te.timeline(t, map[*ttlColl]dues{c: plan})
}

func queryRows(c *ttlColl, q string) ([][]byte, error) {
	var rows [][]byte
	p := c.NewQueryItemsPager(q, pk, nil)
	for p.More() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, err
		}
		rows = append(rows, page.Items...)
	}
	return rows, nil
}

// TestA3_PurgeDeletesPhysically: purge passes physically delete exactly the
// expired items of containers with TTL on, with their index entries, and is
// invisible except as freed space; the metrics count what it deleted.
func TestA3_PurgeDeletesPhysically(t *testing.T) {
	te := startTTL(t)
	c := te.coll(t, "c", i32(10))
	off := te.coll(t, "off", nil)
	plan := dues{}
	for i := 0; i < 30; i++ {
		id := fmt.Sprintf("inherit%02d", i)
		c.create(t, id)
		plan[id] = 10
	}
	for i := 0; i < 20; i++ {
		id := fmt.Sprintf("own%02d", i)
		c.create(t, id, `"ttl":5`)
		plan[id] = 5
	}
	for i := 0; i < 10; i++ {
		id := fmt.Sprintf("never%02d", i)
		c.create(t, id, `"ttl":-1`)
		plan[id] = never
		off.create(t, id, `"ttl":1`)
	}
	offAll := dues{}
	for i := 0; i < 10; i++ {
		offAll[fmt.Sprintf("never%02d", i)] = never
	}
	want := func(items, expired, due, inherit int) engine.IndexCounts {
		// Range index entries: id, pk and, for all but inheriting items,
		// ttl. Every expiry entry has its record image while TTL is on.
		return engine.IndexCounts{Items: items, Expired: expired, DueEntries: due, InheritEntries: inherit,
			Images: due + inherit, IndexEntries: 3*items - inherit}
	}
	offWant := engine.IndexCounts{Items: 10, DueEntries: 10, IndexEntries: 30}
	checkDisk := func(step string, cw, ow engine.IndexCounts) {
		t.Helper()
		counts := te.checkIndexes(t)
		// The entries of paths ORDER BY queries listed (expect's among
		// them) come with the indexer's passes in the background; the
		// check has found them exact against the items.
		for _, l := range []string{c.link(), off.link()} {
			n := counts[l]
			n.OrderEntries = 0
			counts[l] = n
		}
		if counts[c.link()] != cw || counts[off.link()] != ow {
			t.Errorf("%s: on disk %+v / off %+v, want %+v / %+v", step, counts[c.link()], counts[off.link()], cw, ow)
		}
	}
	checkDisk("written", want(60, 0, 20, 30), offWant)

	steps := []struct {
		at            int64
		purged        int
		before, after engine.IndexCounts
		purgedTotal   float64
	}{
		{5, 20, want(60, 20, 20, 30), want(40, 0, 0, 30), 20},
		{10, 30, want(40, 30, 0, 30), want(10, 0, 0, 0), 50},
		{1000, 0, want(10, 0, 0, 0), want(10, 0, 0, 0), 50},
	}
	for _, s := range steps {
		te.to(t, s.at, 0)
		visible := plan.visibleAt(time.Duration(s.at) * time.Second)
		c.expect(t, plan.ids(), visible)
		checkDisk(fmt.Sprintf("S+%d before the pass", s.at), s.before, offWant)
		if due, err := te.srv.Engine().CountDue(ctx, ttl.CountDueParams{Container: c.link(), Now: te.clk.Now(), Max: 1000}); err != nil || due != s.purged {
			t.Errorf("S+%d: CountDue = %d, %v; want %d", s.at, due, err, s.purged)
		}
		if n := te.purgeAll(t); n != s.purged {
			t.Errorf("S+%d: passes purged %d, want %d", s.at, n, s.purged)
		}
		c.expect(t, plan.ids(), visible)
		off.expect(t, offAll.ids(), offAll.ids())
		checkDisk(fmt.Sprintf("S+%d after the pass", s.at), s.after, offWant)
		m := te.metrics(t)
		if got := m[`mayfly_ttl_items_purged_total{container="dbs/db/colls/c"}`]; got != s.purgedTotal {
			t.Errorf("S+%d: mayfly_ttl_items_purged_total = %v, want %v", s.at, got, s.purgedTotal)
		}
		if got, ok := m[`mayfly_ttl_items_awaiting_purge{container="dbs/db/colls/c"}`]; !ok || got != 0 {
			t.Errorf("S+%d: mayfly_ttl_items_awaiting_purge = %v (%v), want 0", s.at, got, ok)
		}
	}
	if got := te.metrics(t)[`mayfly_ttl_items_purged_total{container="dbs/db/colls/off"}`]; got != 0 {
		t.Errorf("purged %v items of a container with TTL off", got)
	}
}

// metrics scrapes the metrics listener into "name{labels}" → value.
func (e *env) metrics(t *testing.T) map[string]float64 {
	t.Helper()
	resp, err := e.http.Get(e.metricsURL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/metrics: %d", resp.StatusCode)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, line := range strings.Split(string(b), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			out[line[:i]] = v
		}
	}
	return out
}

// TestB3_BackgroundPurge: the purger's loop, driven by the clock, removes
// expired items without being asked.
func TestB3_BackgroundPurge(t *testing.T) {
	te := startTTLWithPurger(t)
	c := te.coll(t, "c", i32(1))
	for i := 0; i < 25; i++ {
		c.create(t, fmt.Sprintf("i%02d", i))
	}
	c.create(t, "never", `"ttl":-1`)
	deadline := time.Now().Add(5 * time.Second)
	for step := 1; ; step++ {
		// Each step moves the clock by one purge interval, firing the
		// loop's timer.
		te.setClock(t, te.clk.Now().Add(ttl.DefaultInterval))
		if counts := te.checkIndexes(t)[c.link()]; counts.Items == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the background purger did not remove the expired items: %+v", te.checkIndexes(t)[c.link()])
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got := te.metrics(t)[`mayfly_ttl_items_purged_total{container="dbs/db/colls/c"}`]; got != 25 {
		t.Errorf("mayfly_ttl_items_purged_total = %v, want 25", got)
	}
}
