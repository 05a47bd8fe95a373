package engine

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mayfly-db/mayfly/internal/partition"
	"github.com/mayfly-db/mayfly/internal/query/plan"
	"github.com/mayfly-db/mayfly/internal/storage"
	"github.com/mayfly-db/mayfly/internal/storage/teststore"
	"github.com/mayfly-db/mayfly/internal/ttl"
)

// A count of a container's range comes from its usage counters and equals
// what evaluating it over the range's items gives, in both of its shapes
// (the query, and the SDKs' rewrite of it for each range), through
// creates, replaces, deletes, items expiring (purged or not yet) and items
// changing their TTL; the ranges add up to the container's usage. Other
// shapes are evaluated.
func TestCountFromCounters(t *testing.T) {
	be := newBatchEnv(t, "null")
	ctx := context.Background()
	ranges := be.rangedContainer(t)
	rnd := rand.New(rand.NewPCG(7, 11))
	whole := ItemRef{DB: "db", Coll: "s"}
	count := func(q, rangeID string) (string, *FeedPage) {
		t.Helper()
		page, err := be.e.QueryItems(ctx, QueryParams{ItemRef: whole, Query: q, RangeID: rangeID, CrossPartition: true})
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		if len(page.Items) != 1 {
			t.Fatalf("%s: %d rows", q, len(page.Items))
		}
		return string(page.Items[0]), page
	}
	checks, partChecks := 0, 0
	// Every 15th step; a third as often where reads cost more (changeSteps).
	every := 15
	if testing.Short() || RaceEnabled {
		every = 45
	}
	for step := range 600 {
		be.churn(t, "s", rnd, 80, 17, nil)
		if step%every != every-1 {
			continue
		}
		var sum int
		for _, rg := range ranges {
			for _, shape := range []string{"SELECT VALUE COUNT(1) FROM c", `SELECT VALUE [{"item": COUNT(1)}] FROM c`} {
				got, page := count(shape, rg.ID)
				want, _ := count(shape+" WHERE true", rg.ID)
				if got != want {
					t.Fatalf("step %d, range %s, %s: the counters give %s, the items %s", step, rg.ID, shape, got, want)
				}
				if page.Plan == nil || page.Plan.Chosen.Access != plan.Counters || page.Examined != 0 {
					t.Fatalf("step %d, %s: read %d records by %v", step, shape, page.Examined, page.Plan)
				}
				if shape == "SELECT VALUE COUNT(1) FROM c" {
					n, err := strconv.Atoi(got)
					if err != nil {
						t.Fatal(err)
					}
					sum += n
					checks += n
				}
			}
		}
		// Each logical partition is counted from its EPK's counter,
		// alone and within each range (where it lies outside, it counts
		// 0).
		for part := range 17 {
			ref := whole
			ref.HasKey, ref.PartitionKey = true, partition.Key{partition.String("p" + strconv.Itoa(part))}
			var inRanges int
			for _, rangeID := range append([]string{""}, rangeIDs(ranges)...) {
				q := func(text string) (string, *FeedPage) {
					t.Helper()
					page, err := be.e.QueryItems(ctx, QueryParams{ItemRef: ref, Query: text, RangeID: rangeID})
					if err != nil {
						t.Fatal(err)
					}
					if len(page.Items) != 1 {
						t.Fatalf("%s in p%d, range %q: %v, %d rows", text, part, rangeID, err, len(page.Items))
					}
					return string(page.Items[0]), page
				}
				got, page := q("SELECT VALUE COUNT(1) FROM c")
				want, _ := q("SELECT VALUE COUNT(1) FROM c WHERE true")
				if got != want {
					t.Fatalf("step %d, p%d, range %q: the counter gives %s, the items %s", step, part, rangeID, got, want)
				}
				if page.Plan == nil || page.Plan.Chosen.Access != plan.Counters || page.Examined != 0 {
					t.Fatalf("step %d, p%d: read %d records by %v", step, part, page.Examined, page.Plan)
				}
				// The key pinned by the WHERE clause instead of the
				// header: the same counter.
				text := fmt.Sprintf("SELECT VALUE COUNT(1) FROM c WHERE c.pk = 'p%d'", part)
				pinned, err := be.e.QueryItems(ctx, QueryParams{ItemRef: whole, Query: text, RangeID: rangeID, CrossPartition: true})
				if err != nil || len(pinned.Items) != 1 || string(pinned.Items[0]) != got {
					t.Fatalf("step %d, %s, range %q: %v, %q; the header's count %s", step, text, rangeID, err, pinned.Items, got)
				}
				if pinned.Plan == nil || pinned.Plan.Chosen.Access != plan.Counters || pinned.Examined != 0 {
					t.Fatalf("step %d, %s: read %d records by %v", step, text, pinned.Examined, pinned.Plan)
				}
				// Both, naming the same key: the same counter too.
				entries := page.IndexEntries
				both, page := q(text)
				if both != got || page.Plan == nil || page.Plan.Chosen.Access != plan.Counters || page.IndexEntries > entries {
					t.Fatalf("step %d, %s with its key's header, range %q: %s by %v (%d entries); the header's count %s", step, text, rangeID, both, page.Plan, page.IndexEntries, got)
				}
				if other, _ := q(fmt.Sprintf("SELECT VALUE COUNT(1) FROM c WHERE c.pk = 'p%d'", part+1)); other != "0" {
					t.Fatalf("step %d, p%d: another key's count under its header gives %s", step, part, other)
				}
				if rangeID != "" && got != "0" {
					inRanges++
				}
				if rangeID == "" && got != "0" {
					partChecks++
				}
			}
			if inRanges > 1 {
				t.Fatalf("step %d: p%d counted in %d ranges", step, part, inRanges)
			}
		}
		if _, err := be.e.CheckIndexes(ctx); err != nil {
			t.Fatal(err)
		}
		_, usage, err := be.e.ReadContainer(ctx, "db", "s")
		if err != nil {
			t.Fatal(err)
		}
		if int64(sum) != usage.DocumentsCount {
			t.Fatalf("step %d: the ranges count %d items, the container %d", step, sum, usage.DocumentsCount)
		}
	}
	if checks == 0 || partChecks == 0 {
		t.Fatal("every count was 0: the test shows nothing")
	}
	for _, q := range []string{
		"SELECT COUNT(1) FROM c",
		"SELECT VALUE COUNT(c.id) FROM c",
		"SELECT VALUE COUNT(1) FROM c.children ch",
		"SELECT VALUE COUNT(1) FROM x IN c.tags",
		"SELECT VALUE COUNT(1) FROM c JOIN t IN c.tags",
		"SELECT VALUE COUNT(1) FROM c WHERE c.pk > 'p1'",
		`SELECT VALUE [{"item": COUNT(1)}, {"item": COUNT(1)}] FROM c`,
		`SELECT VALUE [{"n": COUNT(1)}] FROM c`,
		"SELECT VALUE COUNT(1) FROM c GROUP BY c.pk",
	} {
		page, err := be.e.QueryItems(ctx, QueryParams{ItemRef: whole, Query: q, RangeID: ranges[0].ID, CrossPartition: true})
		if err != nil {
			continue // refused for its own reasons
		}
		if page.Plan != nil && page.Plan.Chosen.Access == plan.Counters {
			t.Errorf("%s: answered from the counters", q)
		}
	}
}

// A container of one range is counted whole from its counters, less the
// items expired and not purged; so is it under WHERE true, a filter every
// row passes (eval's folded filters drop it).
func TestWholeCountFromCounters(t *testing.T) {
	be := newBatchEnv(t, "-1")
	ctx := context.Background()
	for i := range 30 {
		pk := "p" + strconv.Itoa(i%7)
		ttlProp := ""
		if i%3 == 0 {
			ttlProp = `,"ttl":5`
		}
		ref := ItemRef{DB: "db", Coll: "c", HasKey: true, PartitionKey: partition.Key{partition.String(pk)}}
		if _, err := be.e.WriteItem(ctx, WriteItemParams{ItemRef: ref, Mode: ModeCreate, Body: []byte(fmt.Sprintf(`{"id":"x%d","pk":"%s"%s}`, i, pk, ttlProp))}); err != nil {
			t.Fatal(err)
		}
	}
	be.clock.Advance(10 * time.Second)
	ranges, _, err := be.e.PartitionKeyRanges(ctx, "db", "c")
	if err != nil || len(ranges) != 1 {
		t.Fatalf("%d ranges (%v), want one", len(ranges), err)
	}
	for _, q := range []string{"SELECT VALUE COUNT(1) FROM c", "SELECT VALUE COUNT(1) FROM c WHERE true"} {
		page, err := be.e.QueryItems(ctx, QueryParams{ItemRef: ItemRef{DB: "db", Coll: "c"}, Query: q, RangeID: ranges[0].ID, CrossPartition: true})
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Items) != 1 || string(page.Items[0]) != "20" {
			t.Fatalf("%s: %q, want 20", q, page.Items)
		}
		if page.Plan == nil || page.Plan.Chosen.Access != plan.Counters {
			t.Errorf("%s: answered by %v, want the counters", q, page.Plan)
		}
	}
}

// rangedContainer creates container "s" of be with a throughput that gives
// it several partition key ranges, TTL on with no default, and returns
// its ranges.
func (be *batchEnv) rangedContainer(t *testing.T) []KeyRange {
	t.Helper()
	ctx := context.Background()
	if _, err := be.e.CreateContainer(ctx, "db", batchJSON(t, `{"id":"s","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2},"defaultTtl":-1}`), &Throughput{Manual: 24000}); err != nil {
		t.Fatal(err)
	}
	ranges, _, err := be.e.PartitionKeyRanges(ctx, "db", "s")
	if err != nil || len(ranges) < 2 {
		t.Fatalf("%d ranges (%v), want several", len(ranges), err)
	}
	return ranges
}

func rangeIDs(ranges []KeyRange) []string {
	ids := make([]string, len(ranges))
	for i, rg := range ranges {
		ids[i] = rg.ID
	}
	return ids
}

