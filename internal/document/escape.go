package document

import (
	"unicode/utf16"
	"unicode/utf8"
)

// UnescapeAt decodes the escape sequence that starts at s[i], a backslash,
// as JSON writes them: \" \\ \/ \b \f \n \r \t and \uXXXX, a high and low
// surrogate pair of \u escapes standing for one character beyond the BMP
// (a lone surrogate becomes U+FFFD). With apostrophe set it also accepts
// \', as the query language does. It appends the decoded text to dst and
// returns the index just after the sequence; ok is false when the sequence
// is invalid or cut short.
//
// The JSON parser, the partition key header and the query lexer all decode
// string escapes through it, so they agree on every edge.
func UnescapeAt[S string | []byte](dst []byte, s S, i int, apostrophe bool) (out []byte, next int, ok bool) {
	if i+1 >= len(s) || s[i] != '\\' {
		return dst, i, false
	}
	switch e := s[i+1]; e {
	case '"', '\\', '/':
		return append(dst, e), i + 2, true
	case '\'':
		return append(dst, e), i + 2, apostrophe
	case 'b':
		return append(dst, '\b'), i + 2, true
	case 'f':
		return append(dst, '\f'), i + 2, true
	case 'n':
		return append(dst, '\n'), i + 2, true
	case 'r':
		return append(dst, '\r'), i + 2, true
	case 't':
		return append(dst, '\t'), i + 2, true
	case 'u':
	default:
		return dst, i, false
	}
	r, ok := hex4(s, i+2)
	if !ok {
		return dst, i, false
	}
	next = i + 6
	if utf16.IsSurrogate(r) {
		pair := utf8.RuneError
		if next+1 < len(s) && s[next] == '\\' && s[next+1] == 'u' {
			if low, ok := hex4(s, next+2); ok {
				if dec := utf16.DecodeRune(r, low); dec != utf8.RuneError {
					pair, next = dec, next+6
				}
			}
		}
		r = pair
	}
	return utf8.AppendRune(dst, r), next, true
}

func hex4[S string | []byte](s S, i int) (rune, bool) {
	if i+4 > len(s) {
		return 0, false
	}
	var r rune
	for j := i; j < i+4; j++ {
		c := s[j]
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}
