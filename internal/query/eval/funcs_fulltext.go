package eval

import (
	"github.com/mayfly-db/mayfly/internal/document"
	"github.com/mayfly-db/mayfly/internal/query/fulltext"
)

// Full-text predicates: FullTextContains(text, phrase) holds when the words
// of phrase appear in text one after another; FullTextContainsAll and
// FullTextContainsAny take several phrases. Words are compared as
// fulltext.Words normalizes them ("Searches" contains "search").
//
// Scoring (FullTextScore, ORDER BY RANK, RRF) is in rank.go.

// containsPhrase reports whether the words of phrase occur consecutively
// in text; an empty phrase is contained in nothing.
func containsPhrase(text []string, phrase string) bool {
	return occurrences(text, fulltext.Words(phrase)) > 0
}

// fullText builds the predicates: with all, every phrase must be contained;
// without, at least one.
func fullText(all bool) func([]document.Value) document.Value {
	return func(a []document.Value) document.Value {
		s, ok := strArg(a[0])
		if !ok {
			return undef
		}
		text := fulltext.Words(s)
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
