package eval

import (
	"fmt"
	"math/rand"
	"strconv"
	"strings"
	"sync"

	"github.com/mayfly-db/mayfly/internal/document"
	"github.com/mayfly-db/mayfly/internal/query/ast"
)

// builtin is one system function. Its arguments are evaluated before fn is
// called; fn returns undefined for arguments of the wrong types, as the
// service does, and an error only for conditions that fail the query.
type builtin struct {
	min, max int // max -1: variadic
	fn       func(c *ctx, args []document.Value) (document.Value, error)
}

func (b *builtin) arity() string {
	switch {
	case b.min == b.max:
		return strconv.Itoa(b.min)
	case b.max < 0:
		return "at least " + strconv.Itoa(b.min)
	}
	return fmt.Sprintf("between %d and %d", b.min, b.max)
}

// builtins holds the system functions by lower-case name. It is filled by
// init functions in the funcs_*.go files.
var builtins = map[string]*builtin{}

func register(min, max int, fn func(c *ctx, args []document.Value) (document.Value, error), names ...string) {
	for _, n := range names {
		builtins[strings.ToLower(n)] = &builtin{min: min, max: max, fn: fn}
	}
}

// pure registers a function that needs no evaluation context and cannot
// fail.
func pure(min, max int, fn func(args []document.Value) document.Value, names ...string) {
	register(min, max, func(_ *ctx, args []document.Value) (document.Value, error) {
		return fn(args), nil
	}, names...)
}

func lower(s string) string { return strings.ToLower(s) }

func (c *ctx) call(x *ast.Call, s scope) (document.Value, error) {
	if !x.UDF {
		if v, ok := c.aggregateValue(x); ok {
			return v, nil
		}
	}
	if len(c.prog.vectors) > 0 {
		if vc, ok := c.prog.vectors[x]; ok {
			return c.vectorDistance(vc, s)
		}
	}
	args := make([]document.Value, len(x.Args))
	for i, a := range x.Args {
		v, err := c.eval(a, s)
		if err != nil {
			return undef, err
		}
		args[i] = v
		switch v.Kind() {
		case document.Array, document.Object:
			if err := c.charge(v.Len()); err != nil {
				return undef, err
			}
		case document.String:
			if err := c.charge(v.Len() / 16); err != nil {
				return undef, err
			}
		}
	}
	if x.UDF {
		if c.prog.opts.UDF == nil {
			return undef, errAt(x, "SC2006", "unknown UDF 'udf.%s'.", x.Name)
		}
		v, err := c.prog.opts.UDF(x.Name, args)
		if err != nil {
			if qe, ok := err.(*ast.Error); ok {
				return undef, qe
			}
			return undef, &ast.Error{Code: "SC3010", Message: fmt.Sprintf("udf.%s failed: %v", x.Name, err),
				Pos: x.Pos, End: x.Pos, Err: err}
		}
		return v, nil
	}
	b := c.prog.funcs[x]
	if b == nil {
		// An aggregate outside a grouped projection cannot be reached after
		// Compile; answer undefined rather than fail.
		return undef, nil
	}
	return b.fn(c, args)
}

// newRand returns a seeded source that is safe for the concurrent
// evaluations of one Program.
//
// The source is made at the first call: seeding one costs about ten
// microseconds, and every query compiles a program while few call RAND
// (it was three tenths of a point query's time, BenchmarkQueryByID).
func newRand(seed int64) func() float64 {
	var r *rand.Rand
	var mu sync.Mutex
	return func() float64 {
		mu.Lock()
		defer mu.Unlock()
		if r == nil {
			r = rand.New(rand.NewSource(seed))
		}
		return r.Float64()
	}
}

func init() {
	register(1, 1, func(c *ctx, a []document.Value) (document.Value, error) {
		if a[0].Kind() != document.Object {
			return undef, nil
		}
		return document.Int(c.meta.DocumentID), nil
	}, "DocumentId")
	pure(3, 3, func(a []document.Value) document.Value {
		if a[0].Kind() == document.Bool && a[0].Bool() {
			return a[1]
		}
		return a[2]
	}, "IIF")
}
