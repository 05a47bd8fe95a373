package partition

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/mayfly-db/mayfly/internal/document"
)

// ErrHeader is wrapped by every error ParseHeader returns.
var ErrHeader = errors.New("invalid partition key header")

// ParseHeader parses the value of the x-ms-documentdb-partitionkey header: a
// JSON array with one element per component. "[{}]" is one undefined
// component; "[]" is the empty key ("no key"), which is not the same as an
// absent header.
//
// The Go SDK writes string components with strconv.QuoteToASCII, which is
// not JSON for astral characters ("\U0001f600") and some control characters
// ("\x01", "\a"). A string element that is not valid JSON is therefore decoded
// as a Go string literal instead. Invalid UTF-8 and lone surrogates become
// U+FFFD, as they do when the same value is read from a JSON body.
//
// Numbers follow the JSON grammar and must fit a float64. Objects other than
// {} and arrays are not key values. Any error wraps ErrHeader.
func ParseHeader(s string) (Key, error) {
	p := headerParser{s: s}
	p.skipSpace()
	if !p.eat('[') {
		return nil, p.errorf("expected '['")
	}
	k := Key{}
	p.skipSpace()
	if !p.eat(']') {
		for {
			p.skipSpace()
			c, err := p.component()
			if err != nil {
				return nil, err
			}
			k = append(k, c)
			p.skipSpace()
			if p.eat(',') {
				continue
			}
			if p.eat(']') {
				break
			}
			return nil, p.errorf("expected ',' or ']'")
		}
	}
	p.skipSpace()
	if p.i != len(p.s) {
		return nil, p.errorf("unexpected text after ']'")
	}
	return k, nil
}

type headerParser struct {
	s string
	i int
}

func (p *headerParser) errorf(format string, args ...any) error {
	return fmt.Errorf("%w: %s at offset %d", ErrHeader, fmt.Sprintf(format, args...), p.i)
}

func (p *headerParser) skipSpace() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *headerParser) eat(b byte) bool {
	if p.i < len(p.s) && p.s[p.i] == b {
		p.i++
		return true
	}
	return false
}

func (p *headerParser) eatWord(w string) bool {
	if len(p.s)-p.i >= len(w) && p.s[p.i:p.i+len(w)] == w {
		p.i += len(w)
		return true
	}
	return false
}

func (p *headerParser) component() (Component, error) {
	if p.i >= len(p.s) {
		return Component{}, p.errorf("expected a value")
	}
	switch b := p.s[p.i]; {
	case b == '"':
		return p.str()
	case b == '{':
		p.i++
		p.skipSpace()
		if !p.eat('}') {
			return Component{}, p.errorf("only {} (undefined) may appear as an object")
		}
		return Undefined(), nil
	case b == '-' || (b >= '0' && b <= '9'):
		return p.number()
	case p.eatWord("null"):
		return Null(), nil
	case p.eatWord("true"):
		return Bool(true), nil
	case p.eatWord("false"):
		return Bool(false), nil
	case b == '[':
		return Component{}, p.errorf("an array is not a partition key value")
	}
	return Component{}, p.errorf("unexpected character %q", p.s[p.i])
}

// str reads a string element. JSON and Go literals both escape a quote as \"
// and a backslash as \\, so the element ends at the same quote either way.
func (p *headerParser) str() (Component, error) {
	start := p.i
	j := p.i + 1
	for {
		if j >= len(p.s) {
			return Component{}, p.errorf("unterminated string")
		}
		if p.s[j] == '\\' {
			j += 2
			continue
		}
		if p.s[j] == '"' {
			break
		}
		j++
	}
	lit := p.s[start : j+1]
	if s, ok := unquoteJSON(lit[1 : len(lit)-1]); ok {
		p.i = j + 1
		return String(s), nil
	}
	s, err := strconv.Unquote(lit)
	if err != nil {
		return Component{}, p.errorf("invalid string %s", lit)
	}
	p.i = j + 1
	return String(validUTF8(s)), nil
}

func (p *headerParser) number() (Component, error) {
	start := p.i
	p.eat('-')
	switch {
	case p.eat('0'):
	case p.i < len(p.s) && p.s[p.i] >= '1' && p.s[p.i] <= '9':
		p.digits()
	default:
		return Component{}, p.errorf("invalid number")
	}
	if p.eat('.') {
		if p.digits() == 0 {
			return Component{}, p.errorf("invalid number")
		}
	}
	if p.eat('e') || p.eat('E') {
		if !p.eat('+') {
			p.eat('-')
		}
		if p.digits() == 0 {
			return Component{}, p.errorf("invalid number")
		}
	}
	lit := p.s[start:p.i]
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil {
		p.i = start
		return Component{}, p.errorf("number %s out of range", lit)
	}
	return Number(f), nil
}

func (p *headerParser) digits() int {
	n := 0
	for p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
		p.i++
		n++
	}
	return n
}