// Two partition keys that share an EPK (version 1 hashes and keeps the
// first 100 characters of a string) share its counter: each is counted
// from its own id entries then, until the counter falls to zero and
// belongs to one key again.
func TestPartitionCountSharedEPK(t *testing.T) {
	be := newBatchEnvWith(t, `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":1},"defaultTtl":-1}`)
	ctx := context.Background()
	long := strings.Repeat("a", 100)
	ref := func(pk string) ItemRef {
		return ItemRef{DB: "db", Coll: "c", HasKey: true, PartitionKey: partition.Key{partition.String(pk)}}
	}
	write := func(pk, id, extra string) {
		t.Helper()
		if _, err := be.e.WriteItem(ctx, WriteItemParams{ItemRef: ref(pk), Mode: ModeCreate, Body: []byte(fmt.Sprintf(`{"id":%q,"pk":%q%s}`, id, pk, extra))}); err != nil {
			t.Fatal(err)
		}
	}
	remove := func(pk, id string) {
		t.Helper()
		if _, err := be.e.DeleteItem(ctx, DeleteItemParams{ItemRef: ref(pk), ID: id}); err != nil {
			t.Fatal(err)
		}
	}
	expect := func(pk string, want string, access plan.Access) {
		t.Helper()
		page, err := be.e.QueryItems(ctx, QueryParams{ItemRef: ref(pk), Query: "SELECT VALUE COUNT(1) FROM c"})
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Items) != 1 {
			t.Fatalf("%.3s…: %v, %d rows", pk[len(pk)-3:], err, len(page.Items))
		}
		if got := string(page.Items[0]); got != want || page.Plan == nil || page.Plan.Chosen.Access != access || page.Examined != 0 {
			t.Fatalf("…%s: %s by %v (%d records), want %s by %v", pk[len(pk)-3:], got, page.Plan, page.Examined, want, access)
		}
	}
	one, two := long+"-one", long+"-two"
	var c *containerRecord
	if err := be.e.store.View(ctx, func(r storage.Reader) (err error) {
		c, err = be.e.loadContainer(r, "db", "c")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if c.epk(ref(one).PartitionKey) != c.epk(ref(two).PartitionKey) {
		t.Fatal("the two keys do not share an EPK")
	}
	write(one, "a", "")
	write(one, "b", "")
	write(one, "c", `,"ttl":5`)
	expect(one, "3", plan.Counters)
	expect(two, "0", plan.IDEntries)
	be.clock.Advance(10 * time.Second)
	expect(one, "2", plan.Counters) // c expired, not purged
	write(two, "a", "")
	expect(one, "2", plan.IDEntries)
	expect(two, "1", plan.IDEntries)
	for _, id := range []string{"a", "b"} {
		remove(one, id)
	}
	expect(one, "0", plan.IDEntries) // c is still stored
	if _, err := be.e.PurgeDue(ctx, ttl.PurgeParams{Container: "dbs/db/colls/c", Now: be.clock.Now(), Limit: 10}); err != nil {
		t.Fatal(err)
	}
	remove(two, "a")
	write(two, "b", "")
	expect(two, "1", plan.Counters)
	expect(one, "0", plan.IDEntries)
	if _, err := be.e.CheckIndexes(ctx); err != nil {
		t.Fatal(err)
	}
}

// COUNT(1) under a hierarchical prefix is the sum of its logical
// partitions' counters, less the items expired and not purged (a count of
// a path, or of the items without it, that less the prefix's absence
// entries of the path), through
// upserts, deletes, expiries and purges: it reads a counter a partition
// and no record, where it read every item of the prefix, and equals the
// evaluation's count. A prefix of two of three keys sums the partitions of
// its third. An equality and a range a composite index answers are
// counted from the prefix's partitions' composite entries.
func TestPrefixCountFromCounters(t *testing.T) {
	be := newBatchEnvWith(t, `{"id":"c","partitionKey":{"paths":["/t","/u","/v"],"kind":"MultiHash","version":2},"defaultTtl":-1,
		"indexingPolicy":{"includedPaths":[{"path":"/*"}],"compositeIndexes":[[{"path":"/h"},{"path":"/w"}]]}}`)
	ctx := context.Background()
	rnd := rand.New(rand.NewPCG(41, 43))
	key := func(parts ...string) partition.Key {
		var k partition.Key
		for _, p := range parts {
			k = append(k, partition.String(p))
		}
		return k
	}
	merged := plan.IndexCount
	if teststore.Backend() == "postgres" {
		merged = plan.Scan
	}
	counted := 0
	for step := range 400 {
		i := rnd.IntN(120)
		t0, u, v := "t"+strconv.Itoa(i%4), "u"+strconv.Itoa(i%7), "v"+strconv.Itoa(i%3)
		ref := ItemRef{DB: "db", Coll: "c", HasKey: true, PartitionKey: key(t0, u, v)}
		be.changeOne(t, rnd, ref, "x"+strconv.Itoa(i), func() string {
			ttlProp := []string{"", `,"ttl":5`, `,"ttl":-1`}[rnd.IntN(3)]
			if rnd.IntN(2) == 0 {
				ttlProp += `,"x":[1]`
			}
			return fmt.Sprintf(`{"id":"x%d","t":%q,"u":%q,"v":%q,"g":%d,"h":%d,"w":%d%s}`, i, t0, u, v, rnd.IntN(4), i%3, (i+step)%5, ttlProp)
		})
		if step%20 != 19 {
			continue
		}
		if step == 19 {
			// The absence entries of /x, which a count of it asks for,
			// and the partition composite entries of (/h, /w).
			c := be.containerOf(t, "c")
			be.e.wantAbsent(c, []string{"x"}, entryKinds{})
			be.e.wantAbsent(c, []string{"h"}, entryKinds{parts: true, comps: []string{c.index.composites[0].sig()}})
			drainIndexer(t, be.e.NewIndexer(nil))
		}
		for _, prefix := range []partition.Key{key("t1"), key("t2"), key("t3", "u2")} {
			// COUNT(1) from the counters; a count of a path, or of the
			// items with or without it, from them less the absence
			// entries.
			for _, tc := range []struct {
				query, evaluated string
				access           plan.Access
			}{
				{"SELECT VALUE COUNT(1) FROM c", "SELECT VALUE COUNT(1) FROM c WHERE true", plan.Counters},
				{"SELECT VALUE COUNT(c.x) FROM c", "SELECT VALUE COUNT(c.x) FROM c WHERE true", plan.IndexCount},
				{"SELECT VALUE COUNT(1) FROM c WHERE NOT IS_DEFINED(c.x)", "SELECT VALUE COUNT(1) FROM c WHERE NOT IS_DEFINED(c.x) AND true", plan.IndexCount},
				// Terms of single values from their entries of the
				// prefix; a range's are the container's: evaluated.
				{"SELECT VALUE COUNT(1) FROM c WHERE c.g = 1", "SELECT VALUE COUNT(1) FROM c WHERE c.g = 1 AND true", plan.IndexCount},
				{"SELECT VALUE COUNT(1) FROM c WHERE c.g IN (0, 2)", "SELECT VALUE COUNT(1) FROM c WHERE c.g IN (0, 2) AND true", plan.IndexCount},
				{"SELECT VALUE COUNT(1) FROM c WHERE c.g = 1 OR c.u = 'u2'", "SELECT VALUE COUNT(1) FROM c WHERE (c.g = 1 OR c.u = 'u2') AND true", plan.IndexCount},
				{"SELECT VALUE COUNT(1) FROM c WHERE c.g = 1 AND c.u = 'u2'", "SELECT VALUE COUNT(1) FROM c WHERE c.g = 1 AND c.u = 'u2' AND true", plan.IndexCount},
				{"SELECT VALUE COUNT(1) FROM c WHERE c.g > 1", "SELECT VALUE COUNT(1) FROM c WHERE c.g > 1 AND true", plan.Scan}, // any but IndexCount
				// An equality and a range a composite answers, from its
				// partitions' composite entries (not over PostgreSQL,
				// where the prefix's partitions are not merged).
				{"SELECT VALUE COUNT(1) FROM c WHERE c.h = 1 AND c.w > 1", "SELECT VALUE COUNT(1) FROM c WHERE c.h = 1 AND c.w > 1 AND true", merged},
			} {
				p := QueryParams{ItemRef: ItemRef{DB: "db", Coll: "c", HasKey: true, PartitionKey: prefix}, Query: tc.query}
				page, err := be.e.QueryItems(ctx, p)
				if err != nil {
					t.Fatal(err)
				}
				p.Query = tc.evaluated
				want, err := be.e.QueryItems(ctx, p)
				if err != nil {
					t.Fatal(err)
				}
				byIndex := page.Plan != nil && page.Plan.Chosen.Access == tc.access && page.Examined == 0
				if tc.access == plan.Scan {
					// Evaluated, whichever way.
					byIndex = page.Plan != nil && page.Plan.Chosen.Access != plan.IndexCount
				}
				if got := string(page.Items[0]); got != string(want.Items[0]) || !byIndex {
					t.Fatalf("step %d, prefix %v, %s: %s by %v (%d records), the evaluation %s", step, prefix, tc.query, got, page.Plan, page.Examined, want.Items[0])
				}
				if string(want.Items[0]) != "0" {
					counted++
				}
			}
		}
	}
	if counted == 0 {
		t.Fatal("every count was 0: the test shows nothing")
	}
}

// MIN and MAX of a path under a hierarchical prefix come from the path's
// own entries, the container's, read from an end to the first of a live
// item under the prefix, and equal their evaluation through upserts of
// values of every type, deletes, expiries and purges; a prefix whose
// items lie far from that end (t3's values are the container's smallest)
// is read up to a budget, then evaluated. Before, every such query read
// every item under the prefix.
func TestExtremeUnderAPrefix(t *testing.T) {
	be := newBatchEnvWith(t, `{"id":"c","partitionKey":{"paths":["/t","/u"],"kind":"MultiHash","version":2},"defaultTtl":-1}`)
	rnd := rand.New(rand.NewPCG(47, 53))
	var seed []string
	for i := range 3000 {
		seed = append(seed, fmt.Sprintf(`{"id":"s%d","t":"t%d","u":"u%d","v":%d}`, i, i%3, i%11, 1000+i))
	}
	for i := range 20 {
		seed = append(seed, fmt.Sprintf(`{"id":"s%d","t":"t3","u":"u%d","v":%d}`, 3000+i, i%11, i))
	}
	be.seed(t, seed...)
	byIndex, values, budgeted := 0, 0, 0
	for step := range 300 {
		i := rnd.IntN(120)
		tk, u := "t"+strconv.Itoa(i%3), "u"+strconv.Itoa(i%11)
		ref := ItemRef{DB: "db", Coll: "c", HasKey: true, PartitionKey: partition.Key{partition.String(tk), partition.String(u)}}
		be.changeOne(t, rnd, ref, "x"+strconv.Itoa(i), func() string {
			v := []string{"0", "7", "-2.5", `"a"`, `"zz"`, "true", "null", "5000", "9007199254740993", "[1]"}[rnd.IntN(10)]
			if rnd.IntN(4) == 0 {
				v = strconv.Itoa(-rnd.IntN(100))
			}
			ttlProp := []string{"", `,"ttl":5`, `,"ttl":-1`}[rnd.IntN(3)]
			return fmt.Sprintf(`{"id":"x%d","t":%q,"u":%q,"v":%s%s}`, i, tk, u, v, ttlProp)
		})
		if step%15 != 14 {
			continue
		}
		for _, prefix := range []string{"t0", "t1", "t3"} {
			query := be.underPrefix(t, prefix)
			for _, agg := range []string{"MIN", "MAX"} {
				for _, shape := range []string{"SELECT VALUE %s(c.v) FROM c", `SELECT VALUE [{"item": %s(c.v)}] FROM c`, "SELECT VALUE %s(c.v) FROM c WHERE c.v > 10"} {
					text := fmt.Sprintf(shape, agg)
					evaluated := text + " WHERE true"
					if strings.Contains(text, "WHERE") {
						evaluated = text + " AND true"
					}
					_, _, counted, valued := checkAggregate(t, fmt.Sprintf("step %d, prefix %s", step, prefix), query, text, evaluated)
					if counted {
						byIndex++
					}
					if valued {
						values++
					}
					if prefix == "t3" && agg == "MAX" && !strings.Contains(text, "c.v >") && !counted {
						budgeted++
					}
				}
			}
		}
	}
	if byIndex == 0 || values == 0 || budgeted == 0 {
		t.Fatalf("%d answers by the index, %d with a value, %d past the budget: the test shows nothing", byIndex, values, budgeted)
	}
	t.Logf("%d answers by the index, %d with a value, %d past the budget", byIndex, values, budgeted)
}

// MIN and MAX of a path of a few values under a hierarchical prefix read
// the entries of its smallest or largest value from an end, the whole
// container's: they seek past the other partitions' rather than step
// through them, in both directions, through writes and deletes.
func TestExtremeOfFewValuesUnderAPrefixSeeks(t *testing.T) {
	be := newBatchEnvWith(t, `{"id":"c","partitionKey":{"paths":["/t","/u"],"kind":"MultiHash","version":2}}`)
	rnd := rand.New(rand.NewPCG(5, 7))
	var seed []string
	for i := range 6000 {
		seed = append(seed, fmt.Sprintf(`{"id":"s%d","t":"t%d","u":"u%d","m":%d}`, i, i%10, i%30, i/10%3))
	}
	be.seed(t, seed...)
	for step := range 60 {
		i := rnd.IntN(40)
		tk, u := "t"+strconv.Itoa(i%10), "u"+strconv.Itoa(i%30)
		ref := ItemRef{DB: "db", Coll: "c", HasKey: true, PartitionKey: partition.Key{partition.String(tk), partition.String(u)}}
		be.changeOne(t, rnd, ref, "x"+strconv.Itoa(i), func() string {
			return fmt.Sprintf(`{"id":"x%d","t":%q,"u":%q,"m":%d}`, i, tk, u, rnd.IntN(5)-1)
		})
		if step%10 != 9 {
			continue
		}
		for _, prefix := range []string{"t1", "t8"} {
			query := be.underPrefix(t, prefix)
			for _, text := range []string{"SELECT VALUE MAX(c.m) FROM c", "SELECT VALUE MIN(c.m) FROM c"} {
				page, _, byIndex, _ := checkAggregate(t, fmt.Sprintf("step %d, prefix %s", step, prefix), query, text, text+" WHERE true")
				// A value's entries hold the prefix's after at most
				// skimOutside of others' and a seek: 2,000 and more
				// entries of the value are the container's.
				if !byIndex || page.IndexEntries > 3*skimOutside+8 {
					t.Fatalf("step %d, prefix %s, %s: by the index %v, %d entries", step, prefix, text, byIndex, page.IndexEntries)
				}
			}
		}
	}
}

// underPrefix returns what runs a query of container c of be under the
// hierarchical prefix of one value prefix and returns its first page.
func (be *batchEnv) underPrefix(t *testing.T, prefix string) func(text string) *FeedPage {
	return func(text string) *FeedPage {
		t.Helper()
		page, err := be.e.QueryItems(context.Background(), QueryParams{ItemRef: ItemRef{DB: "db", Coll: "c", HasKey: true, PartitionKey: partition.Key{partition.String(prefix)}}, Query: text})
		if err != nil {
			t.Fatalf("%s under %s: %v", text, prefix, err)
		}
		return page
	}
}

// changeOne makes one random change to the item id at ref, in container c
// of be: an upsert of body() (60%), its delete (20%), the clock moved on by
// up to 3 s (10%), or a purge batch (10%).
func (be *batchEnv) changeOne(t *testing.T, rnd *rand.Rand, ref ItemRef, id string, body func() string) {
	t.Helper()
	ctx := context.Background()
	switch op := rnd.IntN(10); {
	case op < 6:
		if _, err := be.e.WriteItem(ctx, WriteItemParams{ItemRef: ref, Mode: ModeUpsert, Body: []byte(body())}); err != nil {
			t.Fatal(err)
		}
	case op < 8:
		_, err := be.e.DeleteItem(ctx, DeleteItemParams{ItemRef: ref, ID: id})
		var ee *Error
		if err != nil && !(errors.As(err, &ee) && ee.Code == NotFound) {
			t.Fatal(err)
		}
	case op < 9:
		be.clock.Advance(time.Duration(rnd.IntN(4)) * time.Second)
	default:
		if _, err := be.e.PurgeDue(ctx, ttl.PurgeParams{Container: "dbs/db/colls/c", Now: be.clock.Now(), Limit: 1 + rnd.IntN(5)}); err != nil {
			t.Fatal(err)
		}
	}
}

// churn makes one random change to container coll of be: an upsert of one
// of items items over parts partition keys, with or without a ttl of its
// own (60%); its delete (20%); the clock moved on by up to 8 s (10%); or a
// purge batch (10%). Items expire, are purged, change their TTL and come
// back. An upsert's item holds a number v, or, when props is not nil, the
// properties it returns (JSON members, comma-separated).
func (be *batchEnv) churn(t *testing.T, coll string, rnd *rand.Rand, items, parts int, props func() string) {
	t.Helper()
	ctx := context.Background()
	i := rnd.IntN(items)
	pk := "p" + strconv.Itoa(i%parts)
	ref := ItemRef{DB: "db", Coll: coll, HasKey: true, PartitionKey: partition.Key{partition.String(pk)}}
	switch op := rnd.IntN(10); {
	case op < 6:
		ttlProp := []string{"", `,"ttl":5`, `,"ttl":30`, `,"ttl":-1`}[rnd.IntN(4)]
		if props == nil {
			props = func() string { return `"v":` + strconv.Itoa(rnd.IntN(1000)) }
		}
		body := fmt.Sprintf(`{"id":"x%d","pk":"%s",%s%s}`, i, pk, props(), ttlProp)
		if _, err := be.e.WriteItem(ctx, WriteItemParams{ItemRef: ref, Mode: ModeUpsert, Body: []byte(body)}); err != nil {
			t.Fatal(err)
		}
	case op < 8:
		_, err := be.e.DeleteItem(ctx, DeleteItemParams{ItemRef: ref, ID: "x" + strconv.Itoa(i)})
		var ee *Error
		if err != nil && !(errors.As(err, &ee) && ee.Code == NotFound) {
			t.Fatal(err)
		}
	case op < 9:
		be.clock.Advance(time.Duration(rnd.IntN(8)) * time.Second)
	default:
		if _, err := be.e.PurgeDue(ctx, ttl.PurgeParams{Container: "dbs/db/colls/" + coll, Now: be.clock.Now(), Limit: 1 + rnd.IntN(5)}); err != nil {
			t.Fatal(err)
		}
	}
}

// A count whose filter is one term on an indexed property (an equality,
// an IN list, a comparison, a STARTSWITH) is answered from the property's
// entries in its scope, reading no record, and equals what evaluating it
// gives (the same filter with "AND true", which the index does not answer
// whole), over each range and in each logical partition (alone and within
// each range; a range of values there once the property's partition
// entries are built), in both shapes of the count, through upserts that
// change the values, deletes, items expiring (purged or not yet) and
// purges. Terms on two properties are counted by stepping through both,
// in a partition and, once their tie entries are built, across
// partitions. Filters the index does not answer exactly are evaluated: a
// number of magnitude 2^53 or more as a value or in a range, array
// elements (a property named "[]" shares their segment), three terms, an
// IS_DEFINED beside a term, NOT, a system property, a range in a partition
// without partition entries.
func TestCountByIndex(t *testing.T) {
	be := newBatchEnv(t, "null")
	ctx := context.Background()
	ranges := be.rangedContainer(t)
	rnd := rand.New(rand.NewPCG(3, 5))
	props := func() string {
		v := []string{"0", "1", "2", "3", "2.0", "null", "9007199254740993", "9007199254740992", "[1, 2]", `"2"`}[rnd.IntN(10)]
		tags := []string{`[1, 2]`, `[3]`, `{"[]": 1}`, `1`}[rnd.IntN(4)]
		w := []string{"0", "1", "2", "2.5", "3", `"b"`, `"c"`, "true"}[rnd.IntN(8)]
		return fmt.Sprintf(`"v":%s,"w":%s,"s":"s%d","tags":%s`, v, w, rnd.IntN(3), tags)
	}
	change := func() { be.churn(t, "s", rnd, 90, 11, props) }
	// An item that stays, so that the ranges of numbers on v hold one of
	// magnitude 2^53 or more.
	if _, err := be.e.WriteItem(ctx, WriteItemParams{ItemRef: ItemRef{DB: "db", Coll: "s", HasKey: true, PartitionKey: partition.Key{partition.String("pz")}},
		Mode: ModeCreate, Body: []byte(`{"id":"big","pk":"pz","v":9007199254740993,"w":1}`)}); err != nil {
		t.Fatal(err)
	}
	// The partition entries of w, for its ranges in a logical partition.
	sc := be.containerOf(t, "s")
	be.e.wantAbsent(sc, []string{"w"}, entryKinds{parts: true})
	drainIndexer(t, be.e.NewIndexer(nil))
	if !be.containerOf(t, "s").partsReady([]string{"w"}) {
		t.Fatal("the partition entries of /w are not built")
	}
	indexed := []string{"c.v = 2", "c.v IN (1, 3, 3.0, 'x')", "c.s = 's1'", "ARRAY_CONTAINS(['s0', 's2'], c.s)",
		"c.v = 2 OR c.v = 0", "c.pk = 'p3'", "IS_NULL(c.v)", "c.v = 9007199254740991",
		"c.w > 1", "c.w <= 2.5", "c.w >= 'b'", "c.w < 2", "STARTSWITH(c.w, 'b')", "c.w BETWEEN 1 AND 2.5", "c.w > 1 AND c.w < 3",
		"c.w != 2", "c.v = 2 OR c.s = 's1'", "c.s IN ('s0', 's2') OR c.w BETWEEN 1 AND 2.5 OR c.v = null"}
	// Ranges of properties without partition entries: counted by the
	// index across partitions, evaluated in one.
	across := []string{"c.v > 1", "c.v <= 9007199254740991", "c.s > 's0'", "STARTSWITH(c.s, 's1')", "NOT (c.v = 2)", "c.s != 's1'", "c.v = 2 OR NOT (c.s = 's1')"}
	// Terms on two properties: counted by stepping through both in a
	// partition, and across partitions once their tie entries are built
	// (halfway).
	paired := []string{"c.v = 2 AND c.s = 's1'", "c.v IN (1, 3) AND c.s = 's0'", "c.s = 's2' AND c.w BETWEEN 1 AND 2.5", "c.w >= 'b' AND c.v = null"}
	tied := false
	// IS_DEFINED of a property, or not: counted once its absence entries
	// are built, which the first such count asks for.
	defined := []string{"IS_DEFINED(c.s)", "NOT IS_DEFINED(c.w)", "IS_DEFINED(c.nothing)", "NOT IS_DEFINED(c.v)"}
	definedByIndex := 0
	evaluated := []string{"c.v = 9007199254740992", "ARRAY_CONTAINS(c.tags, 1)", "c.v > 9007199254740992", "c.v < 9007199254740992", "c._ts > 0",
		"c.v = 2 AND c.s = 's1' AND c.w = 1", "c.v = 9007199254740992 AND c.s = 's1'", "c.v = 2 AND IS_DEFINED(c.s)", "c.v = 2 AND c.v = 3", "c.v != 9007199254740992", "c.w > 1 AND c.w < 'z'", "c.w > 1 AND c.w > 2",
		"c.v = 2 OR ARRAY_CONTAINS(c.tags, 1)", "(c.v = 2 OR c.s = 's1') AND c.w > 1"}
	// Filters of no term the index reads, on one property: counted by
	// testing its entries' values (countByValues) where that costs less
	// than evaluating the scope, reading the record of an item whose
	// value the index does not hold exactly (a number of 2^53 or more).
	valued := []string{"c.v = 2 OR c.v > 9007199254740992", "LOWER(c.s) = 's1'", "c.w * 2 = 5",
		// Beside an exact term: among the items the term names.
		"c.s IN ('s0', 's1') AND c.w * 2 = 5", "LOWER(c.s) != 's1' AND c.w >= 1", "c.v = 2 AND (c.v = 2 OR c.v > 9007199254740992)"}
	valuedByIndex, besideByIndex := 0, 0
	// Whole partition keys: across partitions, the sum of their
	// partitions' counts (countByKeys).
	keyed := []string{"c.pk IN ('p3', 'p7', 'none')", "c.pk = 'p0' OR c.pk = 'p7'", "c.pk IN ('p1', 'p2', 'p3', 'p4', 'p5', 'p6', 'p7', 'p8')"}
	keyedByCounters := 0
	count := func(ref ItemRef, rangeID, text string) (string, *FeedPage) {
		t.Helper()
		page, err := be.e.QueryItems(ctx, QueryParams{ItemRef: ref, Query: text, RangeID: rangeID, CrossPartition: true})
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Items) != 1 {
			t.Fatalf("%s, range %q: %v, %d rows", text, rangeID, err, len(page.Items))
		}
		return string(page.Items[0]), page
	}
	whole := ItemRef{DB: "db", Coll: "s"}
	nonzero, byIndex := 0, 0
	check := func(ref ItemRef, rangeID string) {
		t.Helper()
		for fi, filter := range slices.Concat(indexed, across, paired, defined, evaluated, valued, keyed) {
			for si, shape := range []string{"SELECT VALUE COUNT(1) FROM c WHERE ", `SELECT VALUE [{"item": COUNT(1)}] FROM c WHERE `} {
				if !everyOther(fi + si) {
					continue // each filter in one of the shapes
				}
				got, page := count(ref, rangeID, shape+filter)
				want, _ := count(ref, rangeID, shape+"("+filter+") AND true")
				if got != want {
					t.Fatalf("%s in %v, range %q: %s, evaluated %s", shape+filter, ref.PartitionKey, rangeID, got, want)
				}
				// A term that pins the partition key makes the count its
				// partition's, from the counters or its id entries.
				counted := page.Plan != nil && (page.Plan.Chosen.Access == plan.IndexCount ||
					filter == "c.pk = 'p3'" && (page.Plan.Chosen.Access == plan.Counters || page.Plan.Chosen.Access == plan.IDEntries))
				if slices.Contains(keyed, filter) {
					byCounters := page.Plan != nil && page.Plan.Chosen.Access == plan.Counters
					if byCounters != !ref.HasKey {
						t.Fatalf("%s in %v, range %q: answered by %v", shape+filter, ref.PartitionKey, rangeID, page.Plan)
					}
					if byCounters {
						keyedByCounters++
					}
				} else if slices.Contains(defined, filter) {
					if counted {
						definedByIndex++
					}
				} else if slices.Contains(valued, filter) {
					if counted {
						valuedByIndex++
						if strings.Contains(filter, " AND ") {
							besideByIndex++
						}
					}
				} else if counted != (slices.Contains(indexed, filter) || !ref.HasKey && slices.Contains(across, filter) ||
					(ref.HasKey || tied) && slices.Contains(paired, filter)) {
					t.Fatalf("%s in %v, range %q: answered by %v", shape+filter, ref.PartitionKey, rangeID, page.Plan)
				}
				if counted && page.Examined != 0 && !slices.Contains(valued, filter) {
					t.Fatalf("%s: read %d records", shape+filter, page.Examined)
				}
				if got != "0" && got != `[{"item":0}]` {
					nonzero++
				}
				if counted {
					byIndex++
				}
			}
		}
	}
	for step := range changeSteps() {
		change()
		if !checkStep(step) {
			continue
		}
		if step == 159 {
			for _, path := range []string{"v", "s", "w"} {
				be.e.wantAbsent(be.containerOf(t, "s"), []string{path}, entryKinds{ties: true})
			}
			drainIndexer(t, be.e.NewIndexer(nil))
			c := be.containerOf(t, "s")
			tied = c.tiesReady([]string{"v"}) && c.tiesReady([]string{"s"}) && c.tiesReady([]string{"w"})
			if !tied {
				t.Fatal("the tie entries of /v, /s and /w are not built")
			}
		}
		for _, rg := range ranges {
			check(whole, rg.ID)
		}
		for _, part := range []int{0, 3, 7} {
			ref := whole
			ref.HasKey, ref.PartitionKey = true, partition.Key{partition.String("p" + strconv.Itoa(part))}
			for _, rangeID := range append([]string{""}, rangeIDs(ranges)...) {
				check(ref, rangeID)
			}
		}
	}
	if nonzero == 0 || byIndex == 0 || definedByIndex == 0 || besideByIndex == 0 || keyedByCounters == 0 {
		t.Fatalf("%d counts were not 0, %d came from the index (%d of IS_DEFINED, %d by values, %d of them beside a term), %d from the keys' counters: the test shows nothing",
			nonzero, byIndex, definedByIndex, valuedByIndex, besideByIndex, keyedByCounters)
	}
}

