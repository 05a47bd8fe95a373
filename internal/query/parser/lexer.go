package parser

import (
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/mayfly-db/mayfly/internal/document"
	"github.com/mayfly-db/mayfly/internal/query/ast"
)

type tokKind uint8

const (
	tEOF tokKind = iota
	tWord
	tNumber
	tString
	tParam
	tPunct // operators and punctuation; text holds the symbol
)

type token struct {
	kind tokKind
	text string // as written (for tString: the source text including quotes)
	val  document.Value
	pos  int
	end  int
}

// lexer turns query text into tokens. It never fails: malformed input
// becomes an error token the parser reports.
type lexer struct {
	src string
	pos int
	err *ast.Error
}

// three- and two-character operators, longest first.
var operators = []string{">>>", "<<", ">>", "<=", ">=", "!=", "<>", "||", "??",
	"+", "-", "*", "/", "%", "=", "<", ">", "&", "|", "^", "~", "!",
	"(", ")", "[", "]", "{", "}", ",", ".", ":", "?"}

func (l *lexer) next() token {
	l.skipSpace()
	if l.pos >= len(l.src) {
		return token{kind: tEOF, pos: len(l.src), end: len(l.src)}
	}
	start := l.pos
	c := l.src[l.pos]
	switch {
	case isIdentStart(c):
		for l.pos < len(l.src) && isIdentPart(l.src[l.pos]) {
			l.pos++
		}
		return token{kind: tWord, text: l.src[start:l.pos], pos: start, end: l.pos}
	case c >= '0' && c <= '9', c == '.' && l.pos+1 < len(l.src) && l.src[l.pos+1] >= '0' && l.src[l.pos+1] <= '9':
		return l.number()
	case c == '\'' || c == '"':
		return l.str(c)
	case c == '@':
		l.pos++
		for l.pos < len(l.src) && isIdentPart(l.src[l.pos]) {
			l.pos++
		}
		if l.pos == start+1 {
			return l.bad(start, "@")
		}
		return token{kind: tParam, text: l.src[start:l.pos], pos: start, end: l.pos}
	}
	for _, op := range operators {
		if strings.HasPrefix(l.src[l.pos:], op) {
			l.pos += len(op)
			return token{kind: tPunct, text: op, pos: start, end: l.pos}
		}
	}
	_, size := utf8.DecodeRuneInString(l.src[l.pos:])
	l.pos += size
	return l.bad(start, l.src[start:l.pos])
}

// bad records a lexical error and returns EOF so parsing stops there.
func (l *lexer) bad(start int, near string) token {
	if l.err == nil {
		l.err = syntaxError(start, l.pos, near)
	}
	l.pos = len(l.src)
	return token{kind: tEOF, pos: start, end: start}
}

func (l *lexer) skipSpace() {
	for l.pos < len(l.src) {
		c := l.src[l.pos]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			l.pos++
		case c == '-' && l.pos+1 < len(l.src) && l.src[l.pos+1] == '-':
			// A comment ends at a line break of any convention, a bare
			// carriage return included.
			for l.pos < len(l.src) && l.src[l.pos] != '\n' && l.src[l.pos] != '\r' {
				l.pos++
			}
		default:
			return
		}
	}
}

func isIdentStart(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

func isIdentPart(c byte) bool { return isIdentStart(c) || c >= '0' && c <= '9' }

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func (l *lexer) number() token {
	start := l.pos
	src := l.src
	if src[l.pos] == '0' && l.pos+1 < len(src) && (src[l.pos+1] == 'x' || src[l.pos+1] == 'X') {
		l.pos += 2
		for l.pos < len(src) && isHex(src[l.pos]) {
			l.pos++
		}
		text := src[start:l.pos]
		if len(text) == 2 || (l.pos < len(src) && isIdentPart(src[l.pos])) {
			return l.bad(start, text)
		}
		var v document.Value
		if u, err := strconv.ParseUint(text[2:], 16, 64); err == nil {
			if u <= math.MaxInt64 {
				v = document.Int(int64(u))
			} else {
				v = document.FloatExact(float64(u))
			}
		} else {
			f := 0.0
			for _, c := range text[2:] {
				d, _ := strconv.ParseUint(string(c), 16, 8)
				f = f*16 + float64(d)
			}
			if math.IsInf(f, 0) {
				return l.bad(start, text)
			}
			v = document.FloatExact(f)
		}
		return token{kind: tNumber, text: text, val: v, pos: start, end: l.pos}
	}
	isInt := true
	for l.pos < len(src) && src[l.pos] >= '0' && src[l.pos] <= '9' {
		l.pos++
	}
	// The service's literal is DIGIT* ('.' DIGIT*)? (E [-+]? DIGIT+)?
	// with a digit on either side of the point: 5., .5 and 1.e5 are
	// numbers, never a member access on a number.
	if l.pos < len(src) && src[l.pos] == '.' {
		isInt = false
		l.pos++
		for l.pos < len(src) && src[l.pos] >= '0' && src[l.pos] <= '9' {
			l.pos++
		}
	}
	if l.pos < len(src) && (src[l.pos] == 'e' || src[l.pos] == 'E') {
		p := l.pos + 1
		if p < len(src) && (src[p] == '+' || src[p] == '-') {
			p++
		}
		if p < len(src) && src[p] >= '0' && src[p] <= '9' {
			isInt = false
			l.pos = p
			for l.pos < len(src) && src[l.pos] >= '0' && src[l.pos] <= '9' {
				l.pos++
			}
		}
	}
	text := src[start:l.pos]
	if l.pos < len(src) && isIdentPart(src[l.pos]) {
		// 12abc is not a number followed by a name.
		for l.pos < len(src) && isIdentPart(src[l.pos]) {
			l.pos++
		}
		return l.bad(start, src[start:l.pos])
	}
	if isInt {
		if i, err := strconv.ParseInt(text, 10, 64); err == nil {
			return token{kind: tNumber, text: text, val: document.Int(i), pos: start, end: l.pos}
		}
	}
	f, err := strconv.ParseFloat(text, 64)
	if err != nil || math.IsInf(f, 0) {
		return l.bad(start, text)
	}
	return token{kind: tNumber, text: text, val: document.FloatExact(f), pos: start, end: l.pos}
}

func (l *lexer) str(quote byte) token {
	start := l.pos
	l.pos++
	var buf []byte
	src := l.src
	for l.pos < len(src) {
		c := src[l.pos]
		if c == quote {
			l.pos++
			s := string(buf)
			if !utf8.ValidString(s) {
				s = strings.ToValidUTF8(s, "\uFFFD")
			}
			return token{kind: tString, text: src[start:l.pos], val: document.Str(s), pos: start, end: l.pos}
		}
		if c != '\\' {
			buf = append(buf, c)
			l.pos++
			continue
		}
		if l.pos+1 >= len(src) {
			break
		}
		next, ok := 0, false
		if buf, next, ok = document.UnescapeAt(buf, src, l.pos, true); !ok {
			l.pos += 2
			if l.pos > len(src) {
				l.pos = len(src)
			}
			return l.bad(start, src[start:l.pos])
		}
		l.pos = next
	}
	return l.bad(start, src[start:])
}