// unquoteJSON decodes the body of a JSON string (without its quotes). It
// reports false when s is not valid JSON string content.
func unquoteJSON(s string) (string, bool) {
	buf := make([]byte, 0, len(s))
	for i := 0; i < len(s); {
		b := s[i]
		switch {
		case b < 0x20:
			return "", false
		case b == '\\':
			var ok bool
			if buf, i, ok = document.UnescapeAt(buf, s, i, false); !ok {
				return "", false
			}
		case b < utf8.RuneSelf:
			buf = append(buf, b)
			i++
		default:
			r, size := utf8.DecodeRuneInString(s[i:])
			buf = utf8.AppendRune(buf, r) // an invalid byte becomes U+FFFD
			i += size
		}
	}
	return string(buf), true
}

// validUTF8 replaces every byte of s that is not part of valid UTF-8 with
// U+FFFD, one for one, as encoding a string to JSON does.
func validUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	buf := make([]byte, 0, len(s)+8)
	for _, r := range s {
		buf = utf8.AppendRune(buf, r)
	}
	return string(buf)
}

// String returns the canonical header form of k (see AppendJSON).
func (k Key) String() string { return string(k.AppendJSON(nil)) }

// AppendJSON appends k as a JSON array, the canonical form of the
// x-ms-documentdb-partitionkey header: undefined as {}, numbers as
// JavaScript prints them (5, 0.1, 1e+21; -0 as 0), and strings with every
// character outside printable ASCII escaped, so the result is ASCII and fits
// in a header. A number that is not finite has no JSON form and is written as
// null. ParseHeader(k.String()) is equal to k for every k whose numbers are
// finite.
func (k Key) AppendJSON(dst []byte) []byte {
	dst = append(dst, '[')
	for i, c := range k {
		if i > 0 {
			dst = append(dst, ',')
		}
		switch c.kind() {
		case KindNull:
			dst = append(dst, "null"...)
		case KindBool:
			dst = strconv.AppendBool(dst, c.Bool)
		case KindNumber:
			dst = appendNumber(dst, c.Num)
		case KindString:
			dst = appendString(dst, c.Str)
		default:
			dst = append(dst, "{}"...)
		}
	}
	return append(dst, ']')
}

// appendNumber writes f as ECMAScript's Number.prototype.toString does.
func appendNumber(dst []byte, f float64) []byte {
	switch {
	case math.IsNaN(f) || math.IsInf(f, 0):
		return append(dst, "null"...)
	case f == 0:
		return append(dst, '0')
	case f < 0:
		dst = append(dst, '-')
		f = -f
	}
	// Shortest digits d1d2...dk and exponent e with f = d1.d2...dk × 10^e.
	var tmp [32]byte
	e := strconv.AppendFloat(tmp[:0], f, 'e', -1, 64)
	mant, exp := e, 0
	for i, c := range e {
		if c == 'e' {
			mant = e[:i]
			x, _ := strconv.Atoi(string(e[i+1:]))
			exp = x
			break
		}
	}
	var digits []byte
	for _, c := range mant {
		if c != '.' {
			digits = append(digits, c)
		}
	}
	k, n := len(digits), exp+1 // f = 0.digits × 10^n
	switch {
	case k <= n && n <= 21:
		dst = append(dst, digits...)
		for range n - k {
			dst = append(dst, '0')
		}
	case 0 < n && n <= 21:
		dst = append(dst, digits[:n]...)
		dst = append(dst, '.')
		dst = append(dst, digits[n:]...)
	case -6 < n && n <= 0:
		dst = append(dst, "0."...)
		for range -n {
			dst = append(dst, '0')
		}
		dst = append(dst, digits...)
	default:
		dst = append(dst, digits[0])
		if k > 1 {
			dst = append(dst, '.')
			dst = append(dst, digits[1:]...)
		}
		dst = append(dst, 'e')
		if n-1 >= 0 {
			dst = append(dst, '+')
		}
		dst = strconv.AppendInt(dst, int64(n-1), 10)
	}
	return dst
}

const hexDigits = "0123456789abcdef"

func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	for _, r := range s { // invalid UTF-8 arrives as U+FFFD
		switch {
		case r == '"' || r == '\\':
			dst = append(dst, '\\', byte(r))
		case r == '\n':
			dst = append(dst, '\\', 'n')
		case r == '\r':
			dst = append(dst, '\\', 'r')
		case r == '\t':
			dst = append(dst, '\\', 't')
		case r == '\b':
			dst = append(dst, '\\', 'b')
		case r == '\f':
			dst = append(dst, '\\', 'f')
		case r >= 0x20 && r < 0x7f:
			dst = append(dst, byte(r))
		case r >= 0x10000:
			hi, lo := utf16.EncodeRune(r)
			dst = appendU(appendU(dst, hi), lo)
		default:
			dst = appendU(dst, r)
		}
	}
	return append(dst, '"')
}

func appendU(dst []byte, r rune) []byte {
	return append(dst, '\\', 'u', hexDigits[r>>12&0xf], hexDigits[r>>8&0xf], hexDigits[r>>4&0xf], hexDigits[r&0xf])
}
