package ast

import (
	"strconv"
	"strings"

	"github.com/mayfly-db/mayfly/internal/document"
)

// String prints q as query text that parses back to an equal tree. Binary
// operations are fully parenthesised so that printing never depends on
// precedence.
func (q *Query) String() string {
	var b strings.Builder
	writeQuery(&b, q)
	return b.String()
}

// ExprString prints one expression.
func ExprString(e Expr) string {
	var b strings.Builder
	writeExpr(&b, e)
	return b.String()
}

func writeQuery(b *strings.Builder, q *Query) {
	b.WriteString("SELECT ")
	s := &q.Select
	if s.Distinct {
		b.WriteString("DISTINCT ")
	}
	if s.Top != nil {
		b.WriteString("TOP ")
		writeExpr(b, s.Top)
		b.WriteByte(' ')
	}
	switch {
	case s.Star:
		b.WriteByte('*')
	case s.Value != nil:
		b.WriteString("VALUE ")
		writeExpr(b, s.Value)
	default:
		for i, it := range s.Items {
			if i > 0 {
				b.WriteString(", ")
			}
			writeExpr(b, it.Expr)
			if it.Alias != "" {
				b.WriteString(" AS ")
				b.WriteString(it.Alias)
			}
		}
	}
	if q.From != nil {
		b.WriteString(" FROM ")
		writeSource(b, q.From)
	}
	for _, j := range q.Joins {
		b.WriteString(" JOIN ")
		writeSource(b, j)
	}
	if q.Where != nil {
		b.WriteString(" WHERE ")
		writeExpr(b, q.Where)
	}
	if len(q.GroupBy) > 0 {
		b.WriteString(" GROUP BY ")
		for i, e := range q.GroupBy {
			if i > 0 {
				b.WriteString(", ")
			}
			writeExpr(b, e)
		}
	}
	if len(q.OrderBy) > 0 {
		b.WriteString(" ORDER BY ")
		for i, o := range q.OrderBy {
			if i > 0 {
				b.WriteString(", ")
			}
			if o.Rank {
				b.WriteString("RANK ")
			}
			writeExpr(b, o.Expr)
			switch {
			case o.Desc:
				b.WriteString(" DESC")
			case o.Explicit:
				b.WriteString(" ASC")
			}
		}
	}
	if q.Offset != nil {
		b.WriteString(" OFFSET ")
		writeExpr(b, q.Offset)
		b.WriteString(" LIMIT ")
		writeExpr(b, q.Limit)
	}
}

func writeSource(b *strings.Builder, s *FromSource) {
	if s.Iterate {
		b.WriteString(s.Alias)
		b.WriteString(" IN ")
		writeExpr(b, s.Expr)
		return
	}
	writeExpr(b, s.Expr)
	if s.AliasWritten {
		b.WriteString(" AS ")
		b.WriteString(s.Alias)
	}
}

var unaryText = [...]string{OpNeg: "-", OpPlus: "+", OpBitNot: "~", OpNot: "NOT "}

