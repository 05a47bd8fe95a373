package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mayfly-db/mayfly/internal/clock"
	"github.com/mayfly-db/mayfly/internal/document"
	"github.com/mayfly-db/mayfly/internal/partition"
	"github.com/mayfly-db/mayfly/internal/storage"
	"github.com/mayfly-db/mayfly/internal/storage/teststore"
)

// updateCounter is a store that counts its write transactions, so a test
// can see that a batch of reads writes nothing.
type updateCounter struct {
	storage.Store
	updates atomic.Int64
}

func (s *updateCounter) Update(ctx context.Context, fn func(tx storage.Txn) error) error {
	s.updates.Add(1)
	return s.Store.Update(ctx, fn)
}

func (s *updateCounter) UpdateOptimistic(ctx context.Context, fn func(tx storage.Txn) error) error {
	s.updates.Add(1)
	return storage.UpdateOptimistic(ctx, s.Store, fn)
}

type batchEnv struct {
	e     *Engine
	clock *clock.Manual
	store *updateCounter
}

var batchT0 = time.Unix(1_700_000_000, 0)

// newBatchEnv is an engine on in-memory Pebble and a manual clock, with
// database "db" and container "c" partitioned on /pk; defaultTTL is the
// container's defaultTtl as JSON ("null" for TTL off).
func newBatchEnv(t *testing.T, defaultTTL string) *batchEnv {
	t.Helper()
	return newBatchEnvWith(t, `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2},"defaultTtl":`+defaultTTL+`}`)
}

// newBatchEnvWith is newBatchEnv with the container body given.
func newBatchEnvWith(t *testing.T, body string) *batchEnv {
	t.Helper()
	return newBatchEnvOn(t, teststore.Open(t), body)
}

// newBatchEnvOn is newBatchEnvWith on store s.
func newBatchEnvOn(t *testing.T, s storage.Store, body string) *batchEnv {
	t.Helper()
	return newBatchEnvIn(t, Config{Store: s}, body)
}

// newBatchEnvIn is newBatchEnvWith in an engine of cfg, on its store,
// with a manual clock.
func newBatchEnvIn(t *testing.T, cfg Config, body string) *batchEnv {
	t.Helper()
	st := &updateCounter{Store: cfg.Store}
	clk := clock.NewManual(batchT0)
	cfg.Store, cfg.Clock = st, clk
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	createDBAndContainer(t, e, body)
	return &batchEnv{e: e, clock: clk, store: st}
}

