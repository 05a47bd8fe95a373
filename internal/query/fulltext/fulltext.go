// Package fulltext holds how Mayfly reads text for full-text search: the
// words a text is made of, which the full-text functions compare and the
// engine's word entries store, so that the two agree by construction.
package fulltext

import (
	"strings"
	"unicode"
)

// Words splits s into normalized words, as the service's English analyzer
// compares them closely enough for containment: case-folded, split at
// anything not a letter or digit, plural and possessive endings removed
// ("Searches" is "search").
func Words(s string) []string {
	fields := strings.FieldsFunc(s, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	for i, f := range fields {
		fields[i] = stem(strings.ToLower(f))
	}
	return fields
}

// stem removes the English plural and possessive endings.
func stem(w string) string {
	switch {
	case len(w) > 4 && strings.HasSuffix(w, "ies"):
		return w[:len(w)-3] + "y"
	case len(w) > 4 && (strings.HasSuffix(w, "sses") || strings.HasSuffix(w, "shes") || strings.HasSuffix(w, "ches") || strings.HasSuffix(w, "xes")):
		return w[:len(w)-2]
	case len(w) > 3 && strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") && !strings.HasSuffix(w, "us") && !strings.HasSuffix(w, "is"):
		return w[:len(w)-1]
	}
	return w
}