func writeExpr(b *strings.Builder, e Expr) {
	switch e := e.(type) {
	case *Literal:
		writeLiteral(b, e)
	case *Param:
		b.WriteString(e.Name)
	case *Ident:
		b.WriteString(e.Name)
	case *Member:
		if lit, ok := e.X.(*Literal); ok && lit.Value.Kind() == document.Number {
			// "0 .a" printed as "0.a" would read as the number "0."
			// followed by a name.
			b.WriteByte('(')
			writeExpr(b, e.X)
			b.WriteByte(')')
		} else {
			writeExpr(b, e.X)
		}
		if !e.Quoted && IsIdentifier(e.Name) {
			b.WriteByte('.')
			b.WriteString(e.Name)
		} else {
			b.WriteByte('[')
			b.Write(document.AppendString(nil, e.Name))
			b.WriteByte(']')
		}
	case *Index:
		writeExpr(b, e.X)
		b.WriteByte('[')
		writeExpr(b, e.Index)
		b.WriteByte(']')
	case *Unary:
		b.WriteByte('(')
		b.WriteString(unaryText[e.Op])
		writeExpr(b, e.X)
		b.WriteByte(')')
	case *Binary:
		b.WriteByte('(')
		writeExpr(b, e.L)
		b.WriteByte(' ')
		b.WriteString(e.Op.String())
		b.WriteByte(' ')
		writeExpr(b, e.R)
		b.WriteByte(')')
	case *Ternary:
		b.WriteByte('(')
		writeExpr(b, e.Cond)
		b.WriteString(" ? ")
		writeExpr(b, e.Then)
		b.WriteString(" : ")
		writeExpr(b, e.Else)
		b.WriteByte(')')
	case *Between:
		b.WriteByte('(')
		writeExpr(b, e.X)
		if e.Not {
			b.WriteString(" NOT")
		}
		b.WriteString(" BETWEEN ")
		writeExpr(b, e.Lo)
		b.WriteString(" AND ")
		writeExpr(b, e.Hi)
		b.WriteByte(')')
	case *In:
		b.WriteByte('(')
		writeExpr(b, e.X)
		if e.Not {
			b.WriteString(" NOT")
		}
		b.WriteString(" IN (")
		for i, x := range e.List {
			if i > 0 {
				b.WriteString(", ")
			}
			writeExpr(b, x)
		}
		b.WriteString("))")
	case *Like:
		b.WriteByte('(')
		writeExpr(b, e.X)
		if e.Not {
			b.WriteString(" NOT")
		}
		b.WriteString(" LIKE ")
		writeExpr(b, e.Pattern)
		if e.Escape != nil {
			b.WriteString(" ESCAPE ")
			writeExpr(b, e.Escape)
		}
		b.WriteByte(')')
	case *Call:
		if e.UDF {
			b.WriteString("udf.")
		}
		b.WriteString(e.Name)
		b.WriteByte('(')
		for i, x := range e.Args {
			if i > 0 {
				b.WriteString(", ")
			}
			writeExpr(b, x)
		}
		b.WriteByte(')')
	case *ArrayLit:
		b.WriteByte('[')
		for i, x := range e.Elems {
			if i > 0 {
				b.WriteString(", ")
			}
			writeExpr(b, x)
		}
		b.WriteByte(']')
	case *ObjectLit:
		b.WriteByte('{')
		for i, f := range e.Fields {
			if i > 0 {
				b.WriteString(", ")
			}
			b.Write(document.AppendString(nil, f.Name))
			b.WriteString(": ")
			writeExpr(b, f.Value)
		}
		b.WriteByte('}')
	case *Exists:
		b.WriteString("EXISTS(")
		writeQuery(b, e.Query)
		b.WriteByte(')')
	case *ArrayQuery:
		b.WriteString("ARRAY(")
		writeQuery(b, e.Query)
		b.WriteByte(')')
	case *Subquery:
		b.WriteByte('(')
		writeQuery(b, e.Query)
		b.WriteByte(')')
	case nil:
		b.WriteString("<nil>")
	}
}

func writeLiteral(b *strings.Builder, e *Literal) {
	v := e.Value
	switch v.Kind() {
	case document.Undefined:
		b.WriteString("undefined")
	case document.Number:
		if e.Text != "" {
			b.WriteString(e.Text)
			return
		}
		if v.IsInt() {
			b.WriteString(strconv.FormatInt(v.Int(), 10))
			return
		}
		b.Write(document.AppendFloat(nil, v.Float()))
	default:
		b.Write(v.AppendJSON(nil))
	}
}

// IsIdentifier reports whether s can be written as a bare name after a dot.
func IsIdentifier(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '_', c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
		case c >= '0' && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// Equal reports whether two expressions print the same, which is how GROUP
// BY matches select-list expressions to grouping keys.
func Equal(a, b Expr) bool { return ExprString(a) == ExprString(b) }
