package eval_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/mayfly-db/mayfly/internal/document"
	"github.com/mayfly-db/mayfly/internal/query/ast"
	"github.com/mayfly-db/mayfly/internal/query/eval"
)

// TestCompileRefusesDeepTrees: the compiler and evaluator recurse once per
// level, so a tree built by hand (not by the parser, which bounds it) that
// is deeper than the limit is refused, not walked until the stack runs out.
func TestCompileRefusesDeepTrees(t *testing.T) {
	const levels = 2_000_000
	one := &ast.Literal{Value: document.Int(1)}
	deep := map[string]func() ast.Expr{
		"add": func() ast.Expr {
			var e ast.Expr = one
			for range levels {
				e = &ast.Binary{Op: ast.OpAdd, L: e, R: one}
			}
			return e
		},
		"members": func() ast.Expr {
			var e ast.Expr = &ast.Ident{Name: "c"}
			for range levels {
				e = &ast.Member{X: e, Name: "a"}
			}
			return e
		},
		"subqueries": func() ast.Expr {
			var e ast.Expr = one
			for range levels / 2 {
				e = &ast.Subquery{Query: &ast.Query{Select: ast.Select{Value: e}}}
			}
			return e
		},
	}
	for name, build := range deep {
		t.Run(name, func(t *testing.T) {
			q := &ast.Query{
				Select: ast.Select{Star: true},
				From:   &ast.FromSource{Alias: "c", Expr: &ast.Ident{Name: "c"}},
				Where:  build(),
			}
			p, err := eval.Compile(q, nil, eval.Options{})
			var qe *ast.Error
			if !errors.As(err, &qe) || !strings.Contains(qe.Message, "nested too deeply") {
				if err == nil {
					_, err = p.Rows(document.Obj(nil), eval.DocMeta{})
				}
				t.Fatalf("compiled a tree %d levels deep (then %v); want the depth error", levels, err)
			}
		})
	}
}
