package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mayfly-db/mayfly/internal/document"
	"github.com/mayfly-db/mayfly/internal/query/gatewayplan"
	"github.com/mayfly-db/mayfly/internal/query/plan"
	"github.com/mayfly-db/mayfly/internal/query/vector"
	"github.com/mayfly-db/mayfly/internal/ttl"
)

// TestVectorTopMatchesTheScan runs vector searches on two containers that
// hold the same items, one with a vector index (its searches read the
// stored vectors) and one with the same embedding policy and none (its
// searches score every document), and requires the same pages, drained a
// few rows a page: in one partition and across the range of a container
// of one range and of four, and under the first component of a
// hierarchical key. The items' vectors are small integers, so
// scores tie; some items have no vector, one of another length, one that
// is not all numbers, or a vector of zeros; some expire, some are
// replaced with another vector or none, some are deleted. A search filters
// by a property, or selects a value some items lack. Across partitions it
// runs as written and as the gateway plan rewrites it for the SDKs. MAYFLY_VECTOR_TOP_SEEDS
// sets how many seeds run (default 4), from MAYFLY_VECTOR_TOP_FROM (default 0).
func TestVectorTopMatchesTheScan(t *testing.T) {
	runSeeds(t, "MAYFLY_VECTOR_TOP", vectorTopScenario)
}

