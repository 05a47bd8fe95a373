package document

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"sync"
	"unicode/utf8"
)

// MaxDepth is the deepest nesting Parse accepts. Cosmos DB limits items to
// 128 levels, and the engine checks that on every write; Parse accepts far
// more so that the engine can report its own limit, and so that it can
// still read, query, fix and delete any item stored past that limit by a
// build that did not check patches (ten operations of one patch could
// reach about 2,800 levels). Parse recurses once per level, a few hundred
// bytes of stack each.
const MaxDepth = 4096

// SyntaxError describes malformed JSON.
type SyntaxError struct {
	Offset int
	Msg    string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("invalid JSON at offset %d: %s", e.Offset, e.Msg)
}

// ErrTooDeep is wrapped by the error Parse returns for too deeply nested input.
var ErrTooDeep = errors.New("JSON nesting too deep")

// Parse decodes one JSON value. Trailing non-space input is an error.
// Integers that fit in an int64 are kept exactly; other numbers become
// float64; numbers outside the float64 range are an error. Duplicate object
// keys keep the last value, in the position of the first.
func Parse(data []byte) (Value, error) {
	st := stackPool.Get().(*stacks)
	defer st.release()
	p := parser{data: data, stacks: st}
	p.skipSpace()
	v, err := p.value(0)
	if err != nil {
		return Undef, err
	}
	p.skipSpace()
	if p.pos != len(p.data) {
		return Undef, p.fail("unexpected data after the value")
	}
	return v, nil
}

type parser struct {
	data []byte
	pos  int
	*stacks
}

// stacks are where the objects and arrays being parsed collect their
// members: each pushes them on top and, when it closes, copies them into
// one slice of the exact size and pops them. Growing a slice per object
// by appending allocated several times the object's final size, most of
// what parsing a stored item allocated. Parses reuse stacks through a pool.
type stacks struct {
	fields []Field
	vals   []Value
}

var stackPool = sync.Pool{New: func() any { return new(stacks) }}

// maxPooledStack bounds what a pooled stack keeps, so that one huge
// document does not pin its memory.
const maxPooledStack = 1 << 12

// release clears the stacks (they hold strings and slices of the parsed
// value) and returns them to the pool.
func (st *stacks) release() {
	if cap(st.fields) > maxPooledStack || cap(st.vals) > maxPooledStack {
		return
	}
	clear(st.fields[:cap(st.fields)])
	clear(st.vals[:cap(st.vals)])
	st.fields, st.vals = st.fields[:0], st.vals[:0]
	stackPool.Put(st)
}

func (p *parser) fail(msg string) error { return &SyntaxError{Offset: p.pos, Msg: msg} }

func (p *parser) failAt(off int, msg string) error { return &SyntaxError{Offset: off, Msg: msg} }

// invalidUTF8At returns the offset of the first byte of b that does not
// start a valid UTF-8 sequence.
func invalidUTF8At(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n <= 1 {
			return i
		}
		i += n
	}
	return len(b)
}

func (p *parser) skipSpace() {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *parser) value(depth int) (Value, error) {
	if p.pos >= len(p.data) {
		return Undef, p.fail("unexpected end of input")
	}
	switch c := p.data[p.pos]; {
	case c == '{':
		return p.object(depth + 1)
	case c == '[':
		return p.array(depth + 1)
	case c == '"':
		s, err := p.str()
		if err != nil {
			return Undef, err
		}
		return Str(s), nil
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	case c == 't':
		return p.literal("true", BoolValue(true))
	case c == 'f':
		return p.literal("false", BoolValue(false))
	case c == 'n':
		return p.literal("null", NullValue())
	default:
		return Undef, p.fail(fmt.Sprintf("unexpected character %q", c))
	}
}

func (p *parser) literal(word string, v Value) (Value, error) {
	if len(p.data)-p.pos < len(word) || string(p.data[p.pos:p.pos+len(word)]) != word {
		return Undef, p.fail("invalid literal")
	}
	p.pos += len(word)
	return v, nil
}

