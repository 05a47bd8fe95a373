package plan

import (
	"strings"

	"github.com/mayfly-db/mayfly/internal/document"
	"github.com/mayfly-db/mayfly/internal/query/ast"
	"github.com/mayfly-db/mayfly/internal/query/fulltext"
)

// WordTerm is a full-text term of a filter: a call of FullTextContains,
// FullTextContainsAll or FullTextContainsAny in the top-level AND chain of
// the WHERE clause, on a property path of the document, with constant
// phrases. Every document that passes the filter has, in its text at
// Path, every word of every phrase (Any false), or every word of one of
// the phrases (Any true): what an index of the texts' words can name the
// candidates by. The evaluator still decides: a phrase's words must also
// follow one another.
type WordTerm struct {
	Path    []string
	Any     bool
	Phrases [][]string // each phrase's words (fulltext.Words)
}

// WordTerms returns the full-text terms of q's filter. A query with a
// JOIN has none: its alias could be bound again.
func WordTerms(q *ast.Query, params map[string]document.Value) []WordTerm {
	if q.Where == nil || len(q.Joins) > 0 {
		return nil
	}
	var out []WordTerm
	for _, e := range conjuncts(q.Where) {
		call, ok := e.(*ast.Call)
		if !ok || call.UDF || len(call.Args) < 2 {
			continue
		}
		var t WordTerm
		switch {
		case strings.EqualFold(call.Name, "FullTextContains"):
			if len(call.Args) != 2 {
				continue
			}
		case strings.EqualFold(call.Name, "FullTextContainsAll"):
		case strings.EqualFold(call.Name, "FullTextContainsAny"):
			t.Any = true
		default:
			continue
		}
		path, ok := DocPath(q, call.Args[0])
		if !ok {
			continue
		}
		t.Path = path
		for _, a := range call.Args[1:] {
			v, ok := ast.Constant(a, params)
			if !ok || v.Kind() != document.String {
				// Not a phrase: the call is undefined, which no
				// document passes; the evaluator says so.
				t.Phrases = nil
				break
			}
			t.Phrases = append(t.Phrases, fulltext.Words(v.Str()))
		}
		if t.Phrases != nil {
			out = append(out, t)
		}
	}
	return out
}
