package eval

import (
	"math"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/mayfly-db/mayfly/internal/document"
)

// MaxReplicateLength is the longest string REPLICATE builds, as the
// service documents; longer results are undefined.
const MaxReplicateLength = 10000

func strArg(v document.Value) (string, bool) { return v.Str(), v.Kind() == document.String }

// intArg accepts a number with an integral value (floats are truncated, as
// the service does for lengths and positions).
func intArg(v document.Value) (int64, bool) {
	if v.Kind() != document.Number {
		return 0, false
	}
	if v.IsInt() {
		return v.Int(), true
	}
	f := v.Float()
	if f != f || f > 9.2e18 || f < -9.2e18 {
		return 0, false
	}
	return int64(f), true
}

// ignoreCase reads an optional boolean argument; a present non-boolean
// makes the call undefined.
func optBool(a []document.Value, i int) (bool, bool) {
	if len(a) <= i {
		return false, true
	}
	if a[i].Kind() != document.Bool {
		return false, false
	}
	return a[i].Bool(), true
}

func stringPredicate(f func(s, t string) bool) func([]document.Value) document.Value {
	return func(a []document.Value) document.Value {
		s, ok1 := strArg(a[0])
		t, ok2 := strArg(a[1])
		ic, ok3 := optBool(a, 2)
		if !ok1 || !ok2 || !ok3 {
			return undef
		}
		if ic {
			s, t = foldCase(s), foldCase(t)
		}
		return boolVal(f(s, t))
	}
}

func foldCase(s string) string { return strings.ToLower(strings.ToUpper(s)) }

func stringMap(f func(string) string) func([]document.Value) document.Value {
	return func(a []document.Value) document.Value {
		s, ok := strArg(a[0])
		if !ok {
			return undef
		}
		return document.Str(f(s))
	}
}

// trimmer builds LTRIM, RTRIM and TRIM: without a second argument they
// trim whitespace; with one, any of its characters, as the documentation's
// examples show (TRIM("-_-a-_-", "-_") is "a").
func trimmer(space func(string, func(rune) bool) string, set func(string, string) string) func([]document.Value) document.Value {
	return func(a []document.Value) document.Value {
		s, ok := strArg(a[0])
		if !ok {
			return undef
		}
		if len(a) == 1 {
			return document.Str(space(s, unicode.IsSpace))
		}
		chars, ok := strArg(a[1])
		if !ok {
			return undef
		}
		return document.Str(set(s, chars))
	}
}

// runeSlice returns the characters [start, start+n) of s, clamped.
func runeSlice(s string, start, n int64) string {
	r := []rune(s)
	l := int64(len(r))
	if start < 0 {
		start = 0
	}
	if start >= l || n <= 0 {
		return ""
	}
	end := start + n
	if end > l || end < start {
		end = l
	}
	return string(r[start:end])
}