func (p *parser) object(depth int) (Value, error) {
	if depth > MaxDepth {
		return Undef, fmt.Errorf("%w: more than %d levels", ErrTooDeep, MaxDepth)
	}
	p.pos++ // {
	base := len(p.fields)
	var index map[string]int
	p.skipSpace()
	if p.pos < len(p.data) && p.data[p.pos] == '}' {
		p.pos++
		return Obj(nil), nil
	}
	for {
		p.skipSpace()
		if p.pos >= len(p.data) || p.data[p.pos] != '"' {
			return Undef, p.fail("expected a property name")
		}
		name, err := p.str()
		if err != nil {
			return Undef, err
		}
		p.skipSpace()
		if p.pos >= len(p.data) || p.data[p.pos] != ':' {
			return Undef, p.fail("expected ':' after a property name")
		}
		p.pos++
		p.skipSpace()
		v, err := p.value(depth)
		if err != nil {
			return Undef, err
		}
		fields := p.fields[base:]
		dup := false
		if index != nil {
			if i, ok := index[name]; ok {
				fields[i].Value, dup = v, true
			}
		} else {
			for i := range fields {
				if fields[i].Name == name {
					fields[i].Value, dup = v, true
					break
				}
			}
		}
		if !dup {
			p.fields = append(p.fields, Field{Name: name, Value: v})
			n := len(p.fields) - base
			// Past a few dozen properties a map beats the linear scan.
			if index == nil && n == 32 {
				index = make(map[string]int, 64)
				for i, f := range p.fields[base:] {
					index[f.Name] = i
				}
			} else if index != nil {
				index[name] = n - 1
			}
		}
		p.skipSpace()
		if p.pos >= len(p.data) {
			return Undef, p.fail("unexpected end of input in an object")
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
		case '}':
			p.pos++
			out := slices.Clone(p.fields[base:])
			p.fields = p.fields[:base]
			return Obj(out), nil
		default:
			return Undef, p.fail("expected ',' or '}' in an object")
		}
	}
}

func (p *parser) array(depth int) (Value, error) {
	if depth > MaxDepth {
		return Undef, fmt.Errorf("%w: more than %d levels", ErrTooDeep, MaxDepth)
	}
	p.pos++ // [
	base := len(p.vals)
	p.skipSpace()
	if p.pos < len(p.data) && p.data[p.pos] == ']' {
		p.pos++
		return Arr(nil), nil
	}
	for {
		p.skipSpace()
		v, err := p.value(depth)
		if err != nil {
			return Undef, err
		}
		p.vals = append(p.vals, v)
		p.skipSpace()
		if p.pos >= len(p.data) {
			return Undef, p.fail("unexpected end of input in an array")
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
		case ']':
			p.pos++
			out := slices.Clone(p.vals[base:])
			p.vals = p.vals[:base]
			return Arr(out), nil
		default:
			return Undef, p.fail("expected ',' or ']' in an array")
		}
	}
}

func (p *parser) number() (Value, error) {
	start := p.pos
	isInt := true
	if p.data[p.pos] == '-' {
		p.pos++
	}
	digits := func() int {
		n := 0
		for p.pos < len(p.data) && p.data[p.pos] >= '0' && p.data[p.pos] <= '9' {
			p.pos++
			n++
		}
		return n
	}
	if p.pos < len(p.data) && p.data[p.pos] == '0' {
		p.pos++
	} else if digits() == 0 {
		return Undef, p.fail("invalid number")
	}
	if p.pos < len(p.data) && p.data[p.pos] == '.' {
		isInt = false
		p.pos++
		if digits() == 0 {
			return Undef, p.fail("invalid number: no digits after '.'")
		}
	}
	if p.pos < len(p.data) && (p.data[p.pos] == 'e' || p.data[p.pos] == 'E') {
		isInt = false
		p.pos++
		if p.pos < len(p.data) && (p.data[p.pos] == '+' || p.data[p.pos] == '-') {
			p.pos++
		}
		if digits() == 0 {
			return Undef, p.fail("invalid number: no digits in the exponent")
		}
	}
	text := string(p.data[start:p.pos])
	if isInt {
		if i, err := strconv.ParseInt(text, 10, 64); err == nil {
			return Int(i), nil
		}
	}
	f, err := strconv.ParseFloat(text, 64)
	if err != nil || math.IsInf(f, 0) {
		p.pos = start
		return Undef, p.fail("number out of range")
	}
	if !isInt {
		return FloatExact(f), nil
	}
	return FloatExact(f), nil
}

