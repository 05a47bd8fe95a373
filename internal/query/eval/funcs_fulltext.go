package eval

import (
	"strings"
	"unicode"

	"github.com/mayfly-db/mayfly/internal/document"
)

// Full-text predicates: FullTextContains(text, phrase) holds when the words
// of phrase appear in text one after another; FullTextContainsAll and
// FullTextContainsAny take several phrases. Words are compared as the
// service's English analyzer compares them closely enough for containment:
// case-folded, split at anything not a letter or digit, plural endings
// removed ("Searches" contains "search").
//
// Scoring (FullTextScore, ORDER BY RANK, RRF) is in rank.go.

// words splits s into normalized words.
func words(s string) []string {
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

// containsPhrase reports whether the words of phrase occur consecutively
// in text; an empty phrase is contained in nothing.
func containsPhrase(text []string, phrase string) bool {
	return occurrences(text, words(phrase)) > 0
}

// fullText builds the predicates: with all, every phrase must be contained;
// without, at least one.
func fullText(all bool) func([]document.Value) document.Value {
	return func(a []document.Value) document.Value {
		s, ok := strArg(a[0])
		if !ok {
			return undef
		}
		text := words(s)
		for _, p := range a[1:] {
			phrase, ok := strArg(p)
			if !ok {
				return undef
			}
			if containsPhrase(text, phrase) != all {
				return boolVal(!all)
			}
		}
		return boolVal(all)
	}
}

func init() {
	pure(2, 2, fullText(true), "FullTextContains")
	pure(2, -1, fullText(true), "FullTextContainsAll")
	pure(2, -1, fullText(false), "FullTextContainsAny")
}
