package engine

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/mayfly-db/mayfly/internal/query/plan"
	"github.com/mayfly-db/mayfly/internal/storage"
	"github.com/mayfly-db/mayfly/internal/storage/teststore"
)

// getRecorder records the keys of every Get its Views make.
type getRecorder struct {
	storage.Store
	mu   sync.Mutex
	keys [][]byte
}

func (s *getRecorder) View(ctx context.Context, fn func(r storage.Reader) error) error {
	return s.Store.View(ctx, func(r storage.Reader) error { return fn(recordingReader{r, s}) })
}

func (s *getRecorder) take() [][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := s.keys
	s.keys = nil
	return k
}

// itemReads takes the keys read so far and counts those under items (a
// container's item family), and the runs of ascending keys they came in.
func (s *getRecorder) itemReads(items []byte) (n, runs int) {
	var prev []byte
	for _, k := range s.take() {
		if !bytes.HasPrefix(k, items) {
			continue
		}
		if n++; prev == nil || bytes.Compare(k, prev) < 0 {
			runs++
		}
		prev = k
	}
	return n, runs
}

type recordingReader struct {
	storage.Reader
	s *getRecorder
}

func (r recordingReader) Get(k []byte) ([]byte, error) {
	r.s.mu.Lock()
	r.s.keys = append(r.s.keys, bytes.Clone(k))
	r.s.mu.Unlock()
	return r.Reader.Get(k)
}

// An ORDER BY page reads its records in runs in key order (readAhead),
// not in the _rid order it returns them in, which scatters them over the
// item family. The items' _rid order here crosses their partitions at
// every step, so reading in _rid order steps back in the family at about
// every other read. Groups of equal values are read both ways: 10 items a
// value (collected and sorted) and 200 (through the tie entries).
func TestOrderPageReadsRecordsInKeyOrder(t *testing.T) {
	st := &getRecorder{Store: teststore.Open(t)}
	be := newBatchEnvOn(t, st, `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2}}`)
	var docs []string
	for i := 0; i < 400; i++ {
		docs = append(docs, fmt.Sprintf(`{"id":"d%03d","pk":"p%d","small":%d,"big":%d}`, i, i%37, i/10, i/200))
	}
	be.seed(t, docs...)
	c := be.container(t)
	items := collPrefix(famItem, c.Rid)
	for _, tc := range []struct {
		query string
		runs  int // at most, for the page's records
	}{
		// Ten groups of ten, and the next group's first record, which
		// the page reads to end where it does.
		{"SELECT c.id FROM c ORDER BY c.small", 11},
		// Within a group of 200: a run of 100, then the 101st record.
		{"SELECT c.id FROM c ORDER BY c.big", 2},
		{"SELECT c.id FROM c ORDER BY c.big DESC", 2},
	} {
		p := QueryParams{ItemRef: batchRef(""), Query: tc.query, RangeID: "0", CrossPartition: true}
		be.orderReady(t, p)
		st.take()
		p.MaxItemCount = 100
		page, err := be.e.QueryItems(context.Background(), p)
		if err != nil {
			t.Fatalf("%s: %v", tc.query, err)
		}
		if len(page.Items) != 100 {
			t.Fatalf("%s: %d rows, want 100", tc.query, len(page.Items))
		}
		n, runs := st.itemReads(items)
		if n != 101 || page.Examined != n || runs > tc.runs {
			t.Errorf("%s: %d record reads (%d counted) in %d ascending runs, want 101 in at most %d", tc.query, n, page.Examined, runs, tc.runs)
		}
	}
}