// In a logical partition whose EPK another partition key shares, the
// property's entries in the EPK's span are both keys' items: such a count,
// or MAX, is evaluated, and answered by the index once the EPK's counter
// names one key again.
func TestCountByIndexSharedEPK(t *testing.T) {
	be := newBatchEnvWith(t, `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":1},
		"indexingPolicy":{"includedPaths":[{"path":"/*"}],"compositeIndexes":[[{"path":"/v"},{"path":"/w"}]]}}`)
	ctx := context.Background()
	long := strings.Repeat("a", 100)
	one, two := long+"-one", long+"-two"
	ref := func(pk string) ItemRef {
		return ItemRef{DB: "db", Coll: "c", HasKey: true, PartitionKey: partition.Key{partition.String(pk)}}
	}
	write := func(pk, id string, v int) {
		t.Helper()
		if _, err := be.e.WriteItem(ctx, WriteItemParams{ItemRef: ref(pk), Mode: ModeCreate, Body: []byte(fmt.Sprintf(`{"id":%q,"pk":%q,"v":%d,"w":2}`, id, pk, v))}); err != nil {
			t.Fatal(err)
		}
	}
	// The partition entries of v, from which MAX(c.v) in a partition is
	// read, and the composite's partition entries, from which a count of
	// both paths is.
	c := be.containerOf(t, "c")
	be.e.wantAbsent(c, []string{"v"}, entryKinds{parts: true, comps: []string{c.index.composites[0].sig()}})
	drainIndexer(t, be.e.NewIndexer(nil))
	ask := func(pk, query string, access plan.Access, want string, byIndex bool) {
		t.Helper()
		page, err := be.e.QueryItems(ctx, QueryParams{ItemRef: ref(pk), Query: query})
		if err != nil || len(page.Items) > 1 {
			t.Fatalf("…%s: %v", pk[len(pk)-3:], err)
		}
		got := ""
		if len(page.Items) == 1 {
			got = string(page.Items[0])
		}
		counted := page.Plan != nil && page.Plan.Chosen.Access == access
		if got != want || counted != byIndex {
			t.Fatalf("…%s, %s: %s by %v, want %s (by the index: %v)", pk[len(pk)-3:], query, got, page.Plan, want, byIndex)
		}
	}
	expect := func(pk, want string, byIndex bool) {
		t.Helper()
		ask(pk, "SELECT VALUE COUNT(1) FROM c WHERE c.v = 1", plan.IndexCount, want, byIndex)
	}
	expectMax := func(pk, want string, byIndex bool) {
		t.Helper()
		ask(pk, "SELECT VALUE MAX(c.v) FROM c", plan.IndexExtreme, want, byIndex)
	}
	expectBoth := func(pk, want string, byIndex bool) {
		t.Helper()
		ask(pk, "SELECT VALUE COUNT(1) FROM c WHERE c.v = 1 AND c.w > 0", plan.IndexCount, want, byIndex)
		ask(pk, "SELECT VALUE MAX(c.w) FROM c WHERE c.v = 1", plan.IndexExtreme, map[bool]string{true: "2", false: ""}[want != "0"], byIndex)
	}
	write(one, "a", 1)
	write(one, "b", 1)
	expect(one, "2", true)
	expectMax(one, "1", true)
	expectBoth(one, "2", true)
	expect(two, "0", false)
	write(two, "a", 5)
	write(two, "b", 1)
	expect(one, "2", false)
	expectMax(one, "1", false)
	expectBoth(one, "2", false)
	expect(two, "1", false)
	expectMax(two, "5", false)
	expectBoth(two, "1", false)
	// Both keys across partitions: each key's count from its id entries,
	// as its counter is shared.
	page, err := be.e.QueryItems(ctx, QueryParams{ItemRef: ItemRef{DB: "db", Coll: "c"}, CrossPartition: true, RangeID: "0",
		Query: fmt.Sprintf("SELECT VALUE COUNT(1) FROM c WHERE c.pk IN (%q, %q, 'none')", one, two)})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Items) != 1 || string(page.Items[0]) != "4" || page.Plan == nil || page.Plan.Chosen.Access != plan.Counters {
		t.Fatalf("both keys: %s by %v, want 4 from the keys' counts", page.Items, page.Plan)
	}
}

