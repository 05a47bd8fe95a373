package eval_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/mayfly-db/mayfly/internal/document"
	"github.com/mayfly-db/mayfly/internal/query/eval"
)

// arrayDoc is {"a":[0,1,…,n-1]}.
func arrayDoc(t *testing.T, n int) document.Value {
	t.Helper()
	nums := make([]string, n)
	for i := range nums {
		nums[i] = fmt.Sprint(i)
	}
	v, err := document.Parse([]byte(`{"a":[` + strings.Join(nums, ",") + `]}`))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

const scanA = "SELECT VALUE 1 FROM c WHERE ARRAY_LENGTH(ARRAY(SELECT VALUE x FROM x IN c.a WHERE x >= 0)) > 0"

// The work of every Rows call with one Budget adds up: three documents
// that each fit the budget alone do not fit it together.
func TestBudgetIsPerRequestNotPerDocument(t *testing.T) {
	doc := arrayDoc(t, 1000)
	alone := eval.NewBudget(eval.BudgetParams{})
	if _, err := compile(t, scanA, eval.Options{Budget: alone}).Rows(doc, eval.DocMeta{}); err != nil {
		t.Fatal(err)
	}
	perDoc := alone.Work()
	b := eval.NewBudget(eval.BudgetParams{MaxWork: perDoc*2 + perDoc/2})
	p := compile(t, scanA, eval.Options{Budget: b})
	for i := 0; i < 3; i++ {
		_, err := p.Rows(doc, eval.DocMeta{})
		switch {
		case i < 2 && err != nil:
			t.Fatalf("document %d: %v", i, err)
		case i == 2 && !errors.Is(err, eval.ErrWork):
			t.Fatalf("document 3 of a budget for 2.5: err %v, want ErrWork", err)
		}
	}
}

// A Run stops at the first look at its context after the context ends,
// without reading the documents after it.
func TestBudgetStopsWhenTheContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	doc := arrayDoc(t, 1000)
	p := compile(t, "SELECT VALUE COUNT(1) FROM c WHERE ARRAY_LENGTH(ARRAY(SELECT VALUE x FROM x IN c.a WHERE x >= 0)) > 0",
		eval.Options{Budget: eval.NewBudget(eval.BudgetParams{Ctx: ctx})})
	read := 0
	_, err := p.Run(func() (document.Value, eval.DocMeta, bool, error) {
		read++
		if read == 3 {
			cancel()
		}
		return doc, eval.DocMeta{}, read <= 100, nil
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
	if read != 3 {
		t.Errorf("read %d documents; the third cancelled the context", read)
	}
}

// The rows one document produces are bounded through a subquery as
// through the query's own JOINs (an aggregate over them is not), and a row the query builds past what a
// response may carry is refused; a document's own rows stay within both.
func TestRowBoundsReachSubqueries(t *testing.T) {
	doc := arrayDoc(t, 100)
	for _, tc := range []struct {
		query string
		want  error
	}{
		{"SELECT VALUE COUNT(1) FROM c JOIN (SELECT VALUE 1 FROM a IN c.a JOIN b IN c.a JOIN d IN c.a) x", eval.ErrFanOut},
		{"SELECT VALUE ARRAY_LENGTH(ARRAY(SELECT VALUE 1 FROM a IN c.a JOIN b IN c.a JOIN d IN c.a)) FROM c", eval.ErrFanOut},
		{"SELECT VALUE ARRAY_LENGTH(ARRAY(SELECT VALUE 1 FROM a IN c.a JOIN b IN c.a)) FROM c", nil},
		{"SELECT VALUE (SELECT VALUE COUNT(1) FROM a IN c.a JOIN b IN c.a JOIN d IN c.a) FROM c", nil},
		{"SELECT VALUE ARRAY(SELECT VALUE REPLICATE('x', 10000) FROM a IN c.a JOIN b IN c.a WHERE b < 5) FROM c", eval.ErrRowTooLarge},
		{"SELECT ARRAY(SELECT VALUE REPLICATE('x', 10000) FROM a IN c.a JOIN b IN c.a WHERE b < 5) AS big FROM c", eval.ErrRowTooLarge},
		{"SELECT VALUE ARRAY(SELECT VALUE REPLICATE('x', 10000) FROM a IN c.a WHERE a < 40) FROM c", nil},
		{"SELECT * FROM c", nil},
	} {
		p := compile(t, tc.query, eval.Options{Budget: eval.NewBudget(eval.BudgetParams{})})
		_, err := p.RunDocs([]document.Value{doc})
		if !errors.Is(err, tc.want) && (tc.want != nil || err != nil) {
			t.Errorf("%s: err %v, want %v", tc.query, err, tc.want)
		}
	}
}
