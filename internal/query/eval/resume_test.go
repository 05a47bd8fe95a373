package eval_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/mayfly-db/mayfly/internal/document"
	"github.com/mayfly-db/mayfly/internal/query/eval"
)

// resumeDocs are documents whose ORDER BY keys tie in runs, some without
// the key, some making several rows under a JOIN.
func resumeDocs() []document.Value {
	var docs []document.Value
	for i := range 40 {
		var tags []document.Value
		for j := range i % 3 {
			tags = append(tags, document.Int(int64((i+j)%4)))
		}
		fields := []document.Field{
			{Name: "id", Value: document.Str(fmt.Sprint(i))},
			{Name: "t", Value: document.Arr(tags)},
		}
		if i%7 != 0 {
			fields = append(fields, document.Field{Name: "k", Value: document.Int(int64(i % 5))})
		}
		docs = append(docs, document.Obj(fields))
	}
	return docs
}

func eachOf(docs []document.Value) eval.Each {
	return func(yield func(document.Value, eval.DocMeta) error) error {
		for i, d := range docs {
			order := binary.BigEndian.AppendUint64(nil, uint64(i))
			if err := yield(d, eval.DocMeta{DocumentID: int64(i), Order: order}); err != nil {
				return err
			}
		}
		return nil
	}
}

// Pages asked for after the mark of the page before's last row make the
// same rows, in the same order, as one run, for pages of any size, and
// hold no more rows than a page: with room for 10 rows in memory, a run
// of every row is refused, the pages are not.
func TestRunAfterPages(t *testing.T) {
	docs := resumeDocs()
	for _, text := range []string{
		"SELECT c.id FROM c ORDER BY c.k",
		"SELECT c.id FROM c ORDER BY c.k DESC",
		"SELECT c.id, x FROM c JOIN x IN c.t ORDER BY x DESC, c.k",
		"SELECT c.id, x FROM c JOIN x IN c.t ORDER BY x",
		"SELECT VALUE c.id FROM c WHERE c.k > 1 ORDER BY c.k, c.id DESC",
		// DISTINCT rows repeat within and across pages and documents.
		"SELECT DISTINCT VALUE c.k FROM c ORDER BY c.k",
		"SELECT DISTINCT VALUE c.k FROM c ORDER BY c.k DESC",
		"SELECT DISTINCT VALUE x FROM c JOIN x IN c.t ORDER BY x DESC",
		"SELECT DISTINCT c.k, x FROM c JOIN x IN c.t ORDER BY c.k, x",
		"SELECT DISTINCT x, c.k FROM c JOIN x IN c.t ORDER BY x",
	} {
		whole, err := compile(t, text, eval.Options{}).RunEach(eachOf(docs), 0, nil)
		if err != nil {
			t.Fatalf("%s: %v", text, err)
		}
		p := compile(t, text, eval.Options{MaxSortRows: 10})
		if !p.Resumable() {
			t.Fatalf("%s: not resumable", text)
		}
		if _, err := p.RunEach(eachOf(docs), 0, nil); !errors.Is(err, eval.ErrSort) && len(whole) > 10 {
			t.Fatalf("%s: a run of %d rows with room for 10: err %v, want ErrSort", text, len(whole), err)
		}
		for _, size := range []int{1, 3, 7} {
			var got []string
			var after *eval.Mark
			for page := 0; ; page++ {
				if page > len(whole)+1 {
					t.Fatalf("%s: pages of %d go on past %d rows", text, size, len(whole))
				}
				rows, marks, err := p.RunAfter(eachOf(docs), size+1, 0, nil, after)
				if err != nil {
					t.Fatalf("%s: page %d of %d rows: %v", text, page, size, err)
				}
				if len(marks) != len(rows) {
					t.Fatalf("%s: %d marks for %d rows", text, len(marks), len(rows))
				}
				n := min(size, len(rows))
				for _, r := range rows[:n] {
					got = append(got, string(r.JSON()))
				}
				if len(rows) <= size {
					break
				}
				after = &marks[n-1]
			}
			var want []string
			for _, r := range whole {
				want = append(want, string(r.JSON()))
			}
			if !slices.Equal(got, want) {
				t.Errorf("%s: pages of %d made\n%v\nwant\n%v", text, size, got, want)
			}
		}
	}
}

