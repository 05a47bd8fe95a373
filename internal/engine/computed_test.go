package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/mayfly-db/mayfly/internal/clock"
	"github.com/mayfly-db/mayfly/internal/document"
	"github.com/mayfly-db/mayfly/internal/query/plan"
	"github.com/mayfly-db/mayfly/internal/storage/teststore"
)

const computedDefs = `"computedProperties":[
	{"name":"cp_lower","query":"SELECT VALUE LOWER(c.name) FROM c"},
	{"name":"cp_twice","query":"SELECT VALUE r.n * 2 FROM r"},
	{"name":"shadow","query":"SELECT VALUE CONCAT(root.name, '!') FROM root"}]`

// computedEnv is a container of 40 items with the three definitions above,
// over ranges ranges; order names the index policy's included paths.
func computedEnv(t *testing.T, ranges int, included string) *Engine {
	t.Helper()
	clk := clock.NewManual(batchT0)
	e, err := New(Config{Store: teststore.Open(t), Clock: clk, Partitions: ranges})
	if err != nil {
		t.Fatal(err)
	}
	createDBAndContainer(t, e, `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2},`+computedDefs+`,
		"indexingPolicy":{"includedPaths":[`+included+`]}}`)
	be := &batchEnv{e: e, clock: clk}
	names := []string{"Alpha", "ALPHA", "beta", "Gamma", "gamma"}
	for i := range 40 {
		item := fmt.Sprintf(`{"id":"i%02d","pk":"p%d","name":%q,"n":%d,"tags":["x",%q],"shadow":"stored"}`,
			i, i%7, names[i%len(names)], i%9, strings.ToLower(names[(i+1)%len(names)]))
		if i%10 == 3 {
			item = fmt.Sprintf(`{"id":"i%02d","pk":"p%d"}`, i, i%7) // no name, no n
		}
		be.seed(t, item)
	}
	return e
}