func (p *parser) str() (string, error) {
	p.pos++ // opening quote
	start := p.pos
	// Fast path: no escapes and valid UTF-8.
	for p.pos < len(p.data) {
		c := p.data[p.pos]
		if c == '"' {
			s := p.data[start:p.pos]
			p.pos++
			if !utf8.Valid(s) {
				return "", p.failAt(start+invalidUTF8At(s), "invalid UTF-8 in a string")
			}
			return string(s), nil
		}
		if c == '\\' {
			break
		}
		if c < 0x20 {
			return "", p.fail("control character in a string")
		}
		p.pos++
	}
	buf := append([]byte(nil), p.data[start:p.pos]...)
	for p.pos < len(p.data) {
		c := p.data[p.pos]
		switch {
		case c == '"':
			p.pos++
			if !utf8.Valid(buf) {
				// Escapes decode to valid UTF-8, so the bad bytes came
				// from the input; point at the string.
				return "", p.failAt(start, "invalid UTF-8 in a string")
			}
			return string(buf), nil
		case c < 0x20:
			return "", p.fail("control character in a string")
		case c != '\\':
			buf = append(buf, c)
			p.pos++
			continue
		}
		if p.pos+1 >= len(p.data) {
			break
		}
		var ok bool
		if buf, p.pos, ok = UnescapeAt(buf, p.data, p.pos, false); !ok {
			return "", p.fail("invalid escape in a string")
		}
	}
	return "", p.fail("unterminated string")
}

// AppendJSON appends the JSON encoding of v. Undefined encodes as nothing at
// the top level and is skipped inside objects; inside arrays it encodes as
// null, as JavaScript does. Non-finite numbers encode as null.
func (v Value) AppendJSON(dst []byte) []byte {
	switch v.kind {
	case Undefined, Null:
		if v.kind == Undefined {
			return dst
		}
		return append(dst, "null"...)
	case Bool:
		if v.b {
			return append(dst, "true"...)
		}
		return append(dst, "false"...)
	case Number:
		if v.isInt {
			return strconv.AppendInt(dst, v.i, 10)
		}
		if a := math.Abs(v.f); a >= 1<<53 && a < 1<<63 && v.f == math.Trunc(v.f) {
			// Written plainly, a float this large would read back as the
			// int64 its digits spell, which is a different number.
			return append(AppendFloat(dst, v.f), ".0"...)
		}
		return AppendFloat(dst, v.f)
	case String:
		return AppendString(dst, v.s)
	case Array:
		dst = append(dst, '[')
		for i, e := range v.arr {
			if i > 0 {
				dst = append(dst, ',')
			}
			if e.kind == Undefined {
				dst = append(dst, "null"...)
				continue
			}
			dst = e.AppendJSON(dst)
		}
		return append(dst, ']')
	case Object:
		dst = append(dst, '{')
		first := true
		for _, f := range v.obj {
			if f.Value.kind == Undefined {
				continue
			}
			if !first {
				dst = append(dst, ',')
			}
			first = false
			dst = AppendString(dst, f.Name)
			dst = append(dst, ':')
			dst = f.Value.AppendJSON(dst)
		}
		return append(dst, '}')
	}
	return dst
}

// JSON returns the encoding of v.
func (v Value) JSON() []byte { return v.AppendJSON(nil) }

// String returns the JSON text of v ("undefined" for Undef).
func (v Value) String() string {
	if v.kind == Undefined {
		return "undefined"
	}
	return string(v.AppendJSON(nil))
}

// MarshalJSON lets Values sit inside structs encoded by encoding/json.
func (v Value) MarshalJSON() ([]byte, error) {
	if v.kind == Undefined {
		return []byte("null"), nil
	}
	return v.AppendJSON(nil), nil
}

// UnmarshalJSON decodes with Parse.
func (v *Value) UnmarshalJSON(b []byte) error {
	x, err := Parse(b)
	if err != nil {
		return err
	}
	*v = x
	return nil
}

// AppendFloat formats f as JavaScript's Number.prototype.toString does, so
// clients in every language read back the same value.
func AppendFloat(dst []byte, f float64) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(dst, "null"...)
	}
	if f == 0 {
		return append(dst, '0')
	}
	abs := math.Abs(f)
	if abs >= 1e-6 && abs < 1e21 {
		return strconv.AppendFloat(dst, f, 'f', -1, 64)
	}
	start := len(dst)
	dst = strconv.AppendFloat(dst, f, 'e', -1, 64)
	// Go writes e-07 where JavaScript writes e-7.
	for i := start; i < len(dst)-2; i++ {
		if dst[i] == 'e' && dst[i+2] == '0' && len(dst)-(i+2) > 1 {
			copy(dst[i+2:], dst[i+3:])
			dst = dst[:len(dst)-1]
			break
		}
	}
	return dst
}

const hexDigits = "0123456789abcdef"

// AppendString appends s as a JSON string, escaping only what JSON requires.
func AppendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		dst = append(dst, s[start:i]...)
		switch c {
		case '"', '\\':
			dst = append(dst, '\\', c)
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		}
		start = i + 1
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