func TestResumable(t *testing.T) {
	for text, want := range map[string]bool{
		"SELECT * FROM c ORDER BY c.a":                          true,
		"SELECT c.a FROM c JOIN x IN c.t ORDER BY x, c.a":       true,
		"SELECT * FROM c":                                       false,
		"SELECT TOP 3 * FROM c ORDER BY c.a":                    false,
		"SELECT * FROM c ORDER BY c.a OFFSET 1 LIMIT 2":         false,
		"SELECT DISTINCT VALUE c.a FROM c ORDER BY c.a":         true,
		"SELECT DISTINCT c.a, c.b FROM c ORDER BY c.b":          true,
		"SELECT DISTINCT * FROM c ORDER BY c.b":                 true,
		"SELECT DISTINCT VALUE c.a FROM c ORDER BY c.b":         false,
		"SELECT DISTINCT c.a FROM c ORDER BY c.b":               false,
		"SELECT c.a, COUNT(1) AS n FROM c GROUP BY c.a":         false,
		"SELECT VALUE COUNT(1) FROM c":                          false,
		"SELECT * FROM c ORDER BY RANK FullTextScore(c.a, 'x')": false,
	} {
		if got := compile(t, text, eval.Options{}).Resumable(); got != want {
			t.Errorf("%s: Resumable() = %v, want %v", text, got, want)
		}
	}
	p := compile(t, "SELECT * FROM c", eval.Options{})
	if _, _, err := p.RunAfter(eachOf(nil), 1, 0, nil, nil); err == nil {
		t.Errorf("RunAfter of a program without ORDER BY: no error")
	}
}

// RunAfter's extra rows are held while they fit the budget's memory: with
// room, a run returns them too; with room for the page's rows but not for
// the extra ones, it returns the page's rows rather than failing; and a
// run that needs more than the room for its own rows still fails.
func TestRunAfterExtraRows(t *testing.T) {
	var docs []document.Value
	for i := range 200 {
		docs = append(docs, document.Obj([]document.Field{
			{Name: "id", Value: document.Str(fmt.Sprint(i))},
			{Name: "k", Value: document.Int(int64((i * 37) % 200))},
			{Name: "pad", Value: document.Str(fmt.Sprintf("%0500d", i))},
		}))
	}
	const text = "SELECT * FROM c ORDER BY c.k"
	for _, tc := range []struct {
		name   string
		memory int
		rows   int // -1: the run fails
	}{
		{"room", 1 << 20, 11 + 60},
		{"room for the page", 80 << 10, 11},
		{"no room", 4 << 10, -1},
	} {
		p := compile(t, text, eval.Options{Budget: eval.NewBudget(eval.BudgetParams{MaxMemory: tc.memory})})
		rows, marks, err := p.RunAfter(eachOf(docs), 11, 60, nil, nil)
		if tc.rows < 0 {
			if !errors.Is(err, eval.ErrMemory) {
				t.Errorf("%s: %d rows, err %v, want ErrMemory", tc.name, len(rows), err)
			}
			continue
		}
		if err != nil || len(rows) != tc.rows || len(marks) != len(rows) {
			t.Errorf("%s: %d rows, %d marks, err %v; want %d rows", tc.name, len(rows), len(marks), err, tc.rows)
			continue
		}
		for i, r := range rows {
			if k := r.Get("k").Int(); k != int64(i) {
				t.Errorf("%s: row %d has k %d", tc.name, i, k)
				break
			}
		}
	}
	// Under DISTINCT, where every row comes twice: the rows given up for
	// memory leave the page's distinct rows, not the page's count of
	// rows with their repeats among them.
	const distinct = "SELECT DISTINCT c.j, c.pad FROM c ORDER BY c.j"
	var pairs []document.Value
	for i := range 200 {
		j := i / 2 // the rows past those the memory holds are later ones
		pairs = append(pairs, document.Obj([]document.Field{
			{Name: "id", Value: document.Str(fmt.Sprint(i))},
			{Name: "j", Value: document.Int(int64(j))},
			{Name: "pad", Value: document.Str(fmt.Sprintf("%0500d", j))},
		}))
	}
	for _, tc := range []struct {
		name   string
		memory int
		rows   int
	}{
		{"room", 1 << 20, 11 + 60},
		{"room for the page", 80 << 10, 11},
	} {
		p := compile(t, distinct, eval.Options{Budget: eval.NewBudget(eval.BudgetParams{MaxMemory: tc.memory})})
		rows, marks, err := p.RunAfter(eachOf(pairs), 11, 60, nil, nil)
		if err != nil || len(rows) != tc.rows || len(marks) != len(rows) {
			t.Errorf("DISTINCT, %s: %d rows, %d marks, err %v; want %d rows", tc.name, len(rows), len(marks), err, tc.rows)
			continue
		}
		for i, r := range rows {
			if j := r.Get("j").Int(); j != int64(i) {
				t.Errorf("DISTINCT, %s: row %d has j %d", tc.name, i, j)
				break
			}
		}
	}
}