// A query reads a computed property as the value its definition gives the
// item, wherever it names it through the FROM alias: in WHERE, SELECT,
// GROUP BY, ORDER BY (when the policy indexes it) and subqueries, by
// member or by index, whatever alias its definition used, and over a
// stored property of the same name. SELECT * returns the item as stored.
func TestComputedProperties(t *testing.T) {
	for _, ranges := range []int{1, 4} {
		e := computedEnv(t, ranges, `{"path":"/*"},{"path":"/cp_lower/?"}`)
		all := parseItems(t, drainRows(t, e, QueryParams{ItemRef: batchRef(""), CrossPartition: true, Query: "SELECT * FROM c"}, nil))
		if len(all) != 40 {
			t.Fatalf("ranges %d: %d items", ranges, len(all))
		}
		lower := func(d document.Value) document.Value {
			if n := d.Get("name"); n.Kind() == document.String {
				return document.Str(strings.ToLower(n.Str()))
			}
			return document.Undef
		}
		for _, d := range all {
			if d.Get("cp_lower").IsDefined() || d.Get("shadow").Str() != "stored" && d.Get("name").IsDefined() {
				t.Fatalf("SELECT * returned %s", d)
			}
		}
		ids := func(q string, whole bool) []string {
			t.Helper()
			var out []string
			for _, r := range parseItems(t, drainRows(t, e, QueryParams{ItemRef: batchRef(""), CrossPartition: true, Whole: whole, Query: q}, nil)) {
				out = append(out, r.Get("id").Str())
			}
			return out
		}
		want := func(keep func(d document.Value) bool) []string {
			var out []string
			for _, d := range all {
				if keep(d) {
					out = append(out, d.Get("id").Str())
				}
			}
			slices.Sort(out)
			return out
		}
		sorted := func(s []string) []string { slices.Sort(s); return s }
		for _, tc := range []struct {
			query string
			keep  func(d document.Value) bool
		}{
			{`SELECT c.id FROM c WHERE c.cp_lower = "alpha"`, func(d document.Value) bool { return lower(d).Str() == "alpha" }},
			{`SELECT c.id FROM c WHERE c["cp_lower"] = "gamma"`, func(d document.Value) bool { return lower(d).Str() == "gamma" }},
			{`SELECT c.id FROM c WHERE c.cp_twice >= 10`, func(d document.Value) bool { return d.Get("n").IsDefined() && d.Get("n").Int()*2 >= 10 }},
			{`SELECT r.id FROM r WHERE IS_DEFINED(r.cp_twice) = false`, func(d document.Value) bool { return !d.Get("n").IsDefined() }},
			{`SELECT c.id FROM c WHERE c.shadow = "beta!"`, func(d document.Value) bool { return lower(d).Str() == "beta" }},
			{`SELECT c.id FROM c WHERE EXISTS(SELECT VALUE t FROM t IN c.tags WHERE t = c.cp_lower)`, func(d document.Value) bool {
				return slices.ContainsFunc(d.Get("tags").Array(), func(v document.Value) bool { return document.Equal(v, lower(d)) })
			}},
			// A subquery that binds the alias again reads its own.
			{`SELECT c.id FROM c WHERE EXISTS(SELECT VALUE c FROM c IN c.tags WHERE c = "beta")`, func(d document.Value) bool {
				return slices.ContainsFunc(d.Get("tags").Array(), func(v document.Value) bool { return v.Str() == "beta" })
			}},
		} {
			if got, w := sorted(ids(tc.query, false)), want(tc.keep); !slices.Equal(got, w) {
				t.Errorf("ranges %d: %s:\n got %v\nwant %v", ranges, tc.query, got, w)
			}
		}

		rows := parseItems(t, drainRows(t, e, QueryParams{ItemRef: batchRef(""), CrossPartition: true,
			Query: `SELECT c.id, c.cp_lower, c.cp_twice AS twice, c.shadow FROM c WHERE c.id = "i01"`}, nil))
		if len(rows) != 1 || rows[0].String() != `{"id":"i01","cp_lower":"alpha","twice":2,"shadow":"ALPHA!"}` {
			t.Errorf("ranges %d: projection %v", ranges, rows)
		}

		var order []string
		for _, r := range parseItems(t, drainRows(t, e, QueryParams{ItemRef: batchRef(""), CrossPartition: true, Whole: true, MaxItemCount: 7,
			Query: `SELECT c.id, c.cp_lower FROM c ORDER BY c.cp_lower DESC`}, nil)) {
			order = append(order, r.Get("cp_lower").String())
		}
		// Descending, items without the property come last.
		if len(order) != 40 || !slices.IsSortedFunc(order[:36], func(a, b string) int { return strings.Compare(b, a) }) ||
			order[0] != `"gamma"` || order[35] != `"alpha"` || slices.ContainsFunc(order[36:], func(s string) bool { return s != "undefined" }) {
			t.Errorf("ranges %d: ORDER BY the computed property: %v", ranges, order)
		}

		groups := parseItems(t, drainRows(t, e, QueryParams{ItemRef: batchRef(""), CrossPartition: true, Whole: true,
			Query: `SELECT c.cp_lower AS g, COUNT(1) AS n FROM c WHERE IS_DEFINED(c.cp_lower) GROUP BY c.cp_lower`}, nil))
		counts := map[string]int64{}
		for _, g := range groups {
			counts[g.Get("g").Str()] = g.Get("n").Int()
		}
		if fmt.Sprint(counts) != "map[alpha:16 beta:8 gamma:12]" {
			t.Errorf("ranges %d: GROUP BY the computed property: %v", ranges, counts)
		}
	}
}