func vectorTopScenario(t *testing.T, seed int64) {
	rng := rand.New(rand.NewSource(seed))
	ctx := context.Background()
	dims := 2 + rng.Intn(4)
	fn := vector.Function(rng.Intn(3))
	embed := fmt.Sprintf(`"vectorEmbeddingPolicy":{"vectorEmbeddings":[{"path":"/v","dataType":"float32","dimensions":%d,"distanceFunction":%q},{"path":"/w","dataType":"float32","dimensions":2,"distanceFunction":"cosine"}]}`, dims, fn)
	indexed := `"indexingPolicy":{"vectorIndexes":[{"path":"/w","type":"flat"},{"path":"/v","type":"flat"}]}`
	body := func(id string, policy string) string {
		return `{"id":"` + id + `","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2},"defaultTtl":-1,` + embed + `,` + policy + `}`
	}
	be := newPairedEnv(t, func(id string, withIndex bool) string {
		if withIndex {
			return body(id, indexed)
		}
		return body(id, `"indexingPolicy":{}`)
	})
	vec := func(n int) string {
		parts := make([]string, n)
		for j := range parts {
			parts[j] = strconv.Itoa(rng.Intn(5) - 2)
			if rng.Intn(4) == 0 {
				parts[j] += ".5"
			}
		}
		return "[" + strings.Join(parts, ",") + "]"
	}
	item := func(i int) string {
		doc := `{"id":"i` + strconv.Itoa(i) + `","pk":"p` + strconv.Itoa(rng.Intn(6)) + `","k":` + strconv.Itoa(rng.Intn(10))
		switch rng.Intn(12) {
		case 0: // no vector
		case 1:
			doc += `,"v":` + vec(dims+1)
		case 2:
			doc += `,"v":[1,"2"]`
		case 3:
			doc += `,"v":` + "[" + strings.TrimSuffix(strings.Repeat("0,", dims), ",") + "]"
		default:
			doc += `,"v":` + vec(dims)
		}
		if rng.Intn(3) > 0 {
			doc += `,"o":` + strconv.Itoa(rng.Intn(100))
		}
		if rng.Intn(8) == 0 {
			doc += `,"ttl":30`
		}
		return doc + `,"w":[1,` + strconv.Itoa(rng.Intn(3)) + `]}`
	}
	n := 80 + rng.Intn(80)
	docs := make([]string, n)
	for i := range n {
		docs[i] = item(i)
		writePaired(t, be, ModeCreate, docs[i])
	}
	changePaired(t, be, rng, docs, n/8, item)
	be.clock.Advance(31 * time.Second) // the items with their own ttl expire
	if _, err := be.e.CheckIndexes(ctx); err != nil {
		t.Fatal(err)
	}
	if seed%2 == 1 {
		// The purge takes them away, and their vectors.
		for coll := range pairedColls {
			if _, err := be.e.PurgeDue(ctx, ttl.PurgeParams{Container: "dbs/db/colls/" + coll, Now: be.clock.Now(), Limit: 1000}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := be.e.CheckIndexes(ctx); err != nil {
			t.Fatal(err)
		}
	}

	for range 40 {
		qv := vec(dims)
		if rng.Intn(10) == 0 {
			qv = vec(dims + 1) // the items of that length score
		}
		call := "VectorDistance(c.v, " + qv + ")"
		if rng.Intn(4) == 0 {
			call = "VectorDistance(" + qv + ", c.v, false, {distanceFunction: '" + vector.Function(rng.Intn(3)).String() + "'})"
		}
		var params map[string]document.Value
		if rng.Intn(3) == 0 {
			// As applications send it, the query vector a parameter.
			v, err := document.Parse([]byte(qv))
			if err != nil {
				t.Fatal(err)
			}
			params, call = map[string]document.Value{"@q": v}, strings.Replace(call, qv, "@q", 1)
		}
		// The rows' scores are the search's, or, for another vector,
		// computed from the documents.
		sel := []string{"c.id, " + call + " AS s", "VALUE c.id", "VALUE c.o", "c.id, c.k", "c.id, VectorDistance(c.v, " + vec(dims) + ") AS t"}[rng.Intn(5)]
		// A filter that passes a few items makes the search look past
		// its first round of candidates.
		where := ""
		switch rng.Intn(3) {
		case 0:
			where = " WHERE c.k > " + strconv.Itoa(rng.Intn(10))
		case 1:
			where = " WHERE c.k = " + strconv.Itoa(rng.Intn(10))
		}
		text := fmt.Sprintf("SELECT TOP %d %s FROM c%s ORDER BY %s", 1+rng.Intn(20), sel, where, call)
		if rng.Intn(4) == 0 {
			text = fmt.Sprintf("SELECT %s FROM c%s ORDER BY %s OFFSET %d LIMIT %d", sel, where, call, rng.Intn(6), 1+rng.Intn(10))
		}
		pk := ""
		if rng.Intn(3) == 0 {
			pk = "p" + strconv.Itoa(rng.Intn(6))
		}
		pageSize := 1 + rng.Intn(6)
		texts := []string{text}
		if pk == "" {
			// And as the SDKs send it to each range across partitions:
			// the gateway plan's rewritten query.
			raw, err := be.e.PlanFor(ctx, "db", "wide", text, params, "")
			if err != nil {
				t.Fatal(err)
			}
			var gp gatewayplan.Response
			if err := json.Unmarshal(raw, &gp); err != nil {
				t.Fatal(err)
			}
			texts = append(texts, strings.ReplaceAll(gp.QueryInfo.RewrittenQuery, gatewayplan.Filter, "true"))
		}
		for _, text := range texts {
			p := QueryParams{Query: text, Params: params, MaxItemCount: pageSize}
			drainPaired(t, be, seed, p, pk, func(coll string, access plan.Access, kind plan.ScopeKind) {
				if access != plan.VectorTop {
					t.Fatalf("%s in %s: read by %v", text, coll, access)
				}
				if coll == "hpk" && pk != "" && kind != plan.ScopePrefix {
					t.Fatalf("%s in %s under %q: scope %v", text, coll, pk, kind)
				}
			})
		}
	}
}

// drainVectorRows returns the rows of every page of p, and the access path
// and scope of the first page's plan.
func drainVectorRows(t *testing.T, e *Engine, p QueryParams) ([]string, plan.Access, plan.ScopeKind) {
	t.Helper()
	var rows []string
	access, kind := plan.Access(255), plan.ScopeKind(255)
	for {
		page, err := e.QueryItems(context.Background(), p)
		if err != nil {
			t.Fatalf("%s in %s: %v", p.Query, p.Coll, err)
		}
		if page.Plan != nil && access == 255 {
			access, kind = page.Plan.Chosen.Access, page.Plan.Scope.Kind
		}
		for _, it := range page.Items {
			// Without the _rid of a rewritten query's rows: the two
			// containers' items have their own.
			var row map[string]any
			if json.Unmarshal(it, &row) == nil && row["_rid"] != nil {
				delete(row, "_rid")
				it, _ = json.Marshal(row)
			}
			rows = append(rows, string(it))
		}
		if page.Continuation == "" {
			return rows, access, kind
		}
		p.Continuation = page.Continuation
	}
}