// createDBAndContainer creates database "db" in e and in it the container
// of body.
func createDBAndContainer(t testing.TB, e *Engine, body string) {
	t.Helper()
	ctx := context.Background()
	if _, err := e.CreateDatabase(ctx, batchJSON(t, `{"id":"db"}`), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := e.CreateContainer(ctx, "db", batchJSON(t, body), nil); err != nil {
		t.Fatal(err)
	}
}

func batchJSON(t testing.TB, s string) document.Value {
	t.Helper()
	v, err := document.Parse([]byte(s))
	if err != nil {
		t.Fatalf("parse %s: %v", s, err)
	}
	return v
}

func batchRef(key string) ItemRef {
	ref := ItemRef{DB: "db", Coll: "c"}
	if key != "" {
		k, err := partition.ParseHeader(key)
		if err != nil {
			panic(err)
		}
		ref.PartitionKey, ref.HasKey = k, true
	}
	return ref
}

// seed creates items, each a JSON object, in order, a hundred to a
// transaction: over PostgreSQL every transaction costs round trips, and
// the tests that load thousands of items spent most of their time there.
func (be *batchEnv) seed(t *testing.T, items ...string) {
	t.Helper()
	ctx := context.Background()
	for chunk := range slices.Chunk(items, 100) {
		// As a write takes its "now" (writeOneAt).
		stamp, done, err := be.e.judgingIn(ctx, "db", "c")
		if err != nil {
			t.Fatal(err)
		}
		err = be.e.updateWriting(ctx, batchRef(""), func(tx storage.Txn) error {
			now, err := be.e.nowIn(ctx, tx, stamp)
			if err != nil {
				return err
			}
			c, err := be.e.loadContainer(tx, "db", "c")
			if err != nil {
				return err
			}
			// Looked up together, as a batch's items are (prefetchPoints).
			bodies := make([]document.Value, len(chunk))
			points := make([]pointAt, len(chunk))
			for i, it := range chunk {
				if bodies[i], err = document.Parse([]byte(it)); err != nil {
					return fmt.Errorf("seed %s: %w", it, err)
				}
				ref := batchRef("")
				ref.PartitionKey, ref.HasKey = c.keyFromBody(bodies[i]), true
				points[i] = pointAt{ref: ref, id: bodies[i].Get("id").Str(), write: true}
			}
			be.e.prefetchPoints(tx, "db", "c", points...)
			for i, it := range chunk {
				p := WriteItemParams{ItemRef: batchRef(""), Mode: ModeCreate, Body: []byte(it)}
				if _, err := be.e.writeItemTx(tx, c, p, bodies[i].Get("id").Str(), bodies[i], now); err != nil {
					return fmt.Errorf("seed %s: %w", it, err)
				}
			}
			return nil
		})
		done()
		if err != nil {
			t.Fatal(err)
		}
	}
}

// run parses ops (a JSON array) and runs them as a batch under key.
func (be *batchEnv) run(t *testing.T, key string, atomic bool, ops string) (*BatchResult, error) {
	t.Helper()
	parsed, err := ParseBatch([]byte(ops))
	if err != nil {
		t.Fatalf("ParseBatch(%s): %v", ops, err)
	}
	return be.e.Batch(context.Background(), BatchParams{ItemRef: batchRef(key), Ops: parsed, Atomic: atomic, ContinueOnError: true})
}

var codeNames = map[Code]string{
	BadRequest: "BadRequest", NotFound: "NotFound", Conflict: "Conflict", PreconditionFailed: "PreconditionFailed",
	RequestEntityTooLarge: "RequestEntityTooLarge", NotModified: "NotModified", FailedDependency: "FailedDependency",
}

// outcomes names what each operation did: its verb on success, its error
// code on failure.
func outcomes(res *BatchResult) string {
	var out []string
	for _, op := range res.Ops {
		switch {
		case op.Err != nil:
			out = append(out, codeNames[op.Err.Code])
		case op.Type == BatchUpsert && op.Created:
			out = append(out, "created")
		case op.Type == BatchUpsert:
			out = append(out, "replaced")
		default:
			out = append(out, map[BatchOpType]string{BatchCreate: "created", BatchReplace: "replaced", BatchRead: "read", BatchDelete: "deleted", BatchPatch: "patched"}[op.Type])
		}
	}
	return strings.Join(out, " ")
}

// state reads the "v" property of each id under key "p": "-" when the
// item is absent.
func (be *batchEnv) state(t *testing.T, ids ...string) string {
	t.Helper()
	var out []string
	for _, id := range ids {
		res, err := be.e.ReadItem(context.Background(), ReadItemParams{ItemRef: batchRef(`["p"]`), ID: id})
		if ErrorCode(err) == NotFound {
			out = append(out, id+"=-")
			continue
		}
		if err != nil {
			t.Fatalf("read %s: %v", id, err)
		}
		doc, err := document.Parse(res.Body)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, id+"="+doc.Get("v").String())
	}
	return strings.Join(out, " ")
}