// The service sorts by a computed property only when an included path
// names it: a wildcard does not index one.
func TestComputedPropertyOrderNeedsItsPath(t *testing.T) {
	e := computedEnv(t, 1, `{"path":"/*"}`)
	_, err := e.QueryItems(context.Background(), QueryParams{ItemRef: batchRef(""), CrossPartition: true, Whole: true, Query: `SELECT * FROM c ORDER BY c.cp_lower`})
	var ee *Error
	if !errors.As(err, &ee) || ee.Code != BadRequest || !strings.Contains(ee.Message, "/cp_lower/?") {
		t.Fatalf("ORDER BY an unindexed computed property: %v", err)
	}
	// A stored path of that name is not the computed property's.
	if _, err := e.QueryItems(context.Background(), QueryParams{ItemRef: batchRef(""), CrossPartition: true, Whole: true, Query: `SELECT * FROM c ORDER BY c.name`}); err != nil {
		t.Fatal(err)
	}
}

// Definitions the service refuses are 400s that say what is wrong.
func TestComputedPropertyDefinitionRefusals(t *testing.T) {
	many := make([]string, 21)
	for i := range many {
		many[i] = fmt.Sprintf(`{"name":"cp%d","query":"SELECT VALUE c.a FROM c"}`, i)
	}
	for _, tc := range []struct{ defs, want string }{
		{`{}`, "must be an array"},
		{`[` + strings.Join(many, ",") + `]`, "at most 20"},
		{`[{"name":"cp"}]`, "string query"},
		{`[{"name":"","query":"SELECT VALUE c.a FROM c"}]`, "empty name"},
		{`[{"name":"a/b","query":"SELECT VALUE c.a FROM c"}]`, "top-level"},
		{`[{"name":"id","query":"SELECT VALUE c.a FROM c"}]`, "system property"},
		{`[{"name":"_ts","query":"SELECT VALUE c.a FROM c"}]`, "system property"},
		{`[{"name":"x","query":"SELECT VALUE c.a FROM c"},{"name":"x","query":"SELECT VALUE c.b FROM c"}]`, "twice"},
		{`[{"name":"x","query":"SELECT c.a FROM c"}]`, "SELECT VALUE"},
		{`[{"name":"x","query":"SELECT DISTINCT VALUE c.a FROM c"}]`, "SELECT VALUE"},
		{`[{"name":"x","query":"SELECT TOP 1 VALUE c.a FROM c"}]`, "SELECT VALUE"},
		{`[{"name":"x","query":"SELECT VALUE c.a FROM c WHERE c.b = 1"}]`, "no WHERE"},
		{`[{"name":"x","query":"SELECT VALUE c.a FROM c ORDER BY c.a"}]`, "no WHERE"},
		{`[{"name":"x","query":"SELECT VALUE 1"}]`, "FROM clause"},
		{`[{"name":"x","query":"SELECT VALUE t FROM t IN c.tags"}]`, "FROM clause"},
		{`[{"name":"x","query":"SELECT VALUE t FROM c JOIN t IN c.tags"}]`, "FROM clause"},
		{`[{"name":"x","query":"SELECT VALUE GetCurrentDateTime() FROM c"}]`, "GetCurrentDateTime"},
		{`[{"name":"x","query":"SELECT VALUE RAND() FROM c"}]`, "RAND"},
		{`[{"name":"x","query":"SELECT VALUE udf.f(c.a) FROM c"}]`, "user-defined"},
		{`[{"name":"x","query":"SELECT VALUE COUNT(1) FROM c"}]`, "aggregate"},
		{`[{"name":"x","query":"SELECT VALUE ST_DISTANCE(c.a, c.b) FROM c"}]`, "spatial"},
		{`[{"name":"x","query":"SELECT VALUE @p FROM c"}]`, "parameter"},
		{`[{"name":"x","query":"SELECT VALUE EXISTS(SELECT VALUE t FROM t IN c.tags) FROM c"}]`, "subquery"},
		{`[{"name":"x","query":"SELECT VALUE d.a FROM c"}]`, "d"},
		{`[{"name":"x","query":"SELECT VALUE NOSUCH(c.a) FROM c"}]`, "NOSUCH"},
		{`[{"name":"x","query":"SELECT VALUE FROM c"}]`, "not valid"},
	} {
		clk := clock.NewManual(batchT0)
		e, err := New(Config{Store: teststore.Open(t), Clock: clk})
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		if _, err := e.CreateDatabase(ctx, batchJSON(t, `{"id":"db"}`), nil); err != nil {
			t.Fatal(err)
		}
		_, err = e.CreateContainer(ctx, "db", batchJSON(t, `{"id":"c","partitionKey":{"paths":["/pk"]},"computedProperties":`+tc.defs+`}`), nil)
		var ee *Error
		if !errors.As(err, &ee) || ee.Code != BadRequest || !strings.Contains(ee.Message, tc.want) {
			t.Errorf("%s: got %v, want a 400 saying %q", tc.defs, err, tc.want)
		}
	}
}