// MIN and MAX of a path, without a filter, over each range of a
// container, come from the path's first or last index entry in the
// scope and one record, and equal what evaluating them gives (with "WHERE
// true", which is evaluated), in both shapes, through upserts that change
// the values (of every type, absent, arrays and objects, numbers past
// 2^53), deletes, expiries and purges. A path none of whose items holds an
// array, an object or such a number is always answered so. The rewrite
// that carries the count is answered from the path's entries at first,
// and once the path's absence entries (which it asks for) are built, from
// the counters less the items without the path; in a logical partition,
// from the path's partition entries once they are built. _ts is answered
// once its entries, which the query asks for, are built.
func TestExtremeByIndex(t *testing.T) {
	be := newBatchEnv(t, "null")
	ranges := be.rangedContainer(t)
	rnd := rand.New(rand.NewPCG(13, 17))
	props := func() string {
		var props []string
		if rnd.IntN(5) > 0 {
			props = append(props, `"v":`+[]string{"0", "7", "-2.5", `"a"`, `"zz"`, "true", "false", "null", "[1]", `{"x":1}`, "9007199254740993"}[rnd.IntN(11)])
		}
		if rnd.IntN(5) > 0 {
			props = append(props, `"w":`+[]string{"0", "1", "2.5", "-3", `"b"`, `"c"`, "true", "false", "null"}[rnd.IntN(9)])
		}
		props = append(props, fmt.Sprintf(`"o":{"x":%d}`, rnd.IntN(50)))
		props = append(props, `"b":`+[]string{"1", "9007199254740992", "9007199254740993"}[rnd.IntN(3)])
		// Fractions whose sum depends on the order of the additions.
		props = append(props, `"f":`+[]string{"0.1", "0.2", "0.7", "3", "1e16"}[rnd.IntN(5)])
		return strings.Join(props, ",")
	}
	change := func() { be.churn(t, "s", rnd, 60, 9, props) }
	query := func(scope, text string) *FeedPage {
		t.Helper()
		return be.scopedQuery(t, "s", scope, text, 0)
	}
	scopes := append(rangeIDs(ranges), "pk:p0", "pk:p4", "pk:p8", "pk:none")
	byIndex, values, partitions, pathCounts, filtered, beside := 0, 0, 0, 0, 0, 0
	for step := range changeSteps() {
		change()
		if !checkStep(step) {
			continue
		}
		if step == 239 {
			be.e.wantAbsent(be.containerOf(t, "s"), []string{"w"}, entryKinds{parts: true})
		}
		if step >= 200 {
			drainIndexer(t, be.e.NewIndexer(nil))
			if !be.containerOf(t, "s").partsReady([]string{"w"}) {
				t.Fatal("the absence and partition entries of /w are not built")
			}
		}
		for _, scope := range scopes {
			inPartition := strings.HasPrefix(scope, "pk:")
			for ai, agg := range []string{"MIN", "MAX", "SUM", "AVG"} {
				for pi, path := range []string{"c.v", "c.w", "c.o.x", "c.b", "c._ts", "c.f"} {
					for si, shape := range []string{"SELECT VALUE %s(%s) FROM c", `SELECT VALUE [{"item": %s(%s)}] FROM c`,
						`SELECT VALUE [{"item": {"m": %[1]s(%[2]s), "count": COUNT(%[2]s)}}] FROM c`} {
						if !everyOther(ai + pi + si) {
							continue
						}
						text := fmt.Sprintf(shape, agg, path)
						page, _, counted, valued := checkAggregate(t, fmt.Sprintf("step %d, scope %q", step, scope),
							func(text string) *FeedPage { return query(scope, text) }, text, text+" WHERE true")
						// In a partition, the path's partition entries answer.
						// SUM and AVG only of integers (c.w holds fractions
						// and strings), and AVG's rewrite is SUM's.
						answers := !inPartition && (path == "c.w" || path == "c.o.x" || path == "c._ts" && step >= 200) ||
							inPartition && step >= 200 && path == "c.w"
						if agg == "SUM" || agg == "AVG" {
							answers = !inPartition && (path == "c.o.x" || path == "c._ts" && step >= 200) && !(agg == "AVG" && strings.Contains(shape, "COUNT"))
						}
						if answers && valued && !counted {
							t.Fatalf("step %d, scope %q, %s: answered by %v", step, scope, text, page.Plan)
						}
						if inPartition && counted {
							partitions++
							// The partition's entries alone: it holds 7
							// items at most.
							if page.Plan.Chosen.Entries > 8 {
								t.Fatalf("step %d, scope %q, %s: read %.0f entries", step, scope, text, page.Plan.Chosen.Entries)
							}
						}
						if counted {
							byIndex++
						}
						if valued {
							values++
						}
					}
				}
			}
			// Filtered by one term on the path itself: the term's span
			// of the path's entries, where arrays and objects, which
			// pass no such term, do not matter (c.v holds them).
			for _, agg := range []string{"MIN", "MAX", "SUM"} {
				for _, path := range []string{"c.v", "c.w", "c.o.x"} {
					for _, where := range []string{"%s > 0", "%s < 'c'", "%s BETWEEN -3 AND 2.5", "STARTSWITH(%s, 'b')", "%s = 1", "%s <= 7"} {
						for _, shape := range []string{"SELECT VALUE %s(%s) FROM c WHERE ", `SELECT VALUE [{"item": {"m": %[1]s(%[2]s), "count": COUNT(%[2]s)}}] FROM c WHERE `} {
							text := fmt.Sprintf(shape, agg, path) + fmt.Sprintf(where, path)
							page, _, counted, valued := checkAggregate(t, fmt.Sprintf("step %d, scope %q", step, scope),
								func(text string) *FeedPage { return query(scope, text) }, text, text+" AND true")
							// (c.v holds numbers past 2^53, whose entries do
							// not tell them apart.)
							answers := agg != "SUM" && path != "c.v" && (!inPartition || step >= 200 && path == "c.w")
							if answers && valued && !counted {
								t.Fatalf("step %d, scope %q, %s: answered by %v", step, scope, text, page.Plan)
							}
							if counted {
								filtered++
							}
						}
					}
				}
			}
			// Filtered by one exact term on another path: the path's
			// entries of the items the term's entries name, read from
			// an end to the first (MIN, MAX) or whole (SUM, where the
			// scope holds few more items than pass).
			for _, agg := range []string{"MIN", "MAX", "SUM"} {
				for _, path := range []string{"c.v", "c.w", "c.o.x"} {
					for _, where := range []string{"c.o.x = 3", "c.o.x < 25", "c.o.x IN (1, 2, 40)", "c.f = 0.2", "c.f IN (0.1, 0.2, 3)", "c.w = 'b'"} {
						if strings.Contains(where, path+" ") {
							continue
						}
						text := fmt.Sprintf("SELECT VALUE %s(%s) FROM c WHERE %s", agg, path, where)
						page, _, counted, valued := checkAggregate(t, fmt.Sprintf("step %d, scope %q", step, scope),
							func(text string) *FeedPage { return query(scope, text) }, text, text+" AND true")
						// In a partition, through the path's partition
						// entries, and a range only through its own.
						answers := agg != "SUM" && path != "c.v" && where != "c.f = 0.2" &&
							(!inPartition || step >= 200 && path == "c.w" && !strings.Contains(where, "<"))
						if answers && valued && !counted {
							t.Fatalf("step %d, scope %q, %s: answered by %v", step, scope, text, page.Plan)
						}
						if counted {
							beside++
						}
					}
				}
			}
			// COUNT of a path: from the counters less the items
			// without it, once its absence entries (which the rewrites
			// with a count asked for) are built; arrays and objects
			// count.
			for _, path := range []string{"c.v", "c.w", "c.o.x", "c.f"} {
				for _, shape := range []string{"SELECT VALUE COUNT(%s) FROM c", `SELECT VALUE [{"item": COUNT(%s)}] FROM c`} {
					text := fmt.Sprintf(shape, path)
					page, want := query(scope, text), query(scope, text+" WHERE true")
					if string(page.Items[0]) != string(want.Items[0]) {
						t.Fatalf("step %d, scope %q, %s: %s, evaluated %s", step, scope, text, page.Items[0], want.Items[0])
					}
					isCounted := page.Plan != nil && page.Plan.Chosen.Access == plan.IndexCount
					if isCounted != (step >= 200) || isCounted && page.Examined > 0 {
						t.Fatalf("step %d, scope %q, %s: by %v, %d records", step, scope, text, page.Plan, page.Examined)
					}
					if isCounted {
						pathCounts++
					}
				}
			}
		}
	}
	if byIndex == 0 || values == 0 || partitions == 0 || pathCounts == 0 || filtered == 0 || beside == 0 {
		t.Fatalf("%d answers by the index (%d in a partition, %d counts of a path, %d filtered on the path, %d on another), %d with a value: the test shows nothing",
			byIndex, partitions, pathCounts, filtered, beside, values)
	}
	t.Logf("%d answers by the index (%d in a partition, %d counts of a path, %d filtered on the path, %d on another), %d with a value", byIndex, partitions, pathCounts, filtered, beside, values)
}

