package eval_test

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mayfly-db/mayfly/internal/document"
	"github.com/mayfly-db/mayfly/internal/query/eval"
	"github.com/mayfly-db/mayfly/internal/query/gatewayplan"
	"github.com/mayfly-db/mayfly/internal/query/parser"
	"github.com/mayfly-db/mayfly/internal/query/plan"
	"github.com/mayfly-db/mayfly/internal/query/vector"
)

var update = flag.Bool("update", false, "rewrite the expected output of the golden files")

// goldenNow is the request time of every golden query.
var goldenNow = time.Date(2024, 1, 2, 3, 4, 5, 678901200, time.UTC)

// The golden files under ../testdata are transcripts of blocks separated by
// blank lines. Each block is a directive line, input lines, a "----" line
// and the expected output:
//
//	docs                      input: one JSON document a line; replaces the
//	                          documents later queries read
//	query [params={...}]      input: the query; output: one JSON row a line,
//	                          "(no rows)", or "error: <message>"; with
//	                          vectors={...} in place of params, under that
//	                          vectorEmbeddingPolicy
//	parse                     input: the query; output: the printed tree, or
//	                          "error: <message>"
//	plan [pk=/a,/b/c]         input: the query; output: whether the gateway
//	                          needs a plan, the queryInfo JSON, and with pk=
//	                          the partition-key values the WHERE clause pins
//	                          and the sargable predicates
//
// Lines starting with '#' between blocks are comments.
func TestGolden(t *testing.T) {
	files, err := filepath.Glob("../testdata/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden files: %v", err)
	}
	total := 0
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			total += runGolden(t, f)
		})
	}
	t.Logf("%d golden cases", total)
}

type block struct {
	directive string
	input     []string
	output    []string
	line      int
	comments  []string
}

func parseBlocks(t *testing.T, data string) []*block {
	lines := strings.Split(strings.ReplaceAll(data, "\r\n", "\n"), "\n")
	var blocks []*block
	var comments []string
	for i := 0; i < len(lines); {
		l := lines[i]
		if strings.TrimSpace(l) == "" {
			i++
			continue
		}
		if strings.HasPrefix(l, "#") {
			comments = append(comments, l)
			i++
			continue
		}
		b := &block{directive: l, line: i + 1, comments: comments}
		comments = nil
		i++
		for i < len(lines) && lines[i] != "----" {
			b.input = append(b.input, lines[i])
			i++
		}
		if i >= len(lines) {
			t.Fatalf("line %d: block without ----", b.line)
		}
		i++
		for i < len(lines) && strings.TrimSpace(lines[i]) != "" {
			b.output = append(b.output, lines[i])
			i++
		}
		blocks = append(blocks, b)
	}
	return blocks
}

func runGolden(t *testing.T, path string) int {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	blocks := parseBlocks(t, string(data))
	var docs []document.Value
	cases := 0
	for _, b := range blocks {
		var got []string
		switch {
		case b.directive == "docs":
			docs = docs[:0:0]
			for _, l := range b.input {
				v, err := document.Parse([]byte(l))
				if err != nil {
					t.Fatalf("%s:%d: bad document %q: %v", path, b.line, l, err)
				}
				docs = append(docs, v)
			}
			got = []string{fmt.Sprintf("%d documents", len(docs))}
		case strings.HasPrefix(b.directive, "query"):
			cases++
			got = runQuery(t, b, docs)
		case strings.HasPrefix(b.directive, "plan"):
			cases++
			got = runPlan(t, b)
		case b.directive == "parse":
			cases++
			q, err := parser.Parse(strings.Join(b.input, "\n"))
			if err != nil {
				got = []string{"error: " + err.Error()}
			} else {
				got = []string{q.String()}
				// The printed form must parse back to the same print.
				q2, err := parser.Parse(got[0])
				if err != nil || q2.String() != got[0] {
					t.Errorf("%s:%d: printed form does not round-trip: %q: %v", path, b.line, got[0], err)
				}
			}
		default:
			t.Fatalf("%s:%d: unknown directive %q", path, b.line, b.directive)
		}
		if *update {
			b.output = got
			continue
		}
		if strings.Join(got, "\n") != strings.Join(b.output, "\n") {
			t.Errorf("%s:%d: %s\n%s\ngot:\n%s\nwant:\n%s", path, b.line, b.directive,
				strings.Join(b.input, "\n"), strings.Join(got, "\n"), strings.Join(b.output, "\n"))
		}
	}
	if *update {
		var buf bytes.Buffer
		for i, b := range blocks {
			if i > 0 {
				buf.WriteByte('\n')
			}
			for _, c := range b.comments {
				buf.WriteString(c + "\n")
			}
			buf.WriteString(b.directive + "\n")
			for _, l := range b.input {
				buf.WriteString(l + "\n")
			}
			buf.WriteString("----\n")
			for _, l := range b.output {
				buf.WriteString(l + "\n")
			}
		}
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return cases
}

func runQuery(t *testing.T, b *block, docs []document.Value) []string {
	params := map[string]document.Value{}
	var vectors *vector.Policy
	planar := false
	switch rest := strings.TrimSpace(strings.TrimPrefix(b.directive, "query")); {
	case rest == "planar":
		planar = true
	case strings.HasPrefix(rest, "params="):
		v, err := document.Parse([]byte(strings.TrimPrefix(rest, "params=")))
		if err != nil || v.Kind() != document.Object {
			t.Fatalf("line %d: bad params: %v", b.line, err)
		}
		for _, f := range v.Fields() {
			params[f.Name] = f.Value
		}
	case strings.HasPrefix(rest, "vectors="):
		v, err := document.Parse([]byte(strings.TrimPrefix(rest, "vectors=")))
		if err != nil {
			t.Fatalf("line %d: bad vectors: %v", b.line, err)
		}
		p, err := vector.ParsePolicy(v)
		if err != nil {
			t.Fatalf("line %d: bad vectors: %v", b.line, err)
		}
		vectors = &p
	case rest != "":
		t.Fatalf("line %d: unknown query option %q", b.line, rest)
	}
	text := strings.Join(b.input, "\n")
	rows, err := evalQueryIn(text, params, docs, vectors, planar)
	if err != nil {
		return []string{"error: " + err.Error()}
	}
	if len(rows) == 0 {
		return []string{"(no rows)"}
	}
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = r.String()
	}
	return out
}

