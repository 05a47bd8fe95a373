package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mayfly-db/mayfly/internal/query/plan"
	"github.com/mayfly-db/mayfly/internal/storage"
	"github.com/mayfly-db/mayfly/internal/storage/teststore"
)

// tickClock is a clock that moves on by step every time it is read once
// armed, and can act on its n-th read: a query's page time then runs out,
// or its context is cancelled, after a counted number of looks at the
// clock, however fast or slow the machine is.
type tickClock struct {
	mu     sync.Mutex
	now    time.Time
	step   time.Duration
	armed  bool
	reads  int
	onRead func(n int)
}

func (c *tickClock) Now() time.Time {
	c.mu.Lock()
	now := c.now
	var hook func(int)
	n := 0
	if c.armed {
		c.reads++
		n = c.reads
		c.now = c.now.Add(c.step)
		hook = c.onRead
	}
	c.mu.Unlock()
	if hook != nil {
		hook(n)
	}
	return now
}

// After never fires: nothing in these tests waits on the clock.
func (c *tickClock) After(time.Duration) <-chan time.Time { return make(chan time.Time) }

func (c *tickClock) arm(step time.Duration, onRead func(n int)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.armed, c.step, c.reads, c.onRead = true, step, 0, onRead
}

func (c *tickClock) readCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.reads
}

// newLimitsEngine is an engine on Pebble in a temporary directory with
// database "db" and container "c" partitioned on /pk, and the items
// given created in it.
func newLimitsEngine(t *testing.T, cfg Config, items ...string) *Engine {
	t.Helper()
	if cfg.Store == nil {
		cfg.Store = openLimitsStore(t)
	}
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	createDBAndContainer(t, e, `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2}}`)
	for i := 0; i < len(items); i += MaxBatchOps {
		var ops []BatchOp
		for _, it := range items[i:min(i+MaxBatchOps, len(items))] {
			ops = append(ops, BatchOp{Type: BatchCreate, Body: batchJSON(t, it)})
		}
		res, err := e.Batch(ctx, BatchParams{ItemRef: batchRef(`["a"]`), Ops: ops, Atomic: true})
		if err != nil || res.Failed() {
			t.Fatalf("seed: %v %+v", err, res)
		}
	}
	return e
}

// openLimitsStore opens a durable store (teststore: Pebble in a temporary
// directory, or PostgreSQL).
func openLimitsStore(t *testing.T) storage.Store {
	t.Helper()
	s, _ := teststore.OpenDurable(t)
	t.Cleanup(func() { s.Close() })
	return s
}

// arrayItems makes n items under key "a", each with an array of size
// numbers in "a" and its ordinal in "n".
func arrayItems(n, size int) []string {
	var arr strings.Builder
	for i := 0; i < size; i++ {
		if i > 0 {
			arr.WriteByte(',')
		}
		fmt.Fprint(&arr, i)
	}
	var out []string
	for i := 0; i < n; i++ {
		out = append(out, fmt.Sprintf(`{"id":"%d","pk":"a","n":%d,"a":[%s]}`, i, i, arr.String()))
	}
	return out
}

// heavyFilter costs about four evaluation steps per element of c.a: a
// look at the clock every 250 elements.
const heavyFilter = "SELECT c.id FROM c WHERE ARRAY_LENGTH(ARRAY(SELECT VALUE x FROM x IN c.a WHERE x >= 0)) > 0"