// ORDER BY on two computed properties is served from a composite index
// that names them, and refused without one, as for stored properties; a
// computed property whose definition reads an excluded stored path is
// sorted and range-filtered by its own included path; a FROM path over a
// computed property is refused, not read from the stored item; a patch
// condition reads computed properties as a query does.
func TestComputedPropertiesAndTheIndexPolicy(t *testing.T) {
	clk := clock.NewManual(batchT0)
	e, err := New(Config{Store: teststore.Open(t), Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	createDBAndContainer(t, e, `{"id":"c","partitionKey":{"paths":["/pk"]},"computedProperties":[
		{"name":"cp_n","query":"SELECT VALUE c.n FROM c"},
		{"name":"cp_lower","query":"SELECT VALUE LOWER(c.name) FROM c"}],
		"indexingPolicy":{"includedPaths":[{"path":"/*"},{"path":"/cp_n/?"}],"excludedPaths":[{"path":"/n/?"}],
		"compositeIndexes":[[{"path":"/cp_lower"},{"path":"/cp_n","order":"descending"}]]}}`)
	be := &batchEnv{e: e, clock: clk}
	for i := range 12 {
		be.seed(t, fmt.Sprintf(`{"id":"i%02d","pk":"p","n":%d,"name":%q}`, i, i%5, []string{"B", "a", "C"}[i%3]))
	}
	ctx := context.Background()
	query := func(q string) ([]document.Value, error) {
		var rows []document.Value
		p := QueryParams{ItemRef: batchRef(`["p"]`), Query: q, MaxItemCount: 5}
		for {
			page, err := e.QueryItems(ctx, p)
			if err != nil {
				return nil, err
			}
			for _, it := range page.Items {
				rows = append(rows, parseItems(t, []string{string(it)})...)
			}
			if page.Continuation == "" {
				return rows, nil
			}
			p.Continuation = page.Continuation
		}
	}
	rows, err := query(`SELECT c.cp_lower AS l, c.cp_n AS n FROM c ORDER BY c.cp_lower, c.cp_n DESC`)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rows {
		got = append(got, fmt.Sprintf("%s%d", r.Get("l").Str(), r.Get("n").Int()))
	}
	if want := "[a4 a2 a1 a0 b4 b3 b1 b0 c3 c2 c1 c0]"; fmt.Sprint(got) != want {
		t.Errorf("ORDER BY two computed properties: %v, want %s", got, want)
	}
	for _, q := range []string{
		`SELECT c.id FROM c ORDER BY c.cp_n, c.cp_lower`, // no composite in that order
		`SELECT VALUE x FROM c.cp_lower x`,
		`SELECT VALUE x FROM x IN c.cp_lower`,
	} {
		_, err := query(q)
		var ee *Error
		if !errors.As(err, &ee) || ee.Code != BadRequest {
			t.Errorf("%s: %v, want a 400", q, err)
		}
	}
	if rows, err := query(`SELECT VALUE c.cp_n FROM c WHERE c.cp_n > 2 ORDER BY c.cp_n`); err != nil || fmt.Sprint(rows) != "[3 3 4 4]" {
		t.Errorf("a range and ORDER BY on a computed property of an excluded path: %v %v", rows, err)
	}

	for cond, want := range map[string]bool{"FROM c WHERE c.cp_lower = 'a'": true, "FROM c WHERE c.cp_lower = 'A'": false} {
		_, err := e.PatchItem(ctx, PatchItemParams{ItemRef: batchRef(`["p"]`), ID: "i01", Condition: cond,
			Ops: []PatchOp{{Op: "set", Path: []string{"seen"}, Value: document.BoolValue(true)}}})
		if held := err == nil; held != want || err != nil && ErrorCode(err) != PreconditionFailed {
			t.Errorf("patch condition %s: %v, want it to hold: %v", cond, err, want)
		}
	}
}

// A definition may not read another computed property, nor itself.
func TestComputedPropertyMayNotReadAnother(t *testing.T) {
	for _, defs := range []string{
		`[{"name":"a","query":"SELECT VALUE c.x * 2 FROM c"},{"name":"b","query":"SELECT VALUE c.a + 1 FROM c"}]`,
		`[{"name":"a","query":"SELECT VALUE r[\"a\"] FROM r"}]`,
	} {
		e, err := New(Config{Store: teststore.Open(t), Clock: clock.NewManual(batchT0)})
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		if _, err := e.CreateDatabase(ctx, batchJSON(t, `{"id":"db"}`), nil); err != nil {
			t.Fatal(err)
		}
		_, err = e.CreateContainer(ctx, "db", batchJSON(t, `{"id":"c","partitionKey":{"paths":["/pk"]},"computedProperties":`+defs+`}`), nil)
		var ee *Error
		if !errors.As(err, &ee) || ee.Code != BadRequest || !strings.Contains(ee.Message, "may not rely on another") {
			t.Errorf("%s: %v", defs, err)
		}
	}
}

// A filter on a computed property whose definition reads one stored path
// is that path's value filter (plan.ValueTerms): its entries' values are
// tested and only the passing items' records read, and a COUNT of it
// reads none.
func TestComputedPropertyFilterByItsPathsValues(t *testing.T) {
	be := newBatchEnvWith(t, `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2},
		"computedProperties":[{"name":"cp_lower","query":"SELECT VALUE LOWER(c.name) FROM c"}]}`)
	var items []string
	for i := range 3000 {
		items = append(items, fmt.Sprintf(`{"id":"d%d","pk":"p%d","name":"Name%d"}`, i, i%50, i%1500))
	}
	be.seed(t, items...)
	for _, tc := range []struct {
		query  string
		access plan.Access
		want   string
	}{
		{`SELECT VALUE c.id FROM c WHERE c.cp_lower = 'name77'`, plan.ValueScan, `["d1577","d77"]`},
		{`SELECT VALUE COUNT(1) FROM c WHERE c.cp_lower = 'name77'`, plan.IndexCount, `[2]`},
	} {
		p := QueryParams{ItemRef: batchRef(""), RangeID: "0", CrossPartition: true, Query: tc.query}
		page, err := be.e.QueryItems(context.Background(), p)
		if err != nil {
			t.Fatal(err)
		}
		rows := make([]string, len(page.Items))
		for i, it := range page.Items {
			rows[i] = string(it)
		}
		slices.Sort(rows)
		if got := "[" + strings.Join(rows, ",") + "]"; got != tc.want {
			t.Errorf("%s: %s, want %s", tc.query, got, tc.want)
		}
		if page.Plan == nil || page.Plan.Chosen.Access != tc.access || page.Examined > len(page.Items)+2*len(items)/100 {
			t.Errorf("%s: %d records by %v", tc.query, page.Examined, page.Plan)
		}
	}
}