// A cross-partition page in _rid order (a scan of the container, the
// candidates of an index span, a read feed) reads its records in runs in
// key order too, and no more of them than one at a time would: each reads
// the record after its last row's, to know where the next page starts.
func TestScatteredPagesReadRecordsInKeyOrder(t *testing.T) {
	st := &getRecorder{Store: teststore.Open(t)}
	be := newBatchEnvOn(t, st, `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2}}`)
	var docs []string
	for i := 0; i < 400; i++ {
		docs = append(docs, fmt.Sprintf(`{"id":"d%03d","pk":"p%d","k":%d}`, i, i%37, i%3))
	}
	be.seed(t, docs...)
	c := be.container(t)
	items := collPrefix(famItem, c.Rid)
	ctx := context.Background()
	for _, tc := range []struct {
		what         string
		page         func() (*FeedPage, error)
		records, max int // record reads, and ascending runs at most
		rows         int
	}{
		{"a scan", func() (*FeedPage, error) {
			return be.e.QueryItems(ctx, QueryParams{ItemRef: batchRef(""), Query: "SELECT * FROM c", RangeID: "0", CrossPartition: true, MaxItemCount: 100})
		}, 101, 2, 100},
		{"an index span", func() (*FeedPage, error) {
			return be.e.QueryItems(ctx, QueryParams{ItemRef: batchRef(""), Query: "SELECT * FROM c WHERE c.k = 1", RangeID: "0", CrossPartition: true, MaxItemCount: 100})
		}, 101, 2, 100},
		{"a read feed", func() (*FeedPage, error) {
			return be.e.ReadFeed(ctx, FeedParams{ItemRef: batchRef(""), MaxItemCount: 100})
		}, 101, 2, 100},
		// A page that reads every document of its source reads them
		// 256 at a time (a SUM of an expression: the index answers a
		// SUM of a path of integers).
		{"an aggregate over a scan", func() (*FeedPage, error) {
			return be.e.QueryItems(ctx, QueryParams{ItemRef: batchRef(""), Query: "SELECT VALUE SUM(c.k + 1) FROM c", RangeID: "0", CrossPartition: true, MaxItemCount: 100})
		}, 400, 2, 1},
		{"groups over an index span", func() (*FeedPage, error) {
			return be.e.QueryItems(ctx, QueryParams{ItemRef: batchRef(""), Query: "SELECT c.pk, COUNT(1) AS n FROM c WHERE c.k = 1 GROUP BY c.pk", RangeID: "0", CrossPartition: true, MaxItemCount: 100})
		}, 133, 1, 37},
		// The TOP walk of an index reads as many records at once as it
		// still wants documents.
		{"a TOP walk of an index", func() (*FeedPage, error) {
			return be.e.QueryItems(ctx, QueryParams{ItemRef: batchRef(""), Query: "SELECT TOP 30 * FROM c ORDER BY c.k DESC", RangeID: "0", CrossPartition: true, MaxItemCount: 100})
		}, 30, 1, 30},
		// A page that stops after some rows without streaming them
		// reads as many as it still needs rows: its TOP, its LIMIT (the
		// rows its OFFSET skips are counted by their items' keys), or
		// one more than the page.
		{"a TOP page", func() (*FeedPage, error) {
			return be.e.QueryItems(ctx, QueryParams{ItemRef: batchRef(""), Query: "SELECT TOP 50 * FROM c", RangeID: "0", CrossPartition: true, MaxItemCount: 100})
		}, 50, 1, 50},
		{"an OFFSET page", func() (*FeedPage, error) {
			return be.e.QueryItems(ctx, QueryParams{ItemRef: batchRef(""), Query: "SELECT * FROM c OFFSET 10 LIMIT 50", RangeID: "0", CrossPartition: true, MaxItemCount: 100})
		}, 50, 1, 50},
		// A DISTINCT streams as a scan does: each of the first 37
		// documents holds a pk of its own. (A DISTINCT with an indexed
		// path among its items, or its VALUE object's properties, walks
		// the path's index instead.)
		{"a DISTINCT page", func() (*FeedPage, error) {
			return be.e.QueryItems(ctx, QueryParams{ItemRef: batchRef(""), Query: `SELECT DISTINCT VALUE [c.pk, c.k] FROM c`, RangeID: "0", CrossPartition: true, MaxItemCount: 30})
		}, 31, 2, 30},
	} {
		st.take()
		page, err := tc.page()
		if err != nil {
			t.Fatalf("%s: %v", tc.what, err)
		}
		n, runs := st.itemReads(items)
		if tc.what == "an index span" && (page.Plan == nil || page.Plan.Chosen.Access != plan.IndexSpan) {
			t.Errorf("%s: planned %v", tc.what, page.Plan)
		}

		if len(page.Items) != tc.rows || page.Examined != tc.records || n != tc.records || runs > tc.max {
			t.Errorf("%s: %d rows, %d records counted, %d read in %d ascending runs; want %d rows, %d records in at most %d runs",
				tc.what, len(page.Items), page.Examined, n, runs, tc.rows, tc.records, tc.max)
		}
	}
}

