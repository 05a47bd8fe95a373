package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/mayfly-db/mayfly/internal/document"
	"github.com/mayfly-db/mayfly/internal/query/gatewayplan"
	"github.com/mayfly-db/mayfly/internal/query/vector"
)

// TestVectorSearchAgainstAModel runs random vector searches the way the
// SDKs do and compares their scores with a brute-force model: in one
// partition, over a container of one range, and over a container of four
// ranges, where the test merges the ranges' rows of the gateway plan's
// rewritten query in the plan's direction, as the SDKs' non-streaming ORDER
// BY does. The distance function comes from the container's policy or from
// the options. MAYFLY_VECTOR_SEEDS sets how many seeds run (default 6).
func TestVectorSearchAgainstAModel(t *testing.T) {
	seeds := 6
	if s := os.Getenv("MAYFLY_VECTOR_SEEDS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			t.Fatalf("MAYFLY_VECTOR_SEEDS=%q: %v", s, err)
		}
		seeds = n
	}
	for seed := range seeds {
		t.Run(strconv.Itoa(seed), func(t *testing.T) { vectorScenario(t, int64(seed)) })
	}
}

type vectorItem struct {
	ID string    `json:"id"`
	PK string    `json:"pk"`
	K  int       `json:"k"`
	V  []float64 `json:"v"`
}

