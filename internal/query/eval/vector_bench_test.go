package eval_test

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"

	"github.com/mayfly-db/mayfly/internal/document"
	"github.com/mayfly-db/mayfly/internal/query/eval"
	"github.com/mayfly-db/mayfly/internal/query/parser"
)

// BenchmarkVectorTop10 is a vector search as an application runs it: the
// ten items nearest a query vector of 1,536 dimensions among 2,000, each
// item parsed from its stored JSON as the engine reads it. It reports the
// evaluation steps charged per item.
func BenchmarkVectorTop10(b *testing.B) {
	rng := rand.New(rand.NewSource(1))
	var docs [][]byte
	for i := range 2000 {
		var sb strings.Builder
		fmt.Fprintf(&sb, `{"id":"d%d","v":[`, i)
		for j := range 1536 {
			if j > 0 {
				sb.WriteByte(',')
			}
			fmt.Fprintf(&sb, "%.6f", rng.Float64()*2-1)
		}
		sb.WriteString("]}")
		docs = append(docs, []byte(sb.String()))
	}
	qv := make([]string, 1536)
	for j := range qv {
		qv[j] = fmt.Sprintf("%.6f", rng.Float64()*2-1)
	}
	q, err := parser.Parse("SELECT TOP 10 c.id FROM c ORDER BY VectorDistance(c.v, [" + strings.Join(qv, ",") + "])")
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		bud := eval.NewBudget(eval.BudgetParams{})
		p, err := eval.Compile(q, nil, eval.Options{Budget: bud})
		if err != nil {
			b.Fatal(err)
		}
		i := 0
		_, err = p.Run(func() (document.Value, eval.DocMeta, bool, error) {
			if i >= len(docs) {
				return document.Undef, eval.DocMeta{}, false, nil
			}
			i++
			v, err := document.Parse(docs[i-1])
			return v, eval.DocMeta{}, true, err
		})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(bud.Work())/float64(len(docs)), "steps/doc")
	}
}