// A scan tried first (plan.ScanFirstBounds), paced by its terms' counts,
// reads ahead as far as its pace lets it, and no further than its rows
// need: its ten rows in one run, then the record after them.
func TestPacedScanReadsAhead(t *testing.T) {
	st := &getRecorder{Store: teststore.Open(t)}
	be := newBatchEnvOn(t, st, `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2}}`)
	var docs []string
	for i := 0; i < 2000; i++ {
		docs = append(docs, fmt.Sprintf(`{"id":"d%04d","pk":"p%d","k":%d}`, i, i%37, i%3))
	}
	be.seed(t, docs...)
	items := collPrefix(famItem, be.container(t).Rid)
	st.take()
	page, err := be.e.QueryItems(context.Background(), QueryParams{ItemRef: batchRef(""), Query: "SELECT * FROM c WHERE c.k >= 0",
		RangeID: "0", CrossPartition: true, MaxItemCount: 10})
	if err != nil {
		t.Fatal(err)
	}
	if page.Plan == nil || page.Plan.Chosen.Access != plan.Scan || page.Plan.Chosen.Budget == 0 {
		t.Fatalf("planned %v, want a scan tried first", page.Plan)
	}
	n, runs := st.itemReads(items)
	if len(page.Items) != 10 || page.Examined != 11 || n != 11 || runs > 2 {
		t.Errorf("%d rows, %d records counted, %d read in %d ascending runs; want 10 rows, 11 records in at most 2 runs", len(page.Items), page.Examined, n, runs)
	}
}