// MIN and MAX of a path filtered by one equality on another, over each
// range and in two logical partitions, come from a composite index of the
// two paths (ascending or descending), in the three shapes, and equal
// their evaluation through the changes TestExtremeByIndex makes. A composite of three paths, which
// leaves out the items without its last path, does not answer (c.o.x is
// answered from its own entries of the items c.g's name, as any path
// beside an exact term on another is).
func TestExtremeByComposite(t *testing.T) {
	be := newBatchEnv(t, "null")
	ctx := context.Background()
	scopes := be.compositeScopes(t)
	rnd := rand.New(rand.NewPCG(19, 23))
	props := compositeProps(rnd)
	query := func(scope QueryParams, text string) *FeedPage {
		t.Helper()
		scope.Query = text
		page, err := be.e.QueryItems(ctx, scope)
		if err != nil {
			t.Fatalf("%s, range %q, key %v: %v", text, scope.RangeID, scope.PartitionKey, err)
		}
		return page
	}
	byIndex, values, sums := 0, 0, 0
	for step := range changeSteps() {
		be.churn(t, "k", rnd, 60, 9, props)
		if !checkStep(step) {
			continue
		}
		for _, scope := range scopes {
			where := fmt.Sprintf("step %d, range %q, key %v", step, scope.RangeID, scope.PartitionKey)
			for ai, agg := range []string{"MIN", "MAX", "SUM", "AVG"} {
				for pi, path := range []string{"c.w", "c.v", "c.b", "c.o.x"} {
					for gi, g := range []string{"1", "'a'", "1.0"} {
						for si, shape := range []string{"SELECT VALUE %s(%s) FROM c WHERE c.g = %s", `SELECT VALUE [{"item": %s(%s)}] FROM c WHERE c.g = %s`,
							`SELECT VALUE [{"item": {"m": %[1]s(%[2]s), "count": COUNT(%[2]s)}}] FROM c WHERE c.g = %[3]s`} {
							if !everyOther(ai + pi + gi + si) {
								continue
							}
							text := fmt.Sprintf(shape, agg, path, g)
							page, want, counted, valued := checkAggregate(t, where,
								func(text string) *FeedPage { return query(scope, text) }, text, text+" AND true")
							if counted && page.Plan.Chosen.Access == plan.IndexSum && path == "c.b" &&
								want != "0" && want != `[{"item":0}]` && !strings.Contains(want, `"count":0`) {
								sums++ // through the descending path of a composite
							}
							if (agg == "MIN" || agg == "MAX") && (path == "c.w" || path == "c.b") && valued && !counted {
								t.Fatalf("%s, %s: answered by %v", where, text, page.Plan)
							}
							if counted {
								byIndex++
							}
							if valued {
								values++
							}
						}
						// A filter on another property as well is the
						// evaluation's: the composite holds items
						// without it.
						text := fmt.Sprintf("SELECT VALUE %s(c.w) FROM c WHERE c.g = %s AND IS_DEFINED(c.v)", agg, g)
						if page, _, counted, _ := checkAggregate(t, where,
							func(text string) *FeedPage { return query(scope, text) }, text, text+" AND true"); counted {
							t.Fatalf("%s, %s: answered by %v", where, text, page.Plan)
						}
					}
				}
			}
		}
	}
	if byIndex == 0 || values == 0 || sums == 0 {
		t.Fatalf("%d answers by the index (%d sums through a descending path), %d with a value: the test shows nothing", byIndex, sums, values)
	}
	t.Logf("%d answers by the index (%d sums through a descending path), %d with a value", byIndex, sums, values)
}