func vectorScenario(t *testing.T, seed int64) {
	rng := rand.New(rand.NewSource(seed))
	dims := 2 + rng.Intn(5)
	policyFn := vector.Function(rng.Intn(3))
	policy := fmt.Sprintf(`"vectorEmbeddingPolicy":{"vectorEmbeddings":[{"path":"/v","dataType":"float32","dimensions":%d,"distanceFunction":%q}]}`, dims, policyFn)
	be := newBatchEnvWith(t, `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2},`+policy+`}`)
	ctx := context.Background()
	// 24,000 RU/s at creation: four ranges.
	if _, err := be.e.CreateContainer(ctx, "db", batchJSON(t, `{"id":"wide","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2},`+policy+`}`), &Throughput{Manual: 24000}); err != nil {
		t.Fatal(err)
	}
	var items []vectorItem
	for i := range 40 + rng.Intn(60) {
		it := vectorItem{ID: "i" + strconv.Itoa(i), PK: "p" + strconv.Itoa(rng.Intn(8)), K: rng.Intn(10), V: make([]float64, dims)}
		for j := range it.V {
			// Small integers make ties, which the comparison must survive.
			it.V[j] = float64(rng.Intn(7) - 3)
			if rng.Intn(3) == 0 {
				it.V[j] += rng.Float64()
			}
		}
		if slices.ContainsFunc(it.V, func(x float64) bool { return x != 0 }) { // a cosine needs a direction
			items = append(items, it)
		}
	}
	for _, coll := range []string{"c", "wide"} {
		for _, it := range items {
			body, _ := json.Marshal(it)
			if _, err := be.e.WriteItem(ctx, WriteItemParams{ItemRef: ItemRef{DB: "db", Coll: coll}, Mode: ModeCreate, Body: body}); err != nil {
				t.Fatal(err)
			}
		}
	}
	ranges := 0
	for ranges < 8 {
		if _, err := be.e.QueryItems(ctx, QueryParams{ItemRef: ItemRef{DB: "db", Coll: "wide"}, Query: "SELECT VALUE 1 FROM c", RangeID: strconv.Itoa(ranges), CrossPartition: true}); err != nil {
			break
		}
		ranges++
	}
	if ranges < 2 {
		t.Fatalf("the wide container has %d ranges", ranges)
	}

	for range 12 {
		q := make([]float64, dims)
		for j := range q {
			q[j] = float64(rng.Intn(9)-4) + rng.Float64()
		}
		qv, _ := json.Marshal(q)
		fn, opts := policyFn, ""
		if rng.Intn(3) == 0 {
			fn = vector.Function(rng.Intn(3))
			opts = fmt.Sprintf(", false, {distanceFunction: '%s'}", strings.ToUpper(fn.String()[:1])+fn.String()[1:])
		}
		call := fmt.Sprintf("VectorDistance(c.v, %s%s)", qv, opts)
		top := 1 + rng.Intn(15)
		where, minK := "", -1
		if rng.Intn(2) == 0 {
			minK = rng.Intn(8)
			where = " WHERE c.k > " + strconv.Itoa(minK)
		}
		pk := ""
		if rng.Intn(4) == 0 {
			pk = "p" + strconv.Itoa(rng.Intn(8))
		}
		text := fmt.Sprintf("SELECT TOP %d c.id, %s AS s FROM c%s ORDER BY %s", top, call, where, call)

		var want []float64
		for _, it := range items {
			if it.K > minK && (pk == "" || it.PK == pk) {
				s, ok := vector.Score(fn, vecValue(it.V), vecValue(q))
				if !ok {
					t.Fatalf("no score for %v", it.V)
				}
				want = append(want, s)
			}
		}
		slices.Sort(want)
		if fn.Descending() {
			slices.Reverse(want)
		}
		want = want[:min(top, len(want))]

		ref := batchRef("")
		if pk != "" {
			ref = batchRef(`["` + pk + `"]`)
		}
		page, err := be.e.QueryItems(ctx, QueryParams{ItemRef: ref, Query: text, MaxItemCount: -1, CrossPartition: pk == "", RangeID: map[bool]string{true: "0"}[pk == ""]})
		if err != nil {
			t.Fatalf("%s: %v", text, err)
		}
		if got := scores(t, page.Items, "s"); !sameScores(got, want) {
			t.Errorf("seed %d, one range, key %q: %s\n got %v\nwant %v", seed, pk, text, got, want)
		}
		if pk != "" {
			continue
		}

		// Four ranges, as an SDK runs it from the plan.
		raw, err := be.e.PlanFor(ctx, "db", "wide", text, nil, "")
		if err != nil {
			t.Fatal(err)
		}
		var plan gatewayplan.Response
		if err := json.Unmarshal(raw, &plan); err != nil {
			t.Fatal(err)
		}
		if !plan.QueryInfo.HasNonStreamingOrderBy || len(plan.QueryInfo.OrderBy) != 1 {
			t.Fatalf("plan of %s: %s", text, raw)
		}
		rewritten := strings.ReplaceAll(plan.QueryInfo.RewrittenQuery, gatewayplan.Filter, "true")
		type row struct {
			OrderByItems []struct{ Item float64 } `json:"orderByItems"`
			Payload      struct{ S float64 }      `json:"payload"`
		}
		var merged []row
		for r := range ranges {
			cont := ""
			for {
				page, err := be.e.QueryItems(ctx, QueryParams{ItemRef: ItemRef{DB: "db", Coll: "wide"}, Query: rewritten, MaxItemCount: 3, Continuation: cont, RangeID: strconv.Itoa(r), CrossPartition: true})
				if err != nil {
					t.Fatalf("range %d of %s: %v", r, rewritten, err)
				}
				for _, it := range page.Items {
					var x row
					if err := json.Unmarshal(it, &x); err != nil || len(x.OrderByItems) != 1 || x.OrderByItems[0].Item != x.Payload.S {
						t.Fatalf("range %d row %s: %v", r, it, err)
					}
					merged = append(merged, x)
				}
				if cont = page.Continuation; cont == "" {
					break
				}
			}
		}
		desc := plan.QueryInfo.OrderBy[0] == "Descending"
		slices.SortStableFunc(merged, func(a, b row) int {
			d := a.OrderByItems[0].Item - b.OrderByItems[0].Item
			if desc {
				d = -d
			}
			switch {
			case d < 0:
				return -1
			case d > 0:
				return 1
			}
			return 0
		})
		var got []float64
		for _, r := range merged[:min(top, len(merged))] {
			got = append(got, r.Payload.S)
		}
		if !sameScores(got, want) {
			t.Errorf("seed %d, %d ranges: %s\nplan %s\n got %v\nwant %v", seed, ranges, text, raw, got, want)
		}
	}
}

func vecValue(v []float64) document.Value {
	vals := make([]document.Value, len(v))
	for i, x := range v {
		vals[i] = document.Float(x)
	}
	return document.Arr(vals)
}

// scores reads property name of each row.
func scores(t *testing.T, rows [][]byte, name string) []float64 {
	t.Helper()
	var out []float64
	for _, r := range rows {
		var m map[string]any
		if err := json.Unmarshal(r, &m); err != nil {
			t.Fatalf("row %s: %v", r, err)
		}
		f, ok := m[name].(float64)
		if !ok {
			t.Fatalf("row %s: no number %q", r, name)
		}
		out = append(out, f)
	}
	return out
}

// sameScores compares score lists to within rounding: the model and the
// engine add in the same order, but JSON carries the numbers in between.
func sameScores(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if d := a[i] - b[i]; d > 1e-9 || d < -1e-9 {
			return false
		}
	}
	return true
}