// Over a store that serves reads over the network (PostgreSQL, with
// MAYFLY_TEST_STORE=postgres), the records a page reads ahead come in the
// round trip of the first of them, not one round trip each.
func TestScatteredRecordsComeInOneRoundTrip(t *testing.T) {
	s, be := roundTripEnv(t, 37)
	ctx := context.Background()
	for _, tc := range []struct {
		q           string
		rows, trips int
	}{
		{"SELECT * FROM c", 100, 12},
		{"SELECT * FROM c WHERE c.k = 1", 100, 12},
		{"SELECT * FROM c ORDER BY c.k DESC", 100, 12},
		// Ascending, before the indexer has made c.k's absence
		// entries: the stream scans the container for documents
		// without c.k first.
		{"SELECT * FROM c ORDER BY c.k", 100, 16},
		// Pages that read every document, 256 a round trip.
		{"SELECT VALUE SUM(c.k) FROM c", 1, 12},
		{"SELECT c.pk, COUNT(1) AS n FROM c WHERE c.k = 1 GROUP BY c.pk", 37, 12},
		// The TOP walk of c.k's index.
		{"SELECT TOP 30 * FROM c ORDER BY c.k DESC", 30, 12},
		// Pages that stop after as many rows as they need.
		{"SELECT TOP 50 * FROM c", 50, 12},
		{"SELECT * FROM c OFFSET 10 LIMIT 50", 50, 12},
		{"SELECT DISTINCT VALUE c.pk FROM c", 37, 12},
	} {
		q := tc.q
		p := QueryParams{ItemRef: batchRef(""), Query: q, RangeID: "0", CrossPartition: true, MaxItemCount: 100}
		if _, err := be.e.QueryItems(ctx, p); err != nil { // plans and caches what a first page does
			t.Fatal(err)
		}
		before := teststore.RoundTrips(s)
		page, err := be.e.QueryItems(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		trips := teststore.RoundTrips(s) - before
		t.Logf("%s: %d round trips", q, trips)
		if len(page.Items) != tc.rows || trips > int64(tc.trips) {
			t.Errorf("%s: %d rows in %d round trips (%d records by %v); want %d in at most %d", q, len(page.Items), trips, page.Examined, page.Plan, tc.rows, tc.trips)
		}
	}
}

// A change feed page reads the records its log's entries name in key
// order, a page's run at once, not in the LSN order that crosses the
// partitions at every step.
func TestChangeFeedReadsRecordsInKeyOrder(t *testing.T) {
	st := &getRecorder{Store: teststore.Open(t)}
	be := newBatchEnvOn(t, st, `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2}}`)
	var docs []string
	for i := 0; i < 400; i++ {
		docs = append(docs, fmt.Sprintf(`{"id":"d%03d","pk":"p%d"}`, i, i%37))
	}
	be.seed(t, docs...)
	items := collPrefix(famItem, be.container(t).Rid)
	st.take()
	page, err := be.e.ChangeFeed(context.Background(), ChangeFeedParams{ItemRef: batchRef(""), Start: StartBeginning, MaxItemCount: 100})
	if err != nil {
		t.Fatal(err)
	}
	n, runs := st.itemReads(items)
	if len(page.Items) != 100 || n != 100 || runs != 1 {
		t.Errorf("%d changes, %d records read in %d ascending runs; want 100 in one", len(page.Items), n, runs)
	}
}

// A change feed page reads the records its log entries name a run at a
// time too: over PostgreSQL one round trip per run, not one per change.
// The whole container's latest versions come from its sequence's log, in
// LSN order across partitions; one partition's from its own items when
// they are fewer than the log's changes (feedScan.latestOf).
func TestChangeFeedRecordsComeInOneRoundTrip(t *testing.T) {
	s, be := roundTripEnv(t, 4)
	ctx := context.Background()
	for _, tc := range []struct {
		what        string
		p           ChangeFeedParams
		items, trip int
	}{
		{"the container", ChangeFeedParams{ItemRef: batchRef(""), Start: StartBeginning, MaxItemCount: 100}, 100, 10},
		{"a partition", ChangeFeedParams{ItemRef: batchRef(`["p1"]`), Start: StartBeginning, MaxItemCount: 60}, 60, 10},
	} {
		if _, err := be.e.ChangeFeed(ctx, tc.p); err != nil {
			t.Fatal(err)
		}
		before := teststore.RoundTrips(s)
		page, err := be.e.ChangeFeed(ctx, tc.p)
		if err != nil {
			t.Fatal(err)
		}
		trips := teststore.RoundTrips(s) - before
		t.Logf("%s: %d round trips", tc.what, trips)
		if len(page.Items) != tc.items || trips > int64(tc.trip) {
			t.Errorf("%s: %d changes in %d round trips; want %d in at most %d", tc.what, len(page.Items), trips, tc.items, tc.trip)
		}
	}
}

// roundTripEnv is a container over PostgreSQL (the test is skipped on
// any other store) holding 400 items spread over parts partitions, k =
// 0..2, and the store, whose round trips the test counts.
func roundTripEnv(t *testing.T, parts int) (storage.Store, *batchEnv) {
	t.Helper()
	s, be := postgresEnv(t, `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2}}`)
	var docs []string
	for i := 0; i < 400; i++ {
		docs = append(docs, fmt.Sprintf(`{"id":"d%03d","pk":"p%d","k":%d}`, i, i%parts, i%3))
	}
	be.seed(t, docs...)
	return s, be
}

// postgresEnv is the container of the given body over PostgreSQL, and the
// store, whose round trips the test counts; the test is skipped on any
// other store.
func postgresEnv(t *testing.T, body string) (storage.Store, *batchEnv) {
	t.Helper()
	if teststore.Backend() != "postgres" {
		t.Skip("the store reads in process; MAYFLY_TEST_STORE=postgres runs this test")
	}
	s := teststore.Open(t)
	return s, newBatchEnvOn(t, s, body)
}

// Over PostgreSQL (MAYFLY_TEST_STORE=postgres), a query on many ids, as
// the SDKs' read-many sends it (an IN list, or an OR of an id and a
// partition key each), reads the ids' index entries in a few round trips
// rather than one an id (before, 53 for 50 ids in either shape), and so
// do a count of them and a page of them in another order.
func TestManyIDsInFewRoundTrips(t *testing.T) {
	ctx := context.Background()
	s, be := postgresEnv(t, `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2}}`)
	var docs []string
	for i := range 2000 {
		docs = append(docs, fmt.Sprintf(`{"id":"d%04d","pk":"p%d","n":%d}`, i, i%20, i%7))
	}
	be.seed(t, docs...)
	var ids, pairs []string
	for i := 0; i < 2000; i += 40 {
		ids = append(ids, fmt.Sprintf("'d%04d'", i))
		pairs = append(pairs, fmt.Sprintf("(c.id = 'd%04d' AND c.pk = 'p%d')", i, i%20))
	}
	for _, c := range []struct {
		query  string
		access plan.Access
	}{
		{`SELECT * FROM c WHERE c.id IN (` + strings.Join(ids, ", ") + `)`, plan.IndexSpan},
		{`SELECT * FROM c WHERE ` + strings.Join(pairs, " OR "), plan.Union},
		{`SELECT VALUE COUNT(1) FROM c WHERE c.id IN (` + strings.Join(ids, ", ") + `)`, plan.IndexCount},
		{`SELECT * FROM c WHERE c.id IN (` + strings.Join(ids, ", ") + `) ORDER BY c.n`, plan.IndexSpan},
	} {
		before := teststore.RoundTrips(s)
		page, err := be.e.QueryItems(ctx, QueryParams{ItemRef: batchRef(""), Query: c.query, MaxItemCount: 100, CrossPartition: true, Whole: true})
		if err != nil {
			t.Fatal(err)
		}
		trips := teststore.RoundTrips(s) - before
		if page.Plan == nil || page.Plan.Chosen.Access != c.access {
			t.Fatalf("%.50s: not served by %s", c.query, c.access)
		}
		if rows := len(page.Items); rows != 50 && !(c.access == plan.IndexCount && rows == 1) || trips > 10 {
			t.Errorf("%.50s: %d rows in %d round trips", c.query, len(page.Items), trips)
		}
	}
}

// Over PostgreSQL (MAYFLY_TEST_STORE=postgres), a batch looks up the items
// its operations name in the round trip that begins its transaction, not
// in one round trip an operation; a bulk batch runs in one transaction,
// each operation behind a savepoint, as an atomic batch does.
func TestBatchLooksUpItsItemsTogether(t *testing.T) {
	s, be := postgresEnv(t, `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2}}`)
	var docs []string
	for i := range 50 {
		docs = append(docs, fmt.Sprintf(`{"id":"old%d","pk":"p","n":%d}`, i, i))
	}
	be.seed(t, docs...)
	ops := func(created string) string {
		var out []string
		for i := range 25 {
			out = append(out, fmt.Sprintf(`{"operationType":"Create","resourceBody":{"id":"%s%d","pk":"p"}}`, created, i),
				fmt.Sprintf(`{"operationType":"Upsert","resourceBody":{"id":"old%d","pk":"p","n":-1}}`, i),
				fmt.Sprintf(`{"operationType":"Read","id":"old%d"}`, i+25),
				fmt.Sprintf(`{"operationType":"Patch","id":"old%d","resourceBody":{"operations":[{"op":"set","path":"/n","value":0}]}}`, i+25))
		}
		return "[" + strings.Join(out, ",") + "]"
	}
	for _, c := range []struct {
		atomic bool
		trips  int64 // at most
	}{
		{atomic: true, trips: 8},   // 81 before
		{atomic: false, trips: 10}, // 359 before, 209 in a transaction an operation
	} {
		before := teststore.RoundTrips(s)
		res, err := be.run(t, `["p"]`, c.atomic, ops(fmt.Sprint("new", c.atomic)))
		if err != nil {
			t.Fatal(err)
		}
		trips := teststore.RoundTrips(s) - before
		t.Logf("atomic %v: %d round trips", c.atomic, trips)
		if res.Failed() || trips > c.trips {
			t.Errorf("atomic %v: %d round trips for 100 operations (want at most %d): %s", c.atomic, trips, c.trips, outcomes(res))
		}
	}
	// A bulk batch of reads reads in one snapshot (before, 103 round
	// trips for 50 reads).
	var reads []string
	for i := range 50 {
		reads = append(reads, fmt.Sprintf(`{"operationType":"Read","id":"old%d"}`, i))
	}
	before := teststore.RoundTrips(s)
	res, err := be.run(t, `["p"]`, false, "["+strings.Join(reads, ",")+"]")
	if err != nil {
		t.Fatal(err)
	}
	if trips := teststore.RoundTrips(s) - before; res.Failed() || trips > 6 {
		t.Errorf("a bulk batch of 50 reads: %d round trips (want at most 6): %s", trips, outcomes(res))
	}
}