func init() {
	pure(2, 3, stringPredicate(strings.Contains), "CONTAINS")
	pure(2, 3, stringPredicate(strings.HasPrefix), "STARTSWITH")
	pure(2, 3, stringPredicate(strings.HasSuffix), "ENDSWITH")
	pure(2, 3, stringPredicate(func(s, t string) bool { return s == t }), "StringEquals")
	pure(2, 3, func(a []document.Value) document.Value {
		s, ok1 := strArg(a[0])
		t, ok2 := strArg(a[1])
		if !ok1 || !ok2 {
			return undef
		}
		var start int64
		if len(a) > 2 {
			var ok bool
			if start, ok = intArg(a[2]); !ok {
				return undef
			}
		}
		r := []rune(s)
		if start < 0 {
			start = 0
		}
		if start > int64(len(r)) {
			return document.Int(-1)
		}
		i := strings.Index(string(r[start:]), t)
		if i < 0 {
			return document.Int(-1)
		}
		return document.Int(start + int64(utf8.RuneCountInString(string(r[start:])[:i])))
	}, "INDEX_OF")
	pure(1, 1, stringMap(strings.ToLower), "LOWER")
	pure(1, 1, stringMap(strings.ToUpper), "UPPER")
	pure(1, 2, trimmer(strings.TrimLeftFunc, strings.TrimLeft), "LTRIM")
	pure(1, 2, trimmer(strings.TrimRightFunc, strings.TrimRight), "RTRIM")
	pure(1, 2, trimmer(strings.TrimFunc, strings.Trim), "TRIM")
	pure(1, 1, stringMap(func(s string) string {
		r := []rune(s)
		for i, j := 0, len(r)-1; i < j; i, j = i+1, j-1 {
			r[i], r[j] = r[j], r[i]
		}
		return string(r)
	}), "REVERSE")
	pure(1, 1, func(a []document.Value) document.Value {
		s, ok := strArg(a[0])
		if !ok {
			return undef
		}
		return document.Int(int64(utf8.RuneCountInString(s)))
	}, "LENGTH")
	pure(3, 3, func(a []document.Value) document.Value {
		s, ok1 := strArg(a[0])
		start, ok2 := intArg(a[1])
		n, ok3 := intArg(a[2])
		if !ok1 || !ok2 || !ok3 {
			return undef
		}
		return document.Str(runeSlice(s, start, n))
	}, "SUBSTRING")
	pure(2, 2, func(a []document.Value) document.Value {
		s, ok1 := strArg(a[0])
		n, ok2 := intArg(a[1])
		if !ok1 || !ok2 {
			return undef
		}
		return document.Str(runeSlice(s, 0, n))
	}, "LEFT")
	pure(2, 2, func(a []document.Value) document.Value {
		s, ok1 := strArg(a[0])
		n, ok2 := intArg(a[1])
		if !ok1 || !ok2 {
			return undef
		}
		l := int64(utf8.RuneCountInString(s))
		if n > l {
			n = l
		}
		return document.Str(runeSlice(s, l-n, n))
	}, "RIGHT")
	pure(3, 3, func(a []document.Value) document.Value {
		s, ok1 := strArg(a[0])
		f, ok2 := strArg(a[1])
		r, ok3 := strArg(a[2])
		if !ok1 || !ok2 || !ok3 {
			return undef
		}
		if f == "" {
			return document.Str(s)
		}
		if n := strings.Count(s, f); n > 0 && len(s)+n*(len(r)-len(f)) > 2*1024*1024 {
			return undef
		}
		return document.Str(strings.ReplaceAll(s, f, r))
	}, "REPLACE")
	pure(2, 2, func(a []document.Value) document.Value {
		s, ok1 := strArg(a[0])
		if !ok1 || a[1].Kind() != document.Number {
			return undef
		}
		f := a[1].Float()
		if f < 0 || f != f || f > 1e9 {
			return undef
		}
		n := int64(f)
		if int64(utf8.RuneCountInString(s))*n > MaxReplicateLength {
			return undef
		}
		return document.Str(strings.Repeat(s, int(n)))
	}, "REPLICATE")
	pure(2, -1, func(a []document.Value) document.Value {
		var b strings.Builder
		for _, v := range a {
			s, ok := strArg(v)
			if !ok {
				return undef
			}
			b.WriteString(s)
		}
		return document.Str(b.String())
	}, "CONCAT")
	register(2, 3, func(c *ctx, a []document.Value) (document.Value, error) {
		s, ok1 := strArg(a[0])
		p, ok2 := strArg(a[1])
		if !ok1 || !ok2 {
			return undef, nil
		}
		flags := ""
		if len(a) > 2 {
			m, ok := strArg(a[2])
			if !ok {
				return undef, nil
			}
			for _, c := range m {
				switch c {
				case 'i', 'm', 's':
					if !strings.ContainsRune(flags, c) {
						flags += string(c)
					}
				case 'x':
					p = stripExtended(p)
				default:
					return undef, nil
				}
			}
		}
		if flags != "" {
			p = "(?" + flags + ")" + p
		}
		re, err := c.prog.regexp(p)
		if err != nil {
			return undef, nil
		}
		return boolVal(re.MatchString(s)), nil
	}, "RegexMatch")
	pure(1, 1, func(a []document.Value) document.Value {
		switch a[0].Kind() {
		case document.Undefined:
			return undef
		case document.String:
			return a[0]
		case document.Number:
			switch f := a[0].Float(); {
			case math.IsNaN(f):
				return document.Str("NaN")
			case math.IsInf(f, 1):
				return document.Str("Infinity")
			case math.IsInf(f, -1):
				return document.Str("-Infinity")
			}
		}
		return document.Str(string(a[0].JSON()))
	}, "ToString")
	pure(2, 2, func(a []document.Value) document.Value {
		arr, sep := a[0], a[1]
		s, ok := strArg(sep)
		if arr.Kind() != document.Array || !ok {
			return undef
		}
		parts := make([]string, 0, arr.Len())
		for _, e := range arr.Array() {
			es, ok := strArg(e)
			if !ok {
				return undef
			}
			parts = append(parts, es)
		}
		return document.Str(strings.Join(parts, s))
	}, "StringJoin")
	pure(2, 2, func(a []document.Value) document.Value {
		s, ok1 := strArg(a[0])
		d, ok2 := strArg(a[1])
		if !ok1 || !ok2 {
			return undef
		}
		var parts []string
		if d == "" {
			parts = []string{s}
		} else {
			parts = strings.Split(s, d)
		}
		out := make([]document.Value, len(parts))
		for i, p := range parts {
			out[i] = document.Str(p)
		}
		return document.Arr(out)
	}, "StringSplit")
	pure(1, 1, stringTo(document.Array), "StringToArray")
	pure(1, 1, stringTo(document.Bool), "StringToBoolean")
	pure(1, 1, stringTo(document.Null), "StringToNull")
	pure(1, 1, stringTo(document.Number), "StringToNumber")
	pure(1, 1, stringTo(document.Object), "StringToObject")
}

// stringTo parses a string as JSON and keeps the result only when it has
// the wanted kind.
func stringTo(k document.Kind) func([]document.Value) document.Value {
	return func(a []document.Value) document.Value {
		s, ok := strArg(a[0])
		if !ok {
			return undef
		}
		v, err := document.Parse([]byte(s))
		if err != nil || v.Kind() != k {
			return undef
		}
		return v
	}
}

// stripExtended removes unescaped whitespace and #-comments, the 'x'
// modifier of PCRE that RE2 lacks.
func stripExtended(p string) string {
	var b strings.Builder
	inClass, comment := false, false
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case comment:
			if c == '\n' {
				comment = false
			}
		case c == '\\' && i+1 < len(p):
			b.WriteByte(c)
			b.WriteByte(p[i+1])
			i++
		case inClass:
			if c == ']' {
				inClass = false
			}
			b.WriteByte(c)
		case c == '[':
			inClass = true
			b.WriteByte(c)
		case c == '#':
			comment = true
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// regexp compiles a pattern once per program; a query usually applies the
// same constant pattern to every document.
func (p *Program) regexp(pattern string) (*regexp.Regexp, error) {
	if re, ok := p.regexps.Load(pattern); ok {
		return re.(*regexp.Regexp), nil
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, err
	}
	if p.regexCount.Add(1) <= 64 {
		p.regexps.Store(pattern, re)
	}
	return re, nil
}