// A page's evaluation time is the request's, not each document's: when
// it runs out the page ends early with a continuation at the document it
// was reading, and the following pages go on from there, so the query is
// drained whole, in order, in bounded pages.
func TestQueryPageEndsWhenItsTimeRunsOut(t *testing.T) {
	const n = 40
	var up, down []string
	for i := 0; i < n; i++ {
		up, down = append(up, fmt.Sprint(i)), append(down, fmt.Sprint(n-1-i))
	}
	for _, tc := range []struct {
		name, query string
		want        []string
		stream      bool
	}{
		{"filter", heavyFilter, up, false},
		// ORDER BY on an indexed path without TOP is the ordered stream:
		// ascending, a scan for documents without the property, then
		// the index walk; descending, the walk first.
		{"ordered stream", heavyFilter + " ORDER BY c.n", up, true},
		{"ordered stream descending", heavyFilter + " ORDER BY c.n DESC", down, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := &tickClock{now: batchT0}
			e := newLimitsEngine(t, Config{Clock: clk, QueryPageTime: 4 * time.Second}, arrayItems(n, 500)...)
			clk.arm(time.Second, nil)
			var ids []string
			cont := ""
			pages, short := 0, 0
			for {
				page, err := e.QueryItems(context.Background(), QueryParams{ItemRef: batchRef(`["a"]`), Query: tc.query, MaxItemCount: 3, Continuation: cont})
				if err != nil {
					t.Fatalf("page %d: %v", pages, err)
				}
				if pages == 0 && tc.stream && (page.Plan == nil || page.Plan.Chosen.Access != plan.OrderedStream) {
					t.Fatalf("the plan is not the ordered stream: %+v", page.Plan)
				}
				pages++
				for _, it := range page.Items {
					var row struct{ ID string }
					if err := json.Unmarshal(it, &row); err != nil {
						t.Fatal(err)
					}
					ids = append(ids, row.ID)
				}
				if cont = page.Continuation; cont == "" {
					break
				}
				if len(page.Items) < 3 {
					short++
				}
				if pages > 10*n {
					t.Fatal("the query makes no progress")
				}
			}
			if short == 0 {
				t.Errorf("no page of %d was cut short by its time", pages)
			}
			if got, want := strings.Join(ids, " "), strings.Join(tc.want, " "); got != want {
				t.Errorf("rows over %d pages: %s, want %s", pages, got, want)
			}
		})
	}
}

// A page that cannot end early (its first document alone outlasts the
// page time, or the query sorts, groups or aggregates) fails with 408
// rather than running on.
func TestQueryTimesOutWhenItCannotEndEarly(t *testing.T) {
	for _, tc := range []struct {
		name  string
		items []string
		query string
	}{
		{"one document", arrayItems(1, 20000), heavyFilter},
		{"aggregate", arrayItems(6, 1000), "SELECT VALUE COUNT(1) FROM c WHERE ARRAY_LENGTH(ARRAY(SELECT VALUE x FROM x IN c.a WHERE x >= 0)) > 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := &tickClock{now: batchT0}
			e := newLimitsEngine(t, Config{Clock: clk, QueryPageTime: 5 * time.Second}, tc.items...)
			clk.arm(time.Second, nil)
			_, err := e.QueryItems(context.Background(), QueryParams{ItemRef: batchRef(`["a"]`), Query: tc.query})
			if ErrorCode(err) != RequestTimeout {
				t.Fatalf("err %v (code %d), want RequestTimeout", err, ErrorCode(err))
			}
		})
	}
}

// A query stops soon after its request's context is cancelled: the
// evaluation looks at the context between its looks at the clock, so
// once the clock's third read cancels the context it is not read again.
func TestQueryStopsWhenCancelled(t *testing.T) {
	clk := &tickClock{now: batchT0}
	e := newLimitsEngine(t, Config{Clock: clk, QueryPageTime: time.Hour}, arrayItems(6, 1000)...)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	clk.arm(0, func(n int) {
		if n == 3 {
			cancel()
		}
	})
	_, err := e.QueryItems(ctx, QueryParams{ItemRef: batchRef(`["a"]`), Query: heavyFilter})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
	if n := clk.readCount(); n > 4 {
		t.Errorf("the clock was read %d times; the query went on after it was cancelled at the third", n)
	}
}