func TestBatchAtomic(t *testing.T) {
	seed := []string{`{"id":"a","pk":"p","v":1}`, `{"id":"b","pk":"p","v":2}`}
	tests := []struct {
		name     string
		ops      string
		outcomes string
		state    string // of a b c afterwards
	}{
		{"creates", `[{"operationType":"Create","resourceBody":{"id":"c","pk":"p","v":3}}]`,
			"created", "a=1 b=2 c=3"},
		{"every kind", `[
			{"operationType":"Create","resourceBody":{"id":"c","pk":"p","v":3}},
			{"operationType":"Upsert","resourceBody":{"id":"a","pk":"p","v":10}},
			{"operationType":"Replace","id":"b","resourceBody":{"id":"b","pk":"p","v":20}},
			{"operationType":"Read","id":"c"},
			{"operationType":"Patch","id":"c","resourceBody":{"operations":[{"op":"incr","path":"/v","value":1}]}},
			{"operationType":"Delete","id":"a"}]`,
			"created replaced replaced read patched deleted", "a=- b=20 c=4"},
		{"upsert creates", `[{"operationType":"Upsert","resourceBody":{"id":"c","pk":"p","v":3}}]`,
			"created", "a=1 b=2 c=3"},
		{"reads see earlier writes", `[
			{"operationType":"Create","resourceBody":{"id":"c","pk":"p","v":3}},
			{"operationType":"Patch","id":"c","resourceBody":[{"op":"set","path":"/v","value":30}]},
			{"operationType":"Read","id":"c"},
			{"operationType":"Delete","id":"c"},
			{"operationType":"Create","resourceBody":{"id":"c","pk":"p","v":31}}]`,
			"created patched read deleted created", "a=1 b=2 c=31"},
		{"conflict rolls back", `[
			{"operationType":"Create","resourceBody":{"id":"c","pk":"p","v":3}},
			{"operationType":"Upsert","resourceBody":{"id":"a","pk":"p","v":10}},
			{"operationType":"Create","resourceBody":{"id":"b","pk":"p","v":3}},
			{"operationType":"Delete","id":"a"}]`,
			"FailedDependency FailedDependency Conflict FailedDependency", "a=1 b=2 c=-"},
		{"first operation fails", `[
			{"operationType":"Read","id":"zz"},
			{"operationType":"Create","resourceBody":{"id":"c","pk":"p","v":3}}]`,
			"NotFound FailedDependency", "a=1 b=2 c=-"},
		{"a read of a deleted item fails", `[
			{"operationType":"Delete","id":"a"},
			{"operationType":"Read","id":"a"}]`,
			"FailedDependency NotFound", "a=1 b=2 c=-"},
		{"replace of a missing item", `[{"operationType":"Replace","id":"c","resourceBody":{"id":"c","pk":"p"}}]`,
			"NotFound", "a=1 b=2 c=-"},
		{"replace with another id", `[{"operationType":"Replace","id":"a","resourceBody":{"id":"b","pk":"p"}}]`,
			"BadRequest", "a=1 b=2 c=-"},
		{"ifMatch mismatch", `[
			{"operationType":"Upsert","resourceBody":{"id":"c","pk":"p","v":3}},
			{"operationType":"Delete","id":"a","ifMatch":"\"stale\""}]`,
			"FailedDependency PreconditionFailed", "a=1 b=2 c=-"},
		{"false patch condition", `[
			{"operationType":"Patch","id":"a","resourceBody":{"condition":"from c where c.v = 5","operations":[{"op":"set","path":"/v","value":9}]}}]`,
			"PreconditionFailed", "a=1 b=2 c=-"},
		{"true patch condition", `[
			{"operationType":"Patch","id":"a","resourceBody":{"condition":"from c where c.v = 1","operations":[{"op":"set","path":"/v","value":9}]}}]`,
			"patched", "a=9 b=2 c=-"},
		{"bad patch", `[
			{"operationType":"Create","resourceBody":{"id":"c","pk":"p","v":3}},
			{"operationType":"Patch","id":"a","resourceBody":{"operations":[{"op":"replace","path":"/nope","value":9}]}}]`,
			"FailedDependency BadRequest", "a=1 b=2 c=-"},
		{"patch of the partition key", `[
			{"operationType":"Patch","id":"a","resourceBody":[{"op":"set","path":"/pk","value":"q"}]}]`,
			"BadRequest", "a=1 b=2 c=-"},
		{"body under another key", `[
			{"operationType":"Create","resourceBody":{"id":"c","pk":"p","v":3}},
			{"operationType":"Create","resourceBody":{"id":"d","pk":"q"}}]`,
			"FailedDependency BadRequest", "a=1 b=2 c=-"},
		{"body without id", `[{"operationType":"Create","resourceBody":{"pk":"p"}}]`,
			"BadRequest", "a=1 b=2 c=-"},
		{"no body", `[{"operationType":"Upsert"}]`,
			"BadRequest", "a=1 b=2 c=-"},
		{"system properties are ignored", `[{"operationType":"Create","resourceBody":{"id":"c","pk":"p","v":3,"_ts":1,"_etag":"x"}}]`,
			"created", "a=1 b=2 c=3"},
		{"operation keys equal to the batch's", `[{"operationType":"Read","id":"a","partitionKey":"[\"p\"]"}]`,
			"read", "a=1 b=2 c=-"},
		{"if-none-match on a read", `[{"operationType":"Read","id":"a","ifNoneMatch":"*"},{"operationType":"Delete","id":"b"}]`,
			"NotModified deleted", "a=1 b=- c=-"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			be := newBatchEnv(t, "null")
			be.seed(t, seed...)
			res, err := be.run(t, `["p"]`, true, tt.ops)
			if err != nil {
				t.Fatalf("Batch: %v", err)
			}
			if got := outcomes(res); got != tt.outcomes {
				t.Errorf("outcomes %q, want %q", got, tt.outcomes)
			}
			if res.Committed == res.Failed() {
				t.Errorf("Committed %v with Failed %v", res.Committed, res.Failed())
			}
			for i, op := range res.Ops {
				if !op.Failed() && (op.Charge <= 0 || (op.Type != BatchDelete && op.Etag == "")) {
					t.Errorf("operation %d: charge %v, etag %q", i, op.Charge, op.Etag)
				}
				if (op.Type == BatchDelete || op.Err != nil) && op.Body != nil {
					t.Errorf("operation %d: a body %s", i, op.Body)
				}
			}
			if got := be.state(t, "a", "b", "c"); got != tt.state {
				t.Errorf("state %q, want %q", got, tt.state)
			}
		})
	}
}

