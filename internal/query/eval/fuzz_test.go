package eval_test

import (
	"testing"
	"time"

	"github.com/mayfly-db/mayfly/internal/document"
	"github.com/mayfly-db/mayfly/internal/query/ast"
	"github.com/mayfly-db/mayfly/internal/query/eval"
	"github.com/mayfly-db/mayfly/internal/query/parser"
	"github.com/mayfly-db/mayfly/internal/query/vector"
)

var fuzzDocs = func() []document.Value {
	var out []document.Value
	for _, s := range []string{
		`{"id":"1","a":1,"s":"hello","arr":[1,2,3,[4]],"o":{"x":{"y":[{"z":1}]}},"n":null,"b":true}`,
		`{"id":"2","a":2.5,"s":"","arr":["a",{"k":1}],"geo":{"type":"Point","coordinates":[1,2]}}`,
		`{"id":"3","arr":[],"a":"x"}`,
	} {
		v, err := document.Parse([]byte(s))
		if err != nil {
			panic(err)
		}
		out = append(out, v)
	}
	return out
}()

// fuzzVectors gives the documents' arr the Euclidean distance.
var fuzzVectors = func() vector.Policy {
	v, err := document.Parse([]byte(`{"vectorEmbeddings":[{"path":"/arr","dataType":"float32","dimensions":3,"distanceFunction":"euclidean"}]}`))
	if err != nil {
		panic(err)
	}
	p, err := vector.ParsePolicy(v)
	if err != nil {
		panic(err)
	}
	return p
}()

// FuzzEval runs arbitrary query text over a few fixed documents: nothing
// may panic, and the work budget must stop anything expensive.
func FuzzEval(f *testing.F) {
	for _, s := range []string{
		"SELECT * FROM c",
		"SELECT VALUE REPLICATE(c.s, 3) FROM c",
		"SELECT c.id, t FROM c JOIN t IN c.arr JOIN u IN c.arr WHERE t = u ORDER BY c.a DESC",
		"SELECT VALUE COUNT(1) FROM c GROUP BY c.a",
		"SELECT DISTINCT TOP 2 VALUE ARRAY(SELECT VALUE x FROM x IN c.arr) FROM c OFFSET 0 LIMIT 1",
		"SELECT VALUE DateTimeAdd('dd', c.a, GetCurrentDateTime()) FROM c",
		"SELECT VALUE ST_DISTANCE(c.geo, {'type':'Point','coordinates':[0,0]}) FROM c",
		"SELECT VALUE c.s LIKE '%l_o%' FROM c WHERE IS_STRING(c.s) AND RegexMatch(c.s, 'h.*')",
		"SELECT VALUE (SELECT VALUE SUM(x) FROM x IN c.arr) FROM c",
		"SELECT VALUE [c.a << 3, c.a / 0, -c.a % 2, c.a ?? 1, c.b ? 1 : 2] FROM c",
		"SELECT TOP 2 c.id, VectorDistance(c.arr, [1,2,3]) AS s FROM c ORDER BY VectorDistance(c.arr, [1,2,3])",
		"SELECT VALUE VectorDistance([0.5,-1], c.o.x, true, {distanceFunction: 'DotProduct', searchListSizeMultiplier: 10}) FROM c",
		"SELECT VALUE c.id FROM c ORDER BY RANK RRF(FullTextScore(c.s, 'hello'), VectorDistance(c.arr, [1,2,3]), [2, -0.5])",
		"SELECT * FROM c WHERE (@s = null OR c.s = @s) AND (1 = 2 OR c.b) AND c.a > 1 + 1",
		"SELECT VALUE c.a FROM c WHERE NOT (true AND c.b) OR (c.a = (true AND c.b)) OR 'x'",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		q, err := parser.Parse(text)
		if err != nil {
			return
		}
		params := map[string]document.Value{"@p": document.Int(1), "@s": document.Str("x")}
		p, err := eval.Compile(q, params, eval.Options{Now: time.Unix(1700000000, 0), MaxWork: 200_000, Vectors: &fuzzVectors})
		if err != nil {
			return
		}
		rows, err := p.RunDocs(fuzzDocs)
		// The query's constant parts folded (fold.go), its rows are those
		// of the query as written.
		w, werr := eval.Compile(q, params, eval.Options{Now: time.Unix(1700000000, 0), MaxWork: 200_000, Vectors: &fuzzVectors, AsWritten: true})
		if werr != nil {
			t.Fatalf("%s: compiles folded, not as written: %v", text, werr)
		}
		if want, werr := w.RunDocs(fuzzDocs); err == nil && werr == nil && !sameRows(rows, want) {
			t.Fatalf("%s: folded %s gives %d rows, as written %d", text, ast.ExprString(p.Query().Where), len(rows), len(want))
		}
		if p.Streaming() {
			for _, d := range fuzzDocs {
				if _, err := p.Rows(d, eval.DocMeta{}); err != nil {
					break
				}
			}
		}
	})
}

// sameRows reports whether two runs' rows are equal, value by value.
func sameRows(a, b []document.Value) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if string(a[i].JSON()) != string(b[i].JSON()) {
			return false
		}
	}
	return true
}