// The rows JOINs make from one document are bounded: a cross product of
// three 50-element arrays (125,000 rows) is refused, not built.
func TestJoinFanOutRefused(t *testing.T) {
	e := newLimitsEngine(t, Config{}, arrayItems(1, 50)...)
	_, err := e.QueryItems(context.Background(), QueryParams{ItemRef: batchRef(`["a"]`),
		Query: "SELECT VALUE 1 FROM c JOIN x IN c.a JOIN y IN c.a JOIN z IN c.a"})
	if ErrorCode(err) != BadRequest || !strings.Contains(err.Error(), "JOINs") {
		t.Fatalf("err %v, want 400 refusing the JOINs' rows", err)
	}
}

// padItems makes n items under key "a", each carrying about 2 KB.
func padItems(n int) []string {
	pad := strings.Repeat("x", 2000)
	var out []string
	for i := 0; i < n; i++ {
		out = append(out, fmt.Sprintf(`{"id":"%d","pk":"a","n":%d,"one":[1],"pad":"%s%d"}`, i, i, pad, i))
	}
	return out
}

// An ORDER BY the index does not serve (c._ts) is sorted in memory: a
// page holds the rows it returns, at most the advertised
// queryMaxInMemorySortDocumentCount (500), and is refused past that. Its
// pages go on from the place of the last row in the order, not from an
// offset: pages of 100 reach the 600th row, each holding 101 rows, where
// an offset's pages would hold the rows before them too and page 5 would
// be refused; so is a DISTINCT whose repeats tie with each other.
func TestInMemorySortLimit(t *testing.T) {
	e := newLimitsEngine(t, Config{MaxSortRows: 500}, padItems(600)...)
	ctx := context.Background()
	q := func(text string, max int) (*FeedPage, error) {
		return e.QueryItems(ctx, QueryParams{ItemRef: batchRef(`["a"]`), Query: text, MaxItemCount: max})
	}
	if page, err := q("SELECT c.id FROM c ORDER BY c._ts", 10); err != nil || len(page.Items) != 10 || page.Continuation == "" {
		t.Fatalf("a page of 10: %v", err)
	}
	if page, err := q("SELECT TOP 20 c.id FROM c ORDER BY c._ts DESC", -1); err != nil || len(page.Items) != 20 {
		t.Fatalf("TOP 20: %v", err)
	}
	_, err := q("SELECT c.id FROM c ORDER BY c._ts", -1)
	if ErrorCode(err) != BadRequest || !strings.Contains(err.Error(), "sorted in memory") {
		t.Fatalf("sorting 600 rows for a page of 1000: err %v, want 400", err)
	}
	for _, tc := range []struct {
		text  string
		first int // the id of the first row; the rest follow one by one
		rows  int
	}{
		// Every _ts is the same: ties keep the items' order, backwards
		// under DESC.
		{"SELECT VALUE c.id FROM c ORDER BY c._ts", 0, 600},
		{"SELECT VALUE c.id FROM c ORDER BY c._ts DESC", 599, 600},
		{"SELECT VALUE c.id FROM c ORDER BY c._ts OFFSET 150 LIMIT 420", 150, 420},
		{"SELECT TOP 550 VALUE c.id FROM c ORDER BY c._ts DESC", 599, 550},
		// A DISTINCT whose repeats tie: the form the SDKs page a
		// DISTINCT with. Over more rows than the bound it was refused
		// on every page, holding every row.
		{"SELECT DISTINCT VALUE c.n FROM c ORDER BY c.n DESC", 599, 600},
		{"SELECT DISTINCT VALUE c.n FROM c ORDER BY c.n OFFSET 150 LIMIT 420", 150, 420},
	} {
		var ids []string
		cont := ""
		for range 20 {
			page, err := e.QueryItems(ctx, QueryParams{ItemRef: batchRef(`["a"]`), Query: tc.text, MaxItemCount: 100, Continuation: cont})
			if err != nil {
				t.Fatalf("%s: page %d: %v", tc.text, len(ids)/100+1, err)
			}
			for _, it := range page.Items {
				ids = append(ids, strings.Trim(string(it), `"`))
			}
			if cont = page.Continuation; cont == "" {
				break
			}
		}
		if len(ids) != tc.rows {
			t.Fatalf("%s: %d rows, want %d", tc.text, len(ids), tc.rows)
		}
		step := 1
		if strings.Contains(tc.text, "DESC") {
			step = -1
		}
		for i, id := range ids {
			if want := strconv.Itoa(tc.first + i*step); id != want {
				t.Fatalf("%s: row %d is item %s, want %s", tc.text, i, id, want)
			}
		}
	}
}

