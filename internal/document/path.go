package document

import (
	"fmt"
	"strings"
)

// ParsePath splits a property path as Cosmos DB writes them in partition
// keys, unique keys and indexing policies: "/a/b", "/\"a b\"/c". A trailing
// "/?" or "/*" (index path wildcards) is not accepted here.
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
		if strings.HasPrefix(rest, `"`) {
			end := strings.IndexByte(rest[1:], '"')
			if end < 0 {
				return nil, fmt.Errorf("path %q: unterminated quote", path)
			}
			parts = append(parts, rest[1:1+end])
			rest = rest[2+end:]
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
