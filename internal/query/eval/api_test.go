package eval_test

import (
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/mayfly-db/mayfly/internal/document"
	"github.com/mayfly-db/mayfly/internal/query/ast"
	"github.com/mayfly-db/mayfly/internal/query/eval"
	"github.com/mayfly-db/mayfly/internal/query/parser"
)

func compile(t *testing.T, text string, opts eval.Options) *eval.Program {
	t.Helper()
	q, err := parser.Parse(text)
	if err != nil {
		t.Fatalf("parse %q: %v", text, err)
	}
	p, err := eval.Compile(q, nil, opts)
	if err != nil {
		t.Fatalf("compile %q: %v", text, err)
	}
	return p
}

func TestStreaming(t *testing.T) {
	for text, want := range map[string]bool{
		"SELECT * FROM c":                                                true,
		"SELECT VALUE t FROM c JOIN t IN c.tags":                         true,
		"SELECT c.a FROM c WHERE c.b = 1":                                true,
		"SELECT 1":                                                       false,
		"SELECT * FROM c ORDER BY c.a":                                   false,
		"SELECT TOP 1 * FROM c":                                          false,
		"SELECT * FROM c OFFSET 1 LIMIT 1":                               false,
		"SELECT DISTINCT VALUE c.a FROM c":                               false,
		"SELECT VALUE COUNT(1) FROM c":                                   false,
		"SELECT c.a FROM c GROUP BY c.a":                                 false,
		"SELECT VALUE ARRAY(SELECT VALUE COUNT(1) FROM t IN c.x) FROM c": true,
	} {
		if got := compile(t, text, eval.Options{}).Streaming(); got != want {
			t.Errorf("%s: Streaming() = %v, want %v", text, got, want)
		}
	}
}

func TestRowsRefusesNonStreaming(t *testing.T) {
	p := compile(t, "SELECT * FROM c ORDER BY c.a", eval.Options{})
	_, err := p.Rows(document.Obj(nil), eval.DocMeta{})
	var qe *ast.Error
	if !errors.As(err, &qe) {
		t.Fatalf("Rows on an ORDER BY program: %v, want an *ast.Error", err)
	}
}

func TestRunWithoutFromReadsNothing(t *testing.T) {
	p := compile(t, "SELECT VALUE 1 + 1", eval.Options{})
	rows, err := p.Run(func() (document.Value, eval.DocMeta, bool, error) {
		t.Fatal("a query without FROM read a document")
		return document.Undef, eval.DocMeta{}, false, nil
	})
	if err != nil || len(rows) != 1 || rows[0].String() != "2" {
		t.Fatalf("got %v, %v", rows, err)
	}
}

