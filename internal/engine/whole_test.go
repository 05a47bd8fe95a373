package engine

import (
	"context"
	"fmt"
	"strconv"
	"testing"
)

// A SELECT VALUE made of aggregates, which no client can merge range by
// range, is served whole across partitions; split by range over a
// container of several ranges it is refused rather than answered with one
// range's part. The per-range form of an aggregate that the gateway plan
// rewrites a query to is answered range by range.
func TestValueAggregatesServedWhole(t *testing.T) {
	be := newBatchEnvWith(t, `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2}}`)
	ctx := context.Background()
	// 24,000 RU/s at creation: four ranges.
	if _, err := be.e.CreateContainer(ctx, "db", batchJSON(t, `{"id":"wide","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2}}`), &Throughput{Manual: 24000}); err != nil {
		t.Fatal(err)
	}
	wide := ItemRef{DB: "db", Coll: "wide"}
	for i := range 40 {
		body := `{"id":"i` + strconv.Itoa(i) + `","pk":"p` + strconv.Itoa(i) + `","n":` + strconv.Itoa(i) + `}`
		if _, err := be.e.WriteItem(ctx, WriteItemParams{ItemRef: wide, Mode: ModeCreate, Body: []byte(body)}); err != nil {
			t.Fatal(err)
		}
	}
	q := "SELECT VALUE {n: COUNT(1), top: MAX(c.n) + 1} FROM c"
	page, err := be.e.QueryItems(ctx, QueryParams{ItemRef: wide, Query: q, CrossPartition: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Items) != 1 || string(page.Items[0]) != `{"n":40,"top":40}` {
		t.Errorf("%s across partitions: %s", q, page.Items)
	}
	if _, err := be.e.QueryItems(ctx, QueryParams{ItemRef: wide, Query: q, CrossPartition: true, RangeID: "1"}); !isCode(err, BadRequest) {
		t.Errorf("%s in one range of four: %v, want 400", q, err)
	}
	plan, err := be.e.PlanFor(ctx, "db", "wide", q, nil, "Aggregate,OrderBy,Top")
	if err != nil || string(plan) != `{"partitionedQueryExecutionInfoVersion":2,"queryInfo":{"distinctType":"None","top":null,"offset":null,"limit":null,"orderBy":[],"orderByExpressions":[],"groupByExpressions":[],"groupByAliases":[],"aggregates":[],"groupByAliasToAggregateType":{},"rewrittenQuery":"","hasSelectValue":true,"hasNonStreamingOrderBy":false},"queryRanges":[{"min":"","max":"FF","isMinInclusive":true,"isMaxInclusive":false}]}` {
		t.Errorf("plan of %s: %s, %v", q, plan, err)
	}
	total := 0
	for r := range 4 {
		page, err := be.e.QueryItems(ctx, QueryParams{ItemRef: wide, Query: `SELECT VALUE [{"item": COUNT(1)}] FROM c`, CrossPartition: true, RangeID: strconv.Itoa(r)})
		if err != nil {
			t.Fatalf("range %d: %v", r, err)
		}
		var n int
		if _, err := fmt.Sscanf(string(page.Items[0]), `[{"item":%d}]`, &n); err != nil {
			t.Fatalf("range %d: %s", r, page.Items[0])
		}
		total += n
	}
	if total != 40 {
		t.Errorf("the ranges' counts add up to %d, want 40", total)
	}
}