// TestBatchResults checks what successful operations report: bodies with
// system properties, etags that match the stored items, and the LSN.
func TestBatchResults(t *testing.T) {
	be := newBatchEnv(t, "null")
	be.seed(t, `{"id":"a","pk":"p","v":1}`)
	before, err := be.e.ReadItem(context.Background(), ReadItemParams{ItemRef: batchRef(`["p"]`), ID: "a"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := be.run(t, `["p"]`, true, `[
		{"operationType":"Read","id":"a","ifMatch":"ignored"},
		{"operationType":"Replace","id":"a","ifMatch":`+string(document.AppendString(nil, before.Etag))+`,"resourceBody":{"id":"a","pk":"p","v":2}},
		{"operationType":"Create","resourceBody":{"id":"b","pk":"p"}}]`)
	if err != nil {
		t.Fatal(err)
	}
	if got := outcomes(res); got != "read replaced created" {
		t.Fatalf("outcomes %q", got)
	}
	if res.Ops[0].Etag != before.Etag || string(res.Ops[0].Body) != string(before.Body) {
		t.Errorf("read %s %s, want %s %s", res.Ops[0].Etag, res.Ops[0].Body, before.Etag, before.Body)
	}
	after, err := be.e.ReadItem(context.Background(), ReadItemParams{ItemRef: batchRef(`["p"]`), ID: "a"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Ops[1].Etag != after.Etag || string(res.Ops[1].Body) != string(after.Body) {
		t.Errorf("replace reported %s %s, stored %s %s", res.Ops[1].Etag, res.Ops[1].Body, after.Etag, after.Body)
	}
	doc, _ := document.Parse(res.Ops[2].Body)
	for _, p := range []string{"_rid", "_self", "_etag", "_ts"} {
		if !doc.Get(p).IsDefined() {
			t.Errorf("created item lacks %s: %s", p, res.Ops[2].Body)
		}
	}
	if res.LSN != after.LSN+1 || res.LSN < 3 {
		t.Errorf("batch LSN %d, replace LSN %d", res.LSN, after.LSN)
	}
	if want := res.Ops[0].Charge + res.Ops[1].Charge + res.Ops[2].Charge; res.Charge != want {
		t.Errorf("charge %v, want %v", res.Charge, want)
	}
}

func TestBatchReadOnlyWritesNothing(t *testing.T) {
	be := newBatchEnv(t, "null")
	be.seed(t, `{"id":"a","pk":"p","v":1}`, `{"id":"b","pk":"p","v":2}`)
	for _, ops := range []string{
		`[{"operationType":"Read","id":"a"},{"operationType":"Read","id":"b"}]`,
		`[{"operationType":"Read","id":"a"},{"operationType":"Read","id":"missing"}]`,
	} {
		be.e.floorWrites.Wait() // the clock's floor, recorded in the background
		n := be.store.updates.Load()
		res, err := be.run(t, `["p"]`, true, ops)
		if err != nil {
			t.Fatal(err)
		}
		if got := be.store.updates.Load() - n; got != 0 {
			t.Errorf("%s: %d write transactions", ops, got)
		}
		if res.LSN != 2 {
			t.Errorf("%s: LSN %d, want 2", ops, res.LSN)
		}
	}
}

func TestBatchRefused(t *testing.T) {
	be := newBatchEnv(t, "null")
	many := func(n int) string {
		ops := make([]string, n)
		for i := range ops {
			ops[i] = fmt.Sprintf(`{"operationType":"Create","resourceBody":{"id":"x%d","pk":"p"}}`, i)
		}
		return "[" + strings.Join(ops, ",") + "]"
	}
	tests := []struct {
		name string
		key  string
		ops  string
		code Code
	}{
		{"no operations", `["p"]`, `[]`, BadRequest},
		{"101 operations", `["p"]`, many(101), BadRequest},
		{"no partition key", ``, `[{"operationType":"Read","id":"a"}]`, BadRequest},
		{"an operation under another key", `["p"]`, `[{"operationType":"Read","id":"a"},{"operationType":"Read","id":"a","partitionKey":"[\"q\"]"}]`, BadRequest},
		{"a key of the wrong shape", `["p","q"]`, `[{"operationType":"Read","id":"a"}]`, BadRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := be.run(t, tt.key, true, tt.ops)
			if ErrorCode(err) != tt.code {
				t.Fatalf("error %v, want code %v", err, codeNames[tt.code])
			}
		})
	}
	if strings.Count(be.state(t, "x0", "x99"), "=-") != 2 {
		t.Error("a refused batch wrote")
	}
	res, err := be.run(t, `["p"]`, true, many(100))
	if err != nil || res.Failed() {
		t.Fatalf("100 operations: %v", err)
	}
	if _, err := be.e.Batch(context.Background(), BatchParams{ItemRef: ItemRef{DB: "db", Coll: "nope", HasKey: true, PartitionKey: partition.Key{partition.String("p")}}, Atomic: true,
		Ops: []BatchOp{{Type: BatchRead, ID: "a"}}}); ErrorCode(err) != NotFound {
		t.Errorf("batch on a missing container: %v", err)
	}
}

func TestParseBatch(t *testing.T) {
	ops, err := ParseBatch([]byte(`[
		{"operationType":"create","resourceBody":{"id":"a"}},
		{"operationType":"Patch","id":"a","ifMatch":"\"e\"","partitionKey":"[\"p\",5]","resourceBody":[]},
		{"operationType":"Read","id":"b","ifNoneMatch":"*","partitionKey":["p",5],"ifMatch":null}]`))
	if err != nil {
		t.Fatal(err)
	}
	if len(ops) != 3 || ops[0].Type != BatchCreate || ops[0].HasKey || ops[0].Body.Get("id").Str() != "a" ||
		ops[1].Type != BatchPatch || ops[1].ID != "a" || ops[1].IfMatch != `"e"` || !ops[1].HasKey || ops[1].PartitionKey.String() != `["p",5]` ||
		ops[2].Type != BatchRead || ops[2].IfNoneMatch != "*" || ops[2].PartitionKey.String() != `["p",5]` {
		t.Fatalf("parsed %+v", ops)
	}
	for _, tt := range []struct {
		body string
		code Code
	}{
		{``, BadRequest},
		{`{"operationType":"Read"}`, BadRequest},
		{`[1]`, BadRequest},
		{`[{"id":"a"}]`, BadRequest},
		{`[{"operationType":"Query","id":"a"}]`, BadRequest},
		{`[{"operationType":"Read","id":5}]`, BadRequest},
		{`[{"operationType":"Read","id":"a","partitionKey":"p"}]`, BadRequest},
		{`[{"operationType":"Read","id":"a","partitionKey":5}]`, BadRequest},
		{`[{"operationType":"Read","id":"a"}` + strings.Repeat(" ", MaxBatchBytes) + `]`, RequestEntityTooLarge},
	} {
		if _, err := ParseBatch([]byte(tt.body)); ErrorCode(err) != tt.code {
			t.Errorf("ParseBatch(%.40q): %v, want %s", tt.body, err, codeNames[tt.code])
		}
	}
}

func FuzzParseBatch(f *testing.F) {
	f.Add(`[{"operationType":"Create","resourceBody":{"id":"a","pk":"p"}}]`)
	f.Add(`[{"operationType":"Read","id":"a","partitionKey":"[\"p\"]"}]`)
	f.Fuzz(func(t *testing.T, body string) {
		ops, err := ParseBatch([]byte(body))
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || (e.Code != BadRequest && e.Code != RequestEntityTooLarge) {
				t.Fatalf("ParseBatch(%q): %v", body, err)
			}
			return
		}
		for _, op := range ops {
			if op.Type < BatchCreate || op.Type > BatchPatch {
				t.Fatalf("operation type %d from %q", op.Type, body)
			}
		}
	})
}

// TestBatchSeparate covers non-atomic batches (bulk): each operation
// commits or fails on its own, under its own partition key.
func TestBatchSeparate(t *testing.T) {
	be := newBatchEnv(t, "null")
	be.seed(t, `{"id":"a","pk":"p","v":1}`, `{"id":"q1","pk":"q","v":1}`)
	res, err := be.run(t, ``, false, `[
		{"operationType":"Create","partitionKey":"[\"p\"]","resourceBody":{"id":"c","pk":"p","v":3}},
		{"operationType":"Create","resourceBody":{"id":"a","pk":"p","v":9}},
		{"operationType":"Upsert","resourceBody":{"id":"b","pk":"p","v":2}},
		{"operationType":"Read","id":"q1","partitionKey":"[\"q\"]"},
		{"operationType":"Patch","id":"q1","partitionKey":"[\"q\"]","resourceBody":[{"op":"incr","path":"/v","value":1}]},
		{"operationType":"Delete","id":"a"},
		{"operationType":"Delete","id":"a","partitionKey":"[\"p\"]"},
		{"operationType":"Read","id":"missing","partitionKey":"[\"p\"]"}]`)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := outcomes(res), "created Conflict created read patched BadRequest deleted NotFound"; got != want {
		t.Errorf("outcomes %q, want %q", got, want)
	}
	if got, want := be.state(t, "a", "b", "c"), "a=- b=2 c=3"; got != want {
		t.Errorf("state %q, want %q", got, want)
	}
	q, err := be.e.ReadItem(context.Background(), ReadItemParams{ItemRef: batchRef(`["q"]`), ID: "q1"})
	if err != nil || !strings.Contains(string(q.Body), `"v":2`) {
		t.Errorf("q1 after the patch: %s %v", q.Body, err)
	}
	if res.LSN != 6 {
		t.Errorf("LSN %d, want 6", res.LSN)
	}

	// Without continue-on-error the operations after a failure do not run.
	parsed, err := ParseBatch([]byte(`[
		{"operationType":"Create","resourceBody":{"id":"d","pk":"p","v":1}},
		{"operationType":"Create","resourceBody":{"id":"d","pk":"p","v":2}},
		{"operationType":"Create","resourceBody":{"id":"e","pk":"p"}}]`))
	if err != nil {
		t.Fatal(err)
	}
	res, err = be.e.Batch(context.Background(), BatchParams{ItemRef: batchRef(""), Ops: parsed})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := outcomes(res), "created Conflict FailedDependency"; got != want {
		t.Errorf("outcomes %q, want %q", got, want)
	}
	if got, want := be.state(t, "d", "e"), "d=1 e=-"; got != want {
		t.Errorf("state %q, want %q", got, want)
	}
}

// An operation of a bulk batch that fails after it has written (a unique
// key taken: its LSN reserved, its record written) is taken back alone: the
// operations around it commit, no LSN is spent on it, and the indexes
// agree with the items. Over PostgreSQL the batch runs in one
// transaction, each operation behind a savepoint.
func TestBulkFailureTakenBackAlone(t *testing.T) {
	be := newBatchEnvWith(t, `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2},
		"uniqueKeyPolicy":{"uniqueKeys":[{"paths":["/u"]}]}}`)
	be.seed(t, `{"id":"a","pk":"p","u":0,"v":1}`)
	res, err := be.run(t, ``, false, `[
		{"operationType":"Create","resourceBody":{"id":"x","pk":"p","u":1,"v":1}},
		{"operationType":"Create","resourceBody":{"id":"y","pk":"p","u":1,"v":2}},
		{"operationType":"Upsert","resourceBody":{"id":"a","pk":"p","u":1,"v":3}},
		{"operationType":"Create","resourceBody":{"id":"z","pk":"p","u":2,"v":4}}]`)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := outcomes(res), "created Conflict Conflict created"; got != want {
		t.Errorf("outcomes %q, want %q", got, want)
	}
	if got, want := be.state(t, "a", "x", "y", "z"), "a=1 x=1 y=- z=4"; got != want {
		t.Errorf("state %q, want %q", got, want)
	}
	if res.LSN != 3 {
		t.Errorf("LSN %d, want 3: the seed's, x's and z's", res.LSN)
	}
	if _, err := be.e.CheckIndexes(context.Background()); err != nil {
		t.Error(err)
	}
}

// TestBatchTTL checks ttl.md inside batches: expired items are absent to
// every operation, creating over one succeeds, writes restart the
// countdown and ttl is validated.
func TestBatchTTL(t *testing.T) {
	tests := []struct {
		name     string
		ops      string
		outcomes string
		// state of a (ttl 10) and b (inheriting the default 20), both
		// written at t0, read at t0+later.
		later time.Duration
		state string
	}{
		{"an expired item reads 404", `[{"operationType":"Read","id":"a"}]`,
			"NotFound", 0, "a=- b=2"},
		{"replace of an expired item", `[{"operationType":"Replace","id":"a","resourceBody":{"id":"a","pk":"p"}}]`,
			"NotFound", 0, "a=- b=2"},
		{"patch of an expired item", `[{"operationType":"Patch","id":"a","resourceBody":[{"op":"set","path":"/v","value":5}]}]`,
			"NotFound", 0, "a=- b=2"},
		{"delete of an expired item", `[{"operationType":"Delete","id":"a"}]`,
			"NotFound", 0, "a=- b=2"},
		{"create over an expired item", `[{"operationType":"Create","resourceBody":{"id":"a","pk":"p","v":7}},{"operationType":"Read","id":"a"}]`,
			"created read", 19 * time.Second, "a=7 b=-"},
		{"upsert over an expired item creates", `[{"operationType":"Upsert","resourceBody":{"id":"a","pk":"p","v":7}}]`,
			"created", 0, "a=7 b=2"},
		{"a write restarts the countdown", `[{"operationType":"Patch","id":"b","resourceBody":[{"op":"set","path":"/v","value":3}]}]`,
			"patched", 19 * time.Second, "a=- b=3"},
		{"the countdown without the write", `[{"operationType":"Read","id":"b"}]`,
			"read", 19 * time.Second, "a=- b=-"},
		{"a new ttl takes effect", `[{"operationType":"Upsert","resourceBody":{"id":"b","pk":"p","v":3,"ttl":5}}]`,
			"replaced", 5 * time.Second, "a=- b=-"},
		{"an invalid ttl fails the batch", `[{"operationType":"Upsert","resourceBody":{"id":"c","pk":"p"}},{"operationType":"Upsert","resourceBody":{"id":"b","pk":"p","ttl":0}}]`,
			"FailedDependency BadRequest", 0, "a=- b=2"},
		{"a patched ttl is validated", `[{"operationType":"Patch","id":"b","resourceBody":[{"op":"set","path":"/ttl","value":-5}]}]`,
			"BadRequest", 0, "a=- b=2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			be := newBatchEnv(t, "20")
			be.seed(t, `{"id":"a","pk":"p","v":1,"ttl":10}`, `{"id":"b","pk":"p","v":2}`)
			be.clock.Advance(10 * time.Second) // a has just expired
			res, err := be.run(t, `["p"]`, true, tt.ops)
			if err != nil {
				t.Fatalf("Batch: %v", err)
			}
			if got := outcomes(res); got != tt.outcomes {
				t.Errorf("outcomes %q, want %q", got, tt.outcomes)
			}
			for _, op := range res.Ops {
				if op.Body == nil {
					continue
				}
				doc, _ := document.Parse(op.Body)
				if op.Type != BatchRead && doc.Get("_ts").Int() != batchT0.Unix()+10 {
					t.Errorf("_ts %s, want the batch's now", doc.Get("_ts"))
				}
			}
			be.clock.Advance(tt.later)
			if got := be.state(t, "a", "b"); got != tt.state {
				t.Errorf("state %q, want %q", got, tt.state)
			}
		})
	}
}

// FuzzBatch runs arbitrary batches, atomic and not, against a container
// with TTL on: whatever they hold, every failure is a client error, never
// an internal one, and an atomic batch either commits or reports a cause.
func FuzzBatch(f *testing.F) {
	for _, s := range []string{
		`[{"operationType":"Create","resourceBody":{"id":"c","pk":"p","v":3}},{"operationType":"Read","id":"c"}]`,
		`[{"operationType":"Upsert","resourceBody":{"id":"a","pk":"p","ttl":5}},{"operationType":"Delete","id":"b"}]`,
		`[{"operationType":"Replace","id":"a","ifMatch":"*","resourceBody":{"id":"a","pk":"p"}}]`,
		`[{"operationType":"Patch","id":"a","resourceBody":{"condition":"from c where c.v = 1","operations":[{"op":"move","from":"/v","path":"/w"}]}}]`,
		`[{"operationType":"Read","id":"a","partitionKey":"[\"q\"]","ifNoneMatch":"*"}]`,
		`[{"operationType":"Create","resourceBody":{"id":"c","pk":"p","u":1}},{"operationType":"Upsert","resourceBody":{"id":"a","pk":"p","u":1}},{"operationType":"Create","resourceBody":{"id":"d","pk":"p","u":2}}]`,
	} {
		f.Add(s, true)
		f.Add(s, false)
	}
	f.Fuzz(func(t *testing.T, body string, atomic bool) {
		ops, err := ParseBatch([]byte(body))
		if err != nil {
			return
		}
		// A unique key, so that operations fail after they have written
		// (a bulk batch takes each back to its savepoint).
		be := newBatchEnvWith(t, `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2},"defaultTtl":20,
			"uniqueKeyPolicy":{"uniqueKeys":[{"paths":["/u"]}]}}`)
		be.seed(t, `{"id":"a","pk":"p","v":1,"ttl":10}`, `{"id":"b","pk":"p","v":2,"u":0}`)
		be.clock.Advance(5 * time.Second)
		res, err := be.e.Batch(context.Background(), BatchParams{ItemRef: batchRef(`["p"]`), Ops: ops, Atomic: atomic, ContinueOnError: true})
		var e *Error
		if err != nil {
			if !errors.As(err, &e) || e.Code == Internal {
				t.Fatalf("Batch(%s): %v", body, err)
			}
			return
		}
		causes := 0
		for i, op := range res.Ops {
			if op.Err != nil && op.Err.Code == Internal {
				t.Fatalf("operation %d of %s: internal error %v", i, body, op.Err)
			}
			if op.Failed() && op.Err.Code != FailedDependency {
				causes++
			}
		}
		if atomic && res.Committed == (causes > 0) || atomic && causes > 1 {
			t.Fatalf("atomic batch %s: committed %v with %d failures", body, res.Committed, causes)
		}
		if _, err := be.e.CheckIndexes(context.Background()); err != nil {
			t.Fatalf("after %s (atomic %v): %v", body, atomic, err)
		}
	})
}

// A batch whose documents would make a response past 4 MB is refused with
// 413/3402 rather than built: an atomic one whole, before it commits; a
// bulk one from the operation that does not fit.
func TestBatchResponseBounded(t *testing.T) {
	be := newBatchEnv(t, "-1")
	big := strings.Repeat("x", 1_500_000)
	be.seed(t, `{"id":"big","pk":"p","s":"`+big+`"}`)
	reads := `{"operationType":"Read","id":"big"},{"operationType":"Read","id":"big"},{"operationType":"Read","id":"big"}`

	_, err := be.run(t, `["p"]`, true, `[{"operationType":"Create","resourceBody":{"id":"a","pk":"p","v":1}},`+reads+`]`)
	var ee *Error
	if !errors.As(err, &ee) || ee.Code != RequestEntityTooLarge || ee.SubStatus != SubResponseTooLarge {
		t.Fatalf("atomic batch of three 1.5 MB reads: %v, want 413/3402", err)
	}
	if got := be.state(t, "a"); got != "a=-" {
		t.Fatalf("the refused atomic batch committed its create: %s", got)
	}

	res, err := be.run(t, `["p"]`, false, `[{"operationType":"Create","resourceBody":{"id":"a","pk":"p","v":1}},`+reads+`,{"operationType":"Create","resourceBody":{"id":"b","pk":"p","v":2}}]`)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := outcomes(res), "created read read RequestEntityTooLarge RequestEntityTooLarge"; got != want {
		t.Fatalf("bulk batch: %s, want %s", got, want)
	}
	if got := be.state(t, "a", "b"); got != "a=1 b=-" {
		t.Fatalf("bulk batch left %s", got)
	}
}

// countingBudget admits its first n operations and refuses the rest,
// each refusal told to wait 100 ms longer than the one before, as the
// limiter spaces refused requests.
type countingBudget struct{ n, asked int }

func (b *countingBudget) Admit() (bool, time.Duration) {
	b.asked++
	if b.asked <= b.n {
		return true, 0
	}
	return false, time.Duration(b.asked-b.n) * 100 * time.Millisecond
}

func (b *countingBudget) Spend(float64) {}

// The operations of one bulk request refused for throughput are all told
// the first refusal's wait: the JavaScript SDK sleeps through each in
// turn, and growing waits summed to minutes for a few hundred operations.
func TestBulkThrottledOperationsWaitAlike(t *testing.T) {
	be := newBatchEnv(t, "null")
	ops := make([]BatchOp, 8)
	for i := range ops {
		v, err := document.Parse([]byte(fmt.Sprintf(`{"id":"b%d","pk":"p"}`, i)))
		if err != nil {
			t.Fatal(err)
		}
		ops[i] = BatchOp{Type: BatchCreate, Body: v}
	}
	res, err := be.e.Batch(context.Background(), BatchParams{ItemRef: batchRef(`["p"]`), Ops: ops, Budget: &countingBudget{n: 3}, ContinueOnError: true})
	if err != nil {
		t.Fatal(err)
	}
	for i, op := range res.Ops {
		switch {
		case i < 3 && op.Failed():
			t.Errorf("operation %d: %v, want it run", i, op.Err)
		case i >= 3 && (ErrorCode(op.Err) != TooManyRequests || op.RetryAfter != 100*time.Millisecond):
			t.Errorf("operation %d: %v, retry after %v; want 429 after 100ms", i, op.Err, op.RetryAfter)
		}
	}
}
