package document

import (
	"fmt"
	"strings"
)

// ParsePath splits a property path as Cosmos DB writes them in partition
// keys, unique keys and indexing policies: "/a/b", "/\"a b\"/c", "/'a/b'/c".
// A segment in double or single quotes may hold '/' and the other quote; a
// quote preceded by a backslash does not end it and stays in the name as
// written, as the SDKs read it when they extract a partition key. A
// trailing "/?" or "/*" (index path wildcards) is not accepted here.
func ParsePath(path string) ([]string, error) {
	if !strings.HasPrefix(path, "/") || len(path) < 2 {
		return nil, fmt.Errorf("path %q must start with '/' and name a property", path)
	}
	var parts []string
	rest := path
	for len(rest) > 0 {
		if rest[0] != '/' {
			return nil, fmt.Errorf("path %q: expected '/'", path)
		}
		rest = rest[1:]
		if rest != "" && (rest[0] == '"' || rest[0] == '\'') {
			end := closingQuote(rest)
			if end < 0 {
				return nil, fmt.Errorf("path %q: unterminated quote", path)
			}
			parts = append(parts, rest[1:end])
			rest = rest[end+1:]
			continue
		}
		end := strings.IndexByte(rest, '/')
		if end < 0 {
			end = len(rest)
		}
		seg := rest[:end]
		if seg == "" {
			return nil, fmt.Errorf("path %q has an empty segment", path)
		}
		parts = append(parts, seg)
		rest = rest[end:]
	}
	return parts, nil
}

// closingQuote returns the index in s of the quote that closes the one at
// s[0], skipping quotes escaped with a backslash, or -1.
func closingQuote(s string) int {
	for i := 1; i < len(s); i++ {
		if s[i] == s[0] && s[i-1] != '\\' {
			return i
		}
	}
	return -1
}

// At follows property names from v and returns the value found, or Undef.
func (v Value) At(path []string) Value {
	for _, name := range path {
		if v.kind != Object {
			return Undef
		}
		v = v.Get(name)
	}
	return v
}
