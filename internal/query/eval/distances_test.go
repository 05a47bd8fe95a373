package eval_test

import (
	"maps"
	"slices"
	"testing"

	"github.com/mayfly-db/mayfly/internal/document"
	"github.com/mayfly-db/mayfly/internal/query/eval"
	"github.com/mayfly-db/mayfly/internal/query/vector"
)

// TestUseDistances: a program given the scores of one VectorDistance takes
// them for the calls of its top-level query that have those scores (the
// path, the constant vector and the function all the same), for the
// documents whose scores it holds, and leaves the vector's property out of
// what such a document needs decoded; any other call, and any other
// document, it scores as before.
func TestUseDistances(t *testing.T) {
	q, err := document.Parse([]byte(`[1,0]`))
	if err != nil {
		t.Fatal(err)
	}
	known := &eval.Distances{Path: []string{"v"}, Vector: q, Function: vector.Cosine,
		Of: func(m eval.DocMeta) (float64, bool) { return 10 + float64(m.DocumentID), m.DocumentID < 5 }}
	docs := []struct {
		id   int64
		json string
	}{
		{1, `{"id":"a"}`},                                  // known, its vector left undecoded
		{2, `{"id":"b","v":[0,1]}`},                        // known
		{7, `{"id":"c","v":[1,1]}`},                        // not known: scored from the document
		{8, `{"id":"d","v":[2,0],"w":[3,4],"vs":[[0,1]]}`}, // not known
	}
	for _, tc := range []struct {
		text   string
		fields []string // what a known document needs decoded
		rows   string
	}{
		{"SELECT c.id, VectorDistance(c.v, [1,0]) AS s FROM c ORDER BY VectorDistance(c.v, [1,0])", []string{"id"},
			`[{"id":"b","s":12},{"id":"a","s":11},{"id":"d","s":1},{"id":"c","s":0.7071067811865475}]`},
		// The query vector first, and the function named as the policy has it.
		{"SELECT VALUE VectorDistance([1,0], c.v, false, {distanceFunction: 'cosine'}) FROM c", []string{},
			`[11,12,0.7071067811865475,1]`},
		// Another vector, another function, another path: scored.
		{"SELECT VALUE VectorDistance(c.v, [0,1]) FROM c", []string{"v"}, `[1,0.7071067811865475,0]`},
		{"SELECT VALUE VectorDistance(c.v, [1,0], false, {distanceFunction: 'dotproduct'}) FROM c", []string{"v"}, `[0,1,2]`},
		{"SELECT VALUE VectorDistance(c.w, [1,0]) FROM c", []string{"w"}, `[0.6]`},
		// A subquery's call scores its own alias's vectors.
		{"SELECT VALUE ARRAY(SELECT VALUE VectorDistance(x, [1,0]) FROM x IN c.vs) FROM c", []string{"vs"}, `[[],[],[],[0]]`},
		// The property read elsewhere too is decoded.
		{"SELECT c.v, VectorDistance(c.v, [1,0]) AS s FROM c", []string{"v"}, `[{"s":11},{"v":[0,1],"s":12},{"v":[1,1],"s":0.7071067811865475},{"v":[2,0],"s":1}]`},
	} {
		t.Run(tc.text, func(t *testing.T) {
			p := compile(t, tc.text, eval.Options{})
			p.UseDistances(known)
			names, all := p.RootFields(true)
			if got := slices.Sorted(maps.Keys(names)); all || !slices.Equal(got, tc.fields) {
				t.Errorf("fields of a known document %v (all %v), want %v", got, all, tc.fields)
			}
			rows, err := p.RunEach(func(yield func(document.Value, eval.DocMeta) error) error {
				for _, d := range docs {
					meta := eval.DocMeta{DocumentID: d.id}
					names, all := p.RootFields(p.KnowsDistance(meta))
					doc, err := document.Parse([]byte(d.json))
					if !all {
						doc, err = document.ParseTop([]byte(d.json), names)
					}
					if err != nil {
						return err
					}
					if err := yield(doc, meta); err != nil {
						return err
					}
				}
				return nil
			}, 0, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := document.Arr(rows).String(); got != tc.rows {
				t.Errorf("rows %s\nwant %s", got, tc.rows)
			}
		})
	}
}