// The state of ORDER BY, DISTINCT and GROUP BY is counted against the
// request's memory: an ORDER BY with TOP holds only the rows that can be
// among its first, and a DISTINCT only one page of distinct rows, well
// within a bound that the whole scope's rows exceed; DISTINCT and GROUP
// BY that need more than the bound are refused.
func TestQueryStateMemoryBounded(t *testing.T) {
	e := newLimitsEngine(t, Config{QueryMemory: 300 << 10}, padItems(400)...)
	ctx := context.Background()
	q := func(text string) (*FeedPage, error) {
		return e.QueryItems(ctx, QueryParams{ItemRef: batchRef(`["a"]`), Query: text, MaxItemCount: -1})
	}
	// The JOIN keeps the index walk from serving the ORDER BY.
	page, err := q("SELECT TOP 5 c.id, c.pad FROM c JOIN x IN c.one ORDER BY c.n DESC")
	if err != nil || len(page.Items) != 5 {
		t.Fatalf("TOP 5 ORDER BY over 800 KB of rows: %v", err)
	}
	if !strings.HasPrefix(string(page.Items[0]), `{"id":"399"`) || !strings.HasPrefix(string(page.Items[4]), `{"id":"395"`) {
		t.Errorf("TOP 5 DESC is %.12s … %.12s, want items 399 to 395", page.Items[0], page.Items[4])
	}
	// DISTINCT VALUE of an indexed path without ORDER BY comes in the
	// value's order, through its index, a page at a time: it holds one
	// page of distinct rows, and the next page goes on from there.
	page, err = e.QueryItems(ctx, QueryParams{ItemRef: batchRef(`["a"]`), Query: "SELECT DISTINCT VALUE c.pad FROM c", MaxItemCount: 3})
	if err != nil || len(page.Items) != 3 || page.Continuation == "" {
		t.Fatalf("a page of 3 DISTINCT rows over 800 KB: %v", err)
	}
	if !strings.HasSuffix(string(page.Items[2]), `x10"`) {
		t.Errorf("the third DISTINCT row ends %q, want item 10's", page.Items[2][len(page.Items[2])-4:])
	}
	page, err = e.QueryItems(ctx, QueryParams{ItemRef: batchRef(`["a"]`), Query: "SELECT DISTINCT VALUE c.pad FROM c", MaxItemCount: 3, Continuation: page.Continuation})
	if err != nil || len(page.Items) != 3 || !strings.HasSuffix(string(page.Items[0]), `x100"`) {
		t.Fatalf("the second page of 3 DISTINCT rows: %v, want item 100's first", err)
	}
	for _, text := range []string{"SELECT DISTINCT c.pad FROM c", "SELECT c.pad, COUNT(1) AS n FROM c GROUP BY c.pad"} {
		if _, err := q(text); ErrorCode(err) != BadRequest || !strings.Contains(err.Error(), "memory") {
			t.Errorf("%s: err %v, want 400 for its memory", text, err)
		}
	}
}

// lockWatch is a store that knows when a write transaction's function is
// running, which is when the store's write lock is held.
type lockWatch struct {
	storage.Store
	inside atomic.Int32
}