// evalQueryIn runs a query over docs under a container's vector embedding
// policy (nil for none).
func evalQueryIn(text string, params map[string]document.Value, docs []document.Value, vectors *vector.Policy, planar bool) ([]document.Value, error) {
	q, err := parser.Parse(text)
	if err != nil {
		return nil, err
	}
	opts := eval.Options{Now: goldenNow, UDF: testUDF, Vectors: vectors, Planar: &planar}
	p, err := eval.Compile(q, params, opts)
	if err != nil {
		return nil, err
	}
	i := 0
	rows, err := p.Run(func() (document.Value, eval.DocMeta, bool, error) {
		if i >= len(docs) {
			return document.Undef, eval.DocMeta{}, false, nil
		}
		i++
		return docs[i-1], eval.DocMeta{DocumentID: int64(i)}, true, nil
	})
	if err != nil {
		return nil, err
	}
	if p.Streaming() {
		// Streaming programs must give the same rows document by document.
		var streamed []document.Value
		for i, d := range docs {
			r, err := p.Rows(d, eval.DocMeta{DocumentID: int64(i + 1)})
			if err != nil {
				return nil, fmt.Errorf("Rows: %w", err)
			}
			streamed = append(streamed, r...)
		}
		if len(streamed) != len(rows) {
			return nil, fmt.Errorf("Rows gave %d rows, Run %d", len(streamed), len(rows))
		}
		for i := range rows {
			if rows[i].String() != streamed[i].String() {
				return nil, fmt.Errorf("Rows and Run differ at row %d", i)
			}
		}
	}
	return rows, nil
}

// testUDF knows one function, udf.double(x).
func testUDF(name string, args []document.Value) (document.Value, error) {
	if name == "double" && len(args) == 1 && args[0].Kind() == document.Number {
		return document.Float(args[0].Float() * 2), nil
	}
	return document.Undef, fmt.Errorf("no such function %q", name)
}

func runPlan(t *testing.T, b *block) []string {
	q, err := parser.Parse(strings.Join(b.input, "\n"))
	if err != nil {
		return []string{"error: " + err.Error()}
	}
	params := map[string]document.Value{"@n": document.Int(3), "@pk": document.Str("p1")}
	info := gatewayplan.Describe(q, params)
	if info.RewrittenQuery != "" {
		// The SDKs send the rewritten query back with the filter replaced.
		text := strings.ReplaceAll(info.RewrittenQuery, gatewayplan.Filter, "true")
		rq, err := parser.Parse(text)
		if err == nil {
			_, err = eval.Compile(rq, params, eval.Options{})
		}
		if err != nil {
			t.Errorf("line %d: rewritten query %q: %v", b.line, text, err)
		}
	}
	out := []string{fmt.Sprintf("gateway plan: %v", gatewayplan.NeedsGatewayPlan(q)), string(gatewayplan.JSON(info))}
	if rest := strings.TrimSpace(strings.TrimPrefix(b.directive, "plan")); rest != "" {
		var paths [][]string
		for _, p := range strings.Split(strings.TrimPrefix(rest, "pk="), ",") {
			path, err := document.ParsePath(p)
			if err != nil {
				t.Fatalf("line %d: %v", b.line, err)
			}
			paths = append(paths, path)
		}
		vals, ok := plan.PartitionKeyFilter(q, params, paths)
		out = append(out, fmt.Sprintf("pinned: %v %v", ok, document.Arr(vals)))
		for _, p := range plan.Predicates(q, params) {
			if p.Op == plan.OfKinds {
				out = append(out, fmt.Sprintf("predicate: %s %s", strings.Join(p.Path, "/"), p.Kinds.Name()))
				continue
			}
			out = append(out, fmt.Sprintf("predicate: %s %s %v %v", strings.Join(p.Path, "/"), p.Op, p.Value, document.Arr(p.Values)))
		}
	}
	return out
}