func TestSourceErrorsPropagate(t *testing.T) {
	boom := errors.New("storage failed")
	p := compile(t, "SELECT * FROM c ORDER BY c.a", eval.Options{})
	_, err := p.Run(func() (document.Value, eval.DocMeta, bool, error) {
		return document.Undef, eval.DocMeta{}, false, boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("got %v, want the source's error", err)
	}
}

func TestWorkLimit(t *testing.T) {
	p := compile(t, "SELECT VALUE COUNT(1) FROM c JOIN a IN c.x JOIN b IN c.x JOIN d IN c.x JOIN e IN c.x",
		eval.Options{MaxWork: 10_000})
	arr := make([]document.Value, 50)
	for i := range arr {
		arr[i] = document.Int(int64(i))
	}
	doc := document.Obj([]document.Field{{Name: "x", Value: document.Arr(arr)}})
	_, err := p.RunDocs([]document.Value{doc})
	var qe *ast.Error
	if !errors.As(err, &qe) || !strings.Contains(qe.Message, "maximum amount of work") {
		t.Fatalf("got %v, want the work limit error", err)
	}
}

func TestUnknownUDF(t *testing.T) {
	p := compile(t, "SELECT VALUE udf.f(1)", eval.Options{})
	_, err := p.RunDocs(nil)
	if err == nil || !strings.Contains(err.Error(), "unknown UDF") {
		t.Fatalf("got %v, want unknown UDF", err)
	}
}

func TestConcurrentUse(t *testing.T) {
	p := compile(t, "SELECT VALUE [RAND() < 1, RegexMatch(c.s, 'a+b')] FROM c", eval.Options{})
	doc := document.Obj([]document.Field{{Name: "s", Value: document.Str("xaab")}})
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 100; j++ {
				rows, err := p.Rows(doc, eval.DocMeta{})
				if err != nil || len(rows) != 1 || rows[0].String() != "[true,true]" {
					t.Errorf("got %v, %v", rows, err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// A Streamer gives each document the rows Program.Rows gives it, through
// the shortcut for FROM over the document and the general walk alike,
// whatever the documents before it produced.
func TestStreamerRows(t *testing.T) {
	docs := []string{
		`{"id":"a","n":1,"tags":["x","y"],"kids":[{"n":5},{"n":6}]}`,
		`{"id":"b","n":3,"tags":[]}`,
		`{"id":"c","n":7,"tags":["z"],"kids":{"n":1}}`,
		`{"id":"d"}`,
	}
	for _, text := range []string{
		"SELECT * FROM c",
		"SELECT c.id FROM c WHERE c.n > 2",
		"SELECT VALUE r.id FROM root r",
		"SELECT VALUE t FROM c JOIN t IN c.tags",
		"SELECT VALUE t FROM t IN c.tags",
		"SELECT VALUE k.n FROM c.kids k",
		"SELECT c.id, ARRAY(SELECT VALUE t FROM t IN c.tags) AS ts FROM c",
	} {
		t.Run(text, func(t *testing.T) {
			p := compile(t, text, eval.Options{})
			st, err := p.Streamer()
			if err != nil {
				t.Fatal(err)
			}
			for _, raw := range docs {
				doc, err := document.Parse([]byte(raw))
				if err != nil {
					t.Fatal(err)
				}
				want, werr := p.Rows(doc, eval.DocMeta{})
				got, gerr := st.Rows(doc, eval.DocMeta{})
				if (werr == nil) != (gerr == nil) || document.Arr(got).String() != document.Arr(want).String() {
					t.Errorf("%s: Streamer %v (%v), Program.Rows %v (%v)", raw, got, gerr, want, werr)
				}
			}
		})
	}
	if _, err := compile(t, "SELECT TOP 1 * FROM c", eval.Options{}).Streamer(); err == nil {
		t.Error("a Streamer of a TOP query")
	}
}

// MaxWork bounds each document a Streamer evaluates, not all of them
// together.
func TestStreamerWorkPerDocument(t *testing.T) {
	p := compile(t, "SELECT * FROM c WHERE c.n > 0", eval.Options{MaxWork: 20})
	st, err := p.Streamer()
	if err != nil {
		t.Fatal(err)
	}
	doc := document.Obj([]document.Field{{Name: "n", Value: document.Int(1)}})
	for i := range 100 {
		if rows, err := st.Rows(doc, eval.DocMeta{}); err != nil || len(rows) != 1 {
			t.Fatalf("document %d: %v, %v", i, rows, err)
		}
	}
}

// Stop says after how many rows RunEach reads no further: checked against
// RunEach itself over documents that each make one row of their own.
func TestStop(t *testing.T) {
	for _, tc := range []struct {
		text    string
		n, want int
	}{
		{"SELECT * FROM c", 10, 10},
		{"SELECT TOP 5 * FROM c", 10, 5},
		{"SELECT TOP 50 * FROM c", 10, 10},
		{"SELECT * FROM c OFFSET 3 LIMIT 4", 10, 7},
		{"SELECT * FROM c OFFSET 3 LIMIT 40", 10, 13},
		{"SELECT DISTINCT VALUE c.b FROM c", 5, 5},
		{"SELECT * FROM c ORDER BY c.b", 10, -1},
		{"SELECT DISTINCT VALUE c.b FROM c ORDER BY c.b", 10, -1},
		{"SELECT VALUE COUNT(1) FROM c", 10, -1},
	} {
		p := compile(t, tc.text, eval.Options{})
		if got := p.Stop(tc.n); got != tc.want {
			t.Errorf("%s: Stop(%d) = %d, want %d", tc.text, tc.n, got, tc.want)
		}
		read, passed := 0, 0
		_, err := p.RunEach(func(yield func(document.Value, eval.DocMeta) error) error {
			for i := range 100 {
				read++
				if err := yield(document.Obj([]document.Field{{Name: "b", Value: document.Int(int64(i))}}), eval.DocMeta{}); err != nil {
					return err
				}
			}
			return nil
		}, tc.n, &passed)
		if err != nil {
			t.Fatalf("%s: %v", tc.text, err)
		}
		want := tc.want
		if want < 0 {
			want = 100
		}
		if read != want {
			t.Errorf("%s: RunEach(%d) read %d documents, Stop says %d", tc.text, tc.n, read, tc.want)
		}
	}
}