// compositeContainer creates container k, of several ranges, with
// composite indexes of two paths (g and w; g and v, both descending; g
// and b descending) and one of three (g, o.x, w).
func (be *batchEnv) compositeContainer(t *testing.T) []KeyRange {
	t.Helper()
	ctx := context.Background()
	policy := `{"indexingMode":"consistent","includedPaths":[{"path":"/*"}],"compositeIndexes":[` +
		`[{"path":"/g"},{"path":"/w"}],` +
		`[{"path":"/g","order":"descending"},{"path":"/v","order":"descending"}],` +
		`[{"path":"/g"},{"path":"/b","order":"descending"}],` +
		`[{"path":"/g"},{"path":"/o/x"},{"path":"/w"}]]}`
	if _, err := be.e.CreateContainer(ctx, "db", batchJSON(t, `{"id":"k","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2},"defaultTtl":-1,"indexingPolicy":`+policy+`}`), &Throughput{Manual: 24000}); err != nil {
		t.Fatal(err)
	}
	ranges, _, err := be.e.PartitionKeyRanges(ctx, "db", "k")
	if err != nil || len(ranges) < 2 {
		t.Fatalf("%d ranges (%v), want several", len(ranges), err)
	}
	return ranges
}

// compositeScopes creates compositeContainer and returns the scopes a
// query over it may take: each range, and two logical partitions, which
// read their own composite entries (absent.go), built here from the
// start as a query on a large partition asks for them.
func (be *batchEnv) compositeScopes(t *testing.T) []QueryParams {
	t.Helper()
	var scopes []QueryParams
	for _, rangeID := range rangeIDs(be.compositeContainer(t)) {
		scopes = append(scopes, QueryParams{ItemRef: ItemRef{DB: "db", Coll: "k"}, RangeID: rangeID, CrossPartition: true})
	}
	for _, pk := range []string{"p1", "p4"} {
		scopes = append(scopes, QueryParams{ItemRef: ItemRef{DB: "db", Coll: "k", HasKey: true, PartitionKey: partition.Key{partition.String(pk)}}})
	}
	c := be.containerOf(t, "k")
	var sigs []string
	for _, ci := range c.index.composites {
		if slices.Equal(ci.paths[0], []string{"g"}) {
			sigs = append(sigs, ci.sig())
		}
	}
	be.e.wantAbsent(c, []string{"g"}, entryKinds{parts: true, comps: sigs})
	drainIndexer(t, be.e.NewIndexer(nil))
	if c := be.containerOf(t, "k"); !partComposite(c, &c.index.composites[0], &itemScope{kind: plan.ScopePartition}) {
		t.Fatal("the partition composite entries are not built")
	}
	return scopes
}

// compositeProps makes the properties of compositeContainer's items: g
// and the others of every type or absent, arrays among them, numbers past
// 2^53 in v.
func compositeProps(rnd *rand.Rand) func() string {
	return func() string {
		var props []string
		if rnd.IntN(6) > 0 {
			props = append(props, `"g":`+[]string{"1", "2", `"a"`, "null", "[1]", "1.0"}[rnd.IntN(6)])
		}
		if rnd.IntN(5) > 0 {
			props = append(props, `"v":`+[]string{"0", "7", "-2.5", `"a"`, `"zz"`, "true", "false", "null", "[1]", "9007199254740993", "9007199254740992"}[rnd.IntN(11)])
		}
		if rnd.IntN(5) > 0 {
			props = append(props, `"w":`+[]string{"0", "1", "2.5", "-3", `"b"`, `"c"`, "true", "false", "null"}[rnd.IntN(9)])
		}
		props = append(props, fmt.Sprintf(`"o":{"x":%d}`, rnd.IntN(50)))
		props = append(props, `"b":`+[]string{"1", "-4", `"s"`}[rnd.IntN(3)])
		return strings.Join(props, ",")
	}
}

// A count filtered by terms on several properties is counted from a
// composite index of exactly those paths when its span is exact
// (equalities or IN lists on the leading paths, any term on the last), and equals its
// evaluation over each range through upserts, deletes, expiries and
// purges; other shapes are evaluated.
func TestCountByComposite(t *testing.T) {
	be := newBatchEnv(t, "null")
	ctx := context.Background()
	scopes := be.compositeScopes(t)
	rnd := rand.New(rand.NewPCG(29, 31))
	props := compositeProps(rnd)
	counted := []string{"c.g = 1 AND c.w = 2.5", "c.g = 'a' AND c.w > 0", "c.w >= 'b' AND c.g = null", "c.g = 1 AND c.w BETWEEN 0 AND 2.5",
		"c.g = 2 AND c.b = 1", "c.g = 1 AND c.b < 0", "c.g = 1 AND STARTSWITH(c.w, 'b')", "c.g = 1.0 AND c.w < 2", "c.g = 1 AND c.w IN (0, 1, 'c')",
		"c.g = 1 AND c.o.x = 3 AND c.w = 1", "c.v = 'a' AND c.g = 2", "c.g = 1 AND c.v >= 0 AND c.v < 9", "c.g IN (1, 2) AND c.w = 1",
		"c.g IN (1, 'a', 2) AND c.w > 0", "c.g = 1 AND NOT (c.w = 1)"}
	evaluated := []string{"c.g = 1 AND c.o.x = 3", "c.g > 1 AND c.w = 2", "c.g = 1 AND c.w > 1 AND c.w > 2", "c.g = 1 AND c.v = 9007199254740993",
		"c.g = 1 AND c.w > 1 AND c.x = 2", "c.g = 1 AND c.w > 0 AND c.w < 'c'"}
	// A term beside a filter no span answers: counted from the term's and
	// the path's entries where they are the scope's (countByValues).
	valued := []string{"c.g = 1 AND c.w != null"}
	byIndex, nonzero := 0, 0
	for step := range changeSteps() {
		be.churn(t, "k", rnd, 60, 9, props)
		if !checkStep(step) {
			continue
		}
		for _, scope := range scopes {
			for i, where := range slices.Concat(counted, evaluated, valued) {
				for _, shape := range []string{"SELECT VALUE COUNT(1) FROM c WHERE %s", `SELECT VALUE [{"item": COUNT(1)}] FROM c WHERE %s`} {
					text := fmt.Sprintf(shape, where)
					p := scope
					p.Query = text
					page, err := be.e.QueryItems(ctx, p)
					if err != nil {
						t.Fatalf("%s: %v", text, err)
					}
					p.Query = text + " AND true"
					want, err := be.e.QueryItems(ctx, p)
					if err != nil {
						t.Fatalf("%s AND true: %v", text, err)
					}
					if got, want := string(page.Items[0]), string(want.Items[0]); got != want {
						t.Fatalf("step %d, range %q, key %v, %s: %s, evaluated %s (by %v)", step, scope.RangeID, scope.PartitionKey, text, got, want, page.Plan)
					}
					isCounted := page.Plan != nil && page.Plan.Chosen.Access == plan.IndexCount
					// Within a partition, equalities on two paths are
					// counted from their merged spans too.
					if slices.Contains(valued, where) {
						continue
					}
					if isCounted != (i < len(counted)) && !(isCounted && scope.HasKey) || isCounted && page.Examined > 0 {
						t.Fatalf("%s: by %v, %d records", text, page.Plan, page.Examined)
					}
					if isCounted {
						byIndex++
					}
					if !strings.Contains(string(page.Items[0]), ":0}") && string(page.Items[0]) != "0" {
						nonzero++
					}
				}
			}
		}
	}
	if byIndex == 0 || nonzero == 0 {
		t.Fatalf("%d counts from the index, %d not 0: the test shows nothing", byIndex, nonzero)
	}
	t.Logf("%d counts from the index, %d not 0", byIndex, nonzero)
}

// MAX in a logical partition of many items, whose evaluation reads them
// all, asks for the path's partition entries, and once they are built
// reads one entry and one record.
func TestExtremeAsksForPartitionEntries(t *testing.T) {
	be := newBatchEnvWith(t, `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2}}`)
	ctx := context.Background()
	ref := ItemRef{DB: "db", Coll: "c", HasKey: true, PartitionKey: partition.Key{partition.String("big")}}
	for i := range tieWishEntries + 10 {
		body := fmt.Sprintf(`{"id":"i%d","pk":"big","n":%d}`, i, (i*7919)%5000)
		if _, err := be.e.WriteItem(ctx, WriteItemParams{ItemRef: ref, Mode: ModeCreate, Body: []byte(body)}); err != nil {
			t.Fatal(err)
		}
	}
	ask := func() *FeedPage {
		t.Helper()
		page, err := be.e.QueryItems(ctx, QueryParams{ItemRef: ref, Query: "SELECT VALUE MAX(c.n) FROM c"})
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Items) != 1 {
			t.Fatalf("%v, %d rows", err, len(page.Items))
		}
		return page
	}
	page := ask()
	want := string(page.Items[0])
	if page.Examined < tieWishEntries {
		t.Fatalf("the first MAX read %d records: its partition entries were there already", page.Examined)
	}
	drainIndexer(t, be.e.NewIndexer(nil))
	page = ask()
	if got := string(page.Items[0]); got != want || page.Examined != 1 || page.Plan == nil || page.Plan.Chosen.Access != plan.IndexExtreme {
		t.Fatalf("after the build: %s by %v, %d records; want %s by the index", got, page.Plan, page.Examined, want)
	}
}

// checkAggregate runs an aggregate's text through query and its evaluation
// (evaluated, which the index does not answer), fails where they differ or
// where the index answer read more than one record, and returns the page,
// the evaluated rows, whether the index answered, and whether the answer
// holds a value (the rewrite with the count names it "m").
func checkAggregate(t *testing.T, where string, query func(text string) *FeedPage, text, evaluated string) (page *FeedPage, want string, byIndex, valued bool) {
	t.Helper()
	rows := func(page *FeedPage) string {
		var out []string
		for _, it := range page.Items {
			out = append(out, string(it))
		}
		return strings.Join(out, " ")
	}
	page = query(text)
	want = rows(query(evaluated))
	if got := rows(page); got != want {
		t.Fatalf("%s, %s: %s, evaluated %s", where, text, got, want)
	}
	byIndex = page.Plan != nil && (page.Plan.Chosen.Access == plan.IndexExtreme || page.Plan.Chosen.Access == plan.IndexSum)
	if byIndex && page.Examined > 1 {
		t.Fatalf("%s, %s: read %d records", where, text, page.Examined)
	}
	valued = want != "" && want != "[{}]"
	if strings.Contains(text, "COUNT(") {
		valued = strings.Contains(want, `"m":`)
	}
	return page, want, byIndex, valued
}