func (s *lockWatch) Update(ctx context.Context, fn func(tx storage.Txn) error) error {
	return s.Store.Update(ctx, func(tx storage.Txn) error {
		s.inside.Add(1)
		defer s.inside.Add(-1)
		return fn(tx)
	})
}

// A patch's condition, alone or in a batch, is judged before the store's
// write lock is taken: while it is being evaluated (seen from the
// evaluation's own looks at the clock) no write transaction is open, and
// a create in another database goes through at that very moment. The
// patch then commits as judged.
func TestPatchConditionJudgedOutsideTheWriteLock(t *testing.T) {
	const cond = "FROM c WHERE ARRAY_LENGTH(ARRAY(SELECT VALUE x FROM x IN c.a WHERE x >= 0)) > 0"
	for _, tc := range []struct {
		name  string
		patch func(e *Engine) ([]byte, error)
	}{
		{"batch", func(e *Engine) ([]byte, error) {
			ops := []BatchOp{
				{Type: BatchPatch, ID: "0", Body: batchJSON(t, `{"condition":"`+cond+`","operations":[{"op":"set","path":"/flag","value":true}]}`)},
				{Type: BatchRead, ID: "0"},
			}
			res, err := e.Batch(context.Background(), BatchParams{ItemRef: batchRef(`["a"]`), Ops: ops, Atomic: true})
			if err != nil || res.Failed() {
				return nil, fmt.Errorf("batch: %v %+v", err, res)
			}
			return res.Ops[1].Body, nil
		}},
		{"patch", func(e *Engine) ([]byte, error) {
			ops, _, err := ParsePatch([]byte(`{"operations":[{"op":"set","path":"/flag","value":true}]}`))
			if err != nil {
				return nil, err
			}
			res, err := e.PatchItem(context.Background(), PatchItemParams{ItemRef: batchRef(`["a"]`), ID: "0", Ops: ops, Condition: cond})
			if err != nil {
				return nil, err
			}
			return res.Body, nil
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkJudgedOutsideTheLock(t, tc.patch)
		})
	}
}

func checkJudgedOutsideTheLock(t *testing.T, patch func(e *Engine) ([]byte, error)) {
	clk := &tickClock{now: batchT0}
	w := &lockWatch{Store: openLimitsStore(t)}
	e := newLimitsEngine(t, Config{Clock: clk, Store: w, QueryPageTime: time.Hour}, arrayItems(1, 5000)...)
	ctx := context.Background()
	if _, err := e.CreateDatabase(ctx, batchJSON(t, `{"id":"db2"}`), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := e.CreateContainer(ctx, "db2", batchJSON(t, `{"id":"other","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2}}`), nil); err != nil {
		t.Fatal(err)
	}
	var (
		reached   bool
		creating  bool
		underLock bool
		createErr error
	)
	clk.arm(0, func(n int) {
		// Only the evaluation's own looks at the clock count (writes
		// read it too, for the change feed's wall time).
		if creating || !strings.Contains(string(debug.Stack()), "eval.(*Budget).Check") {
			return
		}
		if w.inside.Load() > 0 {
			underLock = true
			return // a create now would wait for the batch: do not deadlock
		}
		if !reached {
			reached, creating = true, true
			defer func() { creating = false }()
			_, createErr = e.WriteItem(ctx, WriteItemParams{ItemRef: ItemRef{DB: "db2", Coll: "other"}, Mode: ModeCreate, Body: []byte(`{"id":"y","pk":"b"}`)})
		}
	})
	body, err := patch(e)
	switch {
	case err != nil:
		t.Fatal(err)
	case !reached:
		t.Fatal("the condition's evaluation never looked at the clock")
	case underLock:
		t.Fatal("the condition was evaluated while the store's write lock was held")
	case createErr != nil:
		t.Fatalf("create in another database during the evaluation: %v", createErr)
	}
	if !strings.Contains(string(body), `"flag":true`) {
		t.Errorf("the item after the patch is %.80s, want it patched", body)
	}
}