// Over PostgreSQL (MAYFLY_TEST_STORE=postgres), a GROUP BY counted from
// the index reads its groups' records, one a group for its value, a run
// at a time: 150 groups in a few round trips (before, one a group).
func TestGroupCountReadsItsGroupsInFewRoundTrips(t *testing.T) {
	s, be := postgresEnv(t, `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2}}`)
	var docs []string
	for i := range 300 {
		docs = append(docs, fmt.Sprintf(`{"id":"d%03d","pk":"p%d","s":"s%03d"}`, i, i%7, i%150))
	}
	be.seed(t, docs...)
	be.e.wantAbsent(be.container(t), []string{"s"}, entryKinds{parts: true})
	drainIndexer(t, be.e.NewIndexer(nil))
	p := QueryParams{ItemRef: batchRef(""), Query: `SELECT c.s, COUNT(1) AS n FROM c GROUP BY c.s`, MaxItemCount: 200, CrossPartition: true, Whole: true}
	before := teststore.RoundTrips(s)
	page, err := be.e.QueryItems(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if page.Plan == nil || page.Plan.Chosen.Access != plan.IndexCount {
		t.Fatalf("served by %v", page.Plan)
	}
	if trips := teststore.RoundTrips(s) - before; len(page.Items) != 150 || trips > 15 {
		t.Errorf("%d groups in %d round trips", len(page.Items), trips)
	}
}

// A GROUP BY of one path whose only aggregates are COUNTs of a constant
// is counted from the path's entries once its absence entries are built
// (in a partition, once its partition entries are too), in each shape a
// client sends, and its groups equal the evaluation's as a multiset, over
// each range and in partitions, through upserts, deletes, expiries and
// purges. Under a filter of one exact term, its groups are counted from
// the entries of the items that pass, where those are many enough to be
// worth it (filtered; the test checks that some are). Other aggregates, a
// COUNT of a path, a key that is not a path, a path that holds arrays or
// objects, a filter of two terms or one the index does not answer exactly,
// and more groups than the page holds are evaluated.
func TestGroupCountByIndex(t *testing.T) {
	be := newBatchEnv(t, "null")
	ranges := be.rangedContainer(t)
	rnd := rand.New(rand.NewPCG(37, 41))
	props := func() string {
		var props []string
		if rnd.IntN(5) > 0 {
			props = append(props, `"w":`+[]string{"0", "1", "1.0", "2.5", "-3", `"b"`, `"c"`, "true", "false", "null"}[rnd.IntN(10)])
		}
		if rnd.IntN(5) > 0 {
			props = append(props, `"v":`+[]string{"0", "7", `"a"`, "[1]", `{"x":1}`}[rnd.IntN(5)])
		}
		props = append(props, fmt.Sprintf(`"o":{"x":%d}`, rnd.IntN(4)))
		return strings.Join(props, ",")
	}
	query := func(scope, text string, size int) *FeedPage {
		t.Helper()
		return be.scopedQuery(t, "s", scope, text, size)
	}
	rows := func(page *FeedPage) string {
		var out []string
		for _, it := range page.Items {
			out = append(out, string(it))
		}
		slices.Sort(out)
		return strings.Join(out, " ")
	}
	counted := []string{
		"SELECT c.w AS k, COUNT(1) AS n FROM c GROUP BY c.w",
		"SELECT VALUE COUNT(1) FROM c GROUP BY c.w",
		"SELECT c.w AS k, COUNT('x') AS n FROM c GROUP BY c.w",
		`SELECT [{"item": c.w}] AS groupByItems, {"k": c.w, "n": {"item": COUNT(1)}} AS payload FROM c GROUP BY c.w`,
		"SELECT c.o.x, COUNT(1) AS n FROM c GROUP BY c.o.x",
	}
	filtered := []string{
		"SELECT c.w AS k, COUNT(1) AS n FROM c WHERE c.o.x = 1 GROUP BY c.w",
		"SELECT c.w AS k, COUNT(1) AS n FROM c WHERE c.o.x IN (0, 2) GROUP BY c.w",
		"SELECT c.w AS k, COUNT(1) AS n FROM c WHERE c.o.x > 0 GROUP BY c.w",
		"SELECT c.o.x, COUNT(1) AS n FROM c WHERE c.w = 1 GROUP BY c.o.x",
		"SELECT c.w AS k, COUNT(1) AS n FROM c WHERE c.w >= 0 GROUP BY c.w",
		`SELECT [{"item": c.w}] AS groupByItems, {"k": c.w, "n": {"item": COUNT(1)}} AS payload FROM c WHERE c.o.x = 3 GROUP BY c.w`,
	}
	evaluated := []string{
		"SELECT c.w AS k, COUNT(1) AS n FROM c WHERE c.o.x = 1 AND c.w != 0 GROUP BY c.w",
		"SELECT c.w AS k, COUNT(1) AS n FROM c WHERE STARTSWITH(c.w, 'b', true) GROUP BY c.w",
		"SELECT c.w AS k, COUNT(1) AS n, MAX(c.o.x) AS m FROM c GROUP BY c.w",
		"SELECT c.v AS k, COUNT(1) AS n FROM c GROUP BY c.v",
		"SELECT c.w AS k, COUNT(c.o) AS n FROM c GROUP BY c.w",
		"SELECT UPPER(c.w) AS k, COUNT(1) AS n FROM c GROUP BY UPPER(c.w)",
	}
	scopes := append(rangeIDs(ranges), "pk:p0", "pk:p4", "pk:none")
	byIndex, byFilter := 0, 0
	for step := range changeSteps() {
		be.churn(t, "s", rnd, 60, 9, props)
		if !checkStep(step) {
			continue
		}
		if step == 159 {
			for _, path := range []string{"w", "o.x", "v"} {
				be.e.wantAbsent(be.containerOf(t, "s"), strings.Split(path, "."), entryKinds{parts: true})
			}
			drainIndexer(t, be.e.NewIndexer(nil))
		}
		ready := step >= 159
		for _, scope := range scopes {
			for _, text := range slices.Concat(counted, filtered, evaluated) {
				for _, size := range []int{0, 1, 3} {
					page := query(scope, text, size)
					always := " WHERE true GROUP BY"
					if strings.Contains(text, " WHERE ") {
						always = " AND true GROUP BY"
					}
					want := query(scope, strings.Replace(text, " GROUP BY", always, 1), -1)
					isCounted := page.Plan != nil && page.Plan.Chosen.Access == plan.IndexCount
					if !isCounted && page.Continuation != "" {
						continue // a page of groups; the drain is the evaluation's
					}
					// Counted groups page through their values: each
					// page counted, none more than its size.
					all := *page
					for next := page; next.Continuation != ""; {
						next = be.scopedPage(t, "s", scope, text, size, next.Continuation)
						if next.Plan == nil || next.Plan.Chosen.Access != plan.IndexCount || len(next.Items) > size || next.Examined > len(next.Items) {
							t.Fatalf("step %d, scope %q, size %d, %s: a later page of %d groups by %v, %d records", step, scope, size, text, len(next.Items), next.Plan, next.Examined)
						}
						all.Items = append(slices.Clone(all.Items), next.Items...)
					}
					got := rows(&all)
					if got != rows(want) {
						t.Fatalf("step %d, scope %q, size %d, %s: %s, evaluated %s (by %v)", step, scope, size, text, got, rows(want), page.Plan)
					}
					fits := size == 0 || len(want.Items) <= size
					// c.v's groups are counted where the scope holds no
					// array or object there; groups that do not fit a
					// page are counted a page at a time, under a filter
					// too.
					must := ready && (fits || !strings.Contains(text, " WHERE ")) && slices.Contains(counted, text)
					may := must || ready && (slices.Contains(filtered, text) || strings.Contains(text, "GROUP BY c.v"))
					if must && !isCounted || isCounted && !may || isCounted && page.Examined > len(page.Items) {
						t.Fatalf("step %d, scope %q, size %d, %s: by %v, %d records for %d groups", step, scope, size, text, page.Plan, page.Examined, len(page.Items))
					}
					if isCounted {
						byIndex++
						if slices.Contains(filtered, text) {
							byFilter++
						}
					}
				}
			}
		}
	}
	if byIndex == 0 || byFilter == 0 {
		t.Fatalf("%d answers from the index, %d under a filter: the test shows nothing", byIndex, byFilter)
	}
	t.Logf("%d answers from the index, %d of them under a filter", byIndex, byFilter)
}

// scopedQuery runs one page (of size rows; 0 for the default) of text over
// container coll in scope: a range's id, or "pk:" and a partition key.
func (be *batchEnv) scopedQuery(t *testing.T, coll, scope, text string, size int) *FeedPage {
	t.Helper()
	return be.scopedPage(t, coll, scope, text, size, "")
}

// scopedPage is scopedQuery's page from the token cont.
func (be *batchEnv) scopedPage(t *testing.T, coll, scope, text string, size int, cont string) *FeedPage {
	t.Helper()
	p := QueryParams{ItemRef: ItemRef{DB: "db", Coll: coll}, Query: text, RangeID: scope, CrossPartition: true, MaxItemCount: size, Continuation: cont}
	if pk, ok := strings.CutPrefix(scope, "pk:"); ok {
		p.RangeID, p.CrossPartition = "", false
		p.HasKey, p.PartitionKey = true, partition.Key{partition.String(pk)}
	}
	page, err := be.e.QueryItems(context.Background(), p)
	if err != nil {
		t.Fatalf("%s, scope %q: %v", text, scope, err)
	}
	return page
}

// everyOther reports whether a test runs its i-th variant of several in
// full: every one, or in short mode (the engine's tests over PostgreSQL)
// and under the race detector every other one. Those runs exercise the
// store and the engine's concurrency, for which half of a long test's
// variants do what all of them do; the plain run checks every one.
func everyOther(i int) bool {
	return !(testing.Short() || RaceEnabled) || i%2 == 0
}

// bit is 1 for true, 0 for false.
func bit(b bool) int {
	if b {
		return 1
	}
	return 0
}

// changeSteps is how many steps a test that changes its items step by
// step takes: 400, or 240 in short mode (the engine's tests over
// PostgreSQL, where every read is a round trip) and under the race
// detector.
func changeSteps() int {
	if testing.Short() || RaceEnabled {
		return 240
	}
	return 400
}

// checkStep reports whether such a test checks its queries after step:
// every 40th step, or every 80th in short mode and under the race
// detector. Both check at steps 79, 159 and 239: before and after the
// tests build entries of their own.
func checkStep(step int) bool {
	if testing.Short() || RaceEnabled {
		return step%80 == 79
	}
	return step%40 == 39
}

// A GROUP BY counted from the index under a hierarchical prefix of a few
// partitions reads their partition entries of the path, merged, once they
// are built, and one record a group; alone and under a filter of one
// value, its groups equal the evaluation's through upserts of values of
// every type, deletes, expiries and purges, and so under a filter of a
// range, read through the prefix's partition entries of its path (a page
// of the query asks for them). Before they are built it is evaluated.
func TestGroupCountUnderAPrefix(t *testing.T) {
	be := newBatchEnvWith(t, `{"id":"c","partitionKey":{"paths":["/t","/u"],"kind":"MultiHash","version":2},"defaultTtl":-1}`)
	rnd := rand.New(rand.NewPCG(61, 67))
	var seed []string
	for i := range 3000 {
		seed = append(seed, fmt.Sprintf(`{"id":"s%d","t":"t%d","u":"u%d","w":%d,"g":%d}`, i, i%3, i%11, i%7, i%4))
	}
	be.seed(t, seed...)
	queries := []struct {
		text    string
		counted bool // once w's partition entries are built
	}{
		{"SELECT c.w AS k, COUNT(1) AS n FROM c GROUP BY c.w", true},
		{`SELECT [{"item": c.w}] AS groupByItems, {"k": c.w, "n": {"item": COUNT(1)}} AS payload FROM c GROUP BY c.w`, true},
		{"SELECT c.w AS k, COUNT(1) AS n FROM c WHERE c.g = 1 GROUP BY c.w", true},
		{"SELECT c.w AS k, COUNT(1) AS n FROM c WHERE c.g > 1 GROUP BY c.w", true},
	}
	rows := func(page *FeedPage) string {
		var out []string
		for _, it := range page.Items {
			out = append(out, string(it))
		}
		slices.Sort(out)
		return strings.Join(out, " ")
	}
	byIndex := 0
	for step := range 200 {
		i := rnd.IntN(120)
		tk, u := "t"+strconv.Itoa(i%3), "u"+strconv.Itoa(i%11)
		ref := ItemRef{DB: "db", Coll: "c", HasKey: true, PartitionKey: partition.Key{partition.String(tk), partition.String(u)}}
		be.changeOne(t, rnd, ref, "x"+strconv.Itoa(i), func() string {
			w := []string{"0", "7", "-2.5", `"a"`, "true", "null", "5000"}[rnd.IntN(7)]
			if rnd.IntN(10) == 0 {
				w = `[1]` // a group of a whole array: evaluated while it lives
			}
			ttlProp := []string{"", `,"ttl":5`, `,"ttl":-1`}[rnd.IntN(3)]
			return fmt.Sprintf(`{"id":"x%d","t":%q,"u":%q,"w":%s,"g":%d%s}`, i, tk, u, w, rnd.IntN(4), ttlProp)
		})
		if step == 100 {
			be.e.wantAbsent(be.container(t), []string{"w"}, entryKinds{parts: true})
			drainIndexer(t, be.e.NewIndexer(nil))
		}
		if step%20 != 19 {
			continue
		}
		for _, prefix := range []string{"t0", "t2"} {
			query := be.underPrefix(t, prefix)
			for _, q := range queries {
				always := " WHERE true GROUP BY"
				if strings.Contains(q.text, " WHERE ") {
					always = " AND true GROUP BY"
				}
				page, want := query(q.text), query(strings.Replace(q.text, " GROUP BY", always, 1))
				if got := rows(page); got != rows(want) {
					t.Fatalf("step %d, %s under %s: %s, evaluated %s", step, q.text, prefix, got, rows(want))
				}
				isCounted := page.Plan != nil && page.Plan.Chosen.Access == plan.IndexCount
				if isCounted && (!q.counted || step < 100 || page.Examined > len(page.Items)) {
					t.Fatalf("step %d, %s under %s: counted, %d records for %d groups", step, q.text, prefix, page.Examined, len(page.Items))
				}
				if isCounted {
					byIndex++
				}
			}
		}
	}
	if byIndex == 0 && teststore.Backend() != "postgres" {
		// Over a store across the network the partitions are not
		// merged (prefixparts.go): every answer is evaluated.
		t.Fatal("no group was counted from the index: the test shows nothing")
	}
	t.Logf("%d answers from the index", byIndex)
}

// SUM and AVG of a path under a hierarchical prefix of a few partitions
// read the prefix's partition entries of the path, merged, once they are
// built (the query asks for them under a large prefix), and no record;
// they equal their evaluation through upserts, deletes, expiries and
// purges, and a value that is not an integer, or an array, leaves them to
// it.
func TestSumUnderAPrefix(t *testing.T) {
	be := newBatchEnvWith(t, `{"id":"c","partitionKey":{"paths":["/t","/u"],"kind":"MultiHash","version":2},"defaultTtl":-1}`)
	rnd := rand.New(rand.NewPCG(71, 73))
	var seed []string
	for i := range 4000 {
		seed = append(seed, fmt.Sprintf(`{"id":"s%d","t":"t%d","u":"u%d","v":%d}`, i, i%3, i%11, i%97-40))
	}
	be.seed(t, seed...)
	byIndex := 0
	for step := range 200 {
		i := rnd.IntN(120)
		tk, u := "t"+strconv.Itoa(i%3), "u"+strconv.Itoa(i%11)
		ref := ItemRef{DB: "db", Coll: "c", HasKey: true, PartitionKey: partition.Key{partition.String(tk), partition.String(u)}}
		be.changeOne(t, rnd, ref, "x"+strconv.Itoa(i), func() string {
			v := strconv.Itoa(rnd.IntN(1000) - 500)
			if rnd.IntN(20) == 0 {
				v = []string{"2.5", `"a"`, "[1]", "null"}[rnd.IntN(4)]
			}
			ttlProp := []string{"", `,"ttl":5`, `,"ttl":-1`}[rnd.IntN(3)]
			return fmt.Sprintf(`{"id":"x%d","t":%q,"u":%q,"v":%s%s}`, i, tk, u, v, ttlProp)
		})
		if step == 60 {
			// The prefix's query asked for v's partition entries.
			drainIndexer(t, be.e.NewIndexer(nil))
		}
		if step%15 != 14 {
			continue
		}
		for _, prefix := range []string{"t0", "t2"} {
			query := be.underPrefix(t, prefix)
			for _, text := range []string{"SELECT VALUE SUM(c.v) FROM c", "SELECT VALUE AVG(c.v) FROM c", `SELECT VALUE [{"item": {"sum": SUM(c.v), "count": COUNT(c.v)}}] FROM c`, "SELECT VALUE SUM(c.v) FROM c WHERE c.v > 10"} {
				evaluated := text + " WHERE true"
				if strings.Contains(text, "WHERE") {
					evaluated = text + " AND true"
				}
				page, _, counted, _ := checkAggregate(t, fmt.Sprintf("step %d, prefix %s", step, prefix), query, text, evaluated)
				if counted && (step < 60 || page.Examined != 0) {
					t.Fatalf("step %d, prefix %s, %s: by the index before its entries were built, or %d records", step, prefix, text, page.Examined)
				}
				if counted {
					byIndex++
				}
			}
		}
	}
	if byIndex == 0 && teststore.Backend() != "postgres" {
		t.Fatal("no sum was read from the index: the test shows nothing")
	}
	t.Logf("%d answers from the index", byIndex)
}

// TestGroupCountsPageThroughTheirValues: a GROUP BY whose groups do not fit
// a page is counted from its path's entries a page at a time, each page
// going on after the last group's value, and a record read a group; an
// item written between pages with a value whose group the index cannot
// count ends the drain with a clear refusal.
func TestGroupCountsPageThroughTheirValues(t *testing.T) {
	be := newBatchEnv(t, "-1")
	var items []string
	for i := range 5000 {
		k := fmt.Sprintf(`"k":%d,`, i%500)
		if i%1000 == 1 {
			k = "" // the group of no value
		}
		items = append(items, fmt.Sprintf(`{"id":"d%d","pk":"p%d",%s"n":%d}`, i, i%7, k, i))
	}
	be.seed(t, items...)
	q := "SELECT c.k, COUNT(1) AS n FROM c GROUP BY c.k"
	p := QueryParams{ItemRef: batchRef(""), RangeID: "0", CrossPartition: true, MaxItemCount: 100, Query: q}
	be.orderReady(t, p)
	var got []string
	pages, records := 0, 0
	for cont := ""; pages == 0 || cont != ""; pages++ {
		p.Continuation = cont
		page, err := be.e.QueryItems(context.Background(), p)
		if err != nil {
			t.Fatal(err)
		}
		if page.Plan == nil || page.Plan.Chosen.Access != plan.IndexCount || len(page.Items) > 100 {
			t.Fatalf("page %d: %d groups by %v", pages+1, len(page.Items), page.Plan)
		}
		for _, it := range page.Items {
			got = append(got, string(it))
		}
		records += page.Examined
		cont = page.Continuation
	}
	whole := p
	whole.Continuation, whole.MaxItemCount, whole.Query = "", 1000, "SELECT c.k, COUNT(1) AS n FROM c WHERE true GROUP BY c.k"
	want := drainRows(t, be.e, whole, nil)
	slices.Sort(got)
	slices.Sort(want)
	if len(want) != 501 || !slices.Equal(got, want) {
		t.Fatalf("%d groups over %d pages, want the evaluation's %d", len(got), pages, len(want))
	}
	if pages != 6 || records > 500 {
		t.Errorf("%d pages read %d records, want 6 reading a record a group", pages, records)
	}
	// An array written between two pages.
	p.Continuation = ""
	first, err := be.e.QueryItems(context.Background(), p)
	if err != nil || first.Continuation == "" {
		t.Fatalf("first page: %v", err)
	}
	be.seed(t, `{"id":"arr","pk":"p1","k":[1]}`)
	p.Continuation = first.Continuation
	for {
		page, err := be.e.QueryItems(context.Background(), p)
		if err != nil {
			if !strings.Contains(err.Error(), "run the query again") {
				t.Fatalf("a page after the array: %v", err)
			}
			break
		}
		if p.Continuation = page.Continuation; p.Continuation == "" {
			t.Fatal("the drain ended without meeting the array's group")
		}
	}
}

// A GROUP BY's counts under a filter page through their values too: the
// first page counts every entry of the path (the group of no value, the
// items that pass without the path, comes first and is known only then)
// and keeps the locations that pass, which the pages after read in place
// of the term's entries while nothing was written, and collect again
// after a write (the kept set's catching up takes in every item written,
// one that fails the filter among them). Before, such a GROUP BY was
// counted only when its groups fit one page.
func TestGroupCountsUnderAFilterPage(t *testing.T) {
	be := newBatchEnv(t, "-1")
	var items []string
	for i := range 5000 {
		k := fmt.Sprintf(`"k":%d,`, i%500)
		if i%1000 == 0 {
			k = "" // the group of no value
		}
		u := hotEvery(i, 5)
		items = append(items, fmt.Sprintf(`{"id":"d%d","pk":"p%d",%s"u":"%s"}`, i, i%7, k, u))
	}
	be.seed(t, items...)
	q := "SELECT c.k, COUNT(1) AS n FROM c WHERE c.u = 'hot' GROUP BY c.k"
	p := QueryParams{ItemRef: batchRef(""), RangeID: "0", CrossPartition: true, MaxItemCount: 10, Query: q}
	be.orderReady(t, p)
	whole := p
	whole.MaxItemCount, whole.Query = 1000, "SELECT c.k, COUNT(1) AS n FROM c WHERE c.u = 'hot' AND true GROUP BY c.k"
	evaluated := func() []string { return drainRows(t, be.e, whole, nil) }
	for _, tc := range []struct {
		name    string
		between func(n int) // before page n+2
	}{
		{"kept", nil},
		{"forgotten", func(int) { be.e.kept.forget(time.Now().Add(time.Hour)) }},
		{"written", func(n int) {
			if n == 0 {
				// A group past the position, and an item of a later
				// group that fails the filter.
				be.seed(t, `{"id":"new","pk":"p1","k":999,"u":"hot"}`, `{"id":"cold","pk":"p2","k":495,"u":"cold"}`)
			}
		}},
	} {
		pages, records := 0, 0
		got := drainRows(t, be.e, p, func(n int, page *FeedPage) {
			if page.Plan == nil || page.Plan.Chosen.Access != plan.IndexCount || len(page.Items) > 10 {
				t.Fatalf("%s: page %d: %d groups by %v", tc.name, n+1, len(page.Items), page.Plan)
			}
			if n > 0 && tc.between == nil && page.IndexEntries > 800 {
				t.Errorf("%s: page %d read %d index entries, want its groups' alone", tc.name, n+1, page.IndexEntries)
			}
			pages, records = n+1, records+page.Examined
			if page.Continuation != "" && tc.between != nil {
				tc.between(n)
			}
		})
		want := evaluated()
		slices.Sort(got)
		slices.Sort(want)
		if len(want) < 101 || !slices.Equal(got, want) {
			t.Errorf("%s: %d groups over %d pages, want the evaluation's %d: %.300v", tc.name, len(got), pages, len(want), got)
		}
		if records > len(want) {
			t.Errorf("%s: %d pages read %d records, want a record a group", tc.name, pages, records)
		}
	}
}
