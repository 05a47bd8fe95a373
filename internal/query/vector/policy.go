package vector

import (
	"fmt"
	"strings"

	"github.com/mayfly-db/mayfly/internal/document"
)

// Policy is a container's vectorEmbeddingPolicy: the distance function and
// dimensions of each embedding path. The zero Policy has no embeddings.
type Policy struct {
	byPath map[string]Function
	dims   map[string]int
}

// Limits of the service: dimensions of an embedding, and of one a flat
// index can hold.
const (
	MaxDimensions     = 4096
	MaxFlatDimensions = 505
)

var dataTypes = map[string]bool{"float32": true, "float16": true, "int8": true, "uint8": true}

var indexTypes = map[string]bool{"flat": true, "quantizedflat": true, "diskann": true}

// PolicyError is a vector policy the service would refuse; its message is
// the service's.
type PolicyError struct{ Message string }

func (e *PolicyError) Error() string { return e.Message }

func policyError(format string, args ...any) error {
	return &PolicyError{Message: fmt.Sprintf(format, args...)}
}

func pathKey(path []string) string { return strings.Join(path, "\x00") }

// ParsePolicy reads and checks a vectorEmbeddingPolicy (undefined or null
// for none). Its errors are the service's messages for a 400.
func ParsePolicy(v document.Value) (Policy, error) {
	p := Policy{byPath: map[string]Function{}, dims: map[string]int{}}
	if !v.IsDefined() || v.IsNull() {
		return p, nil
	}
	if v.Kind() != document.Object {
		return p, policyError("The vectorEmbeddingPolicy must be an object.")
	}
	list := v.Get("vectorEmbeddings")
	if list.IsDefined() && !list.IsNull() && list.Kind() != document.Array {
		return p, policyError("The Vector Embedding Policy's vectorEmbeddings must be an array.")
	}
	for _, e := range list.Array() {
		if e.Kind() != document.Object {
			return p, policyError("Each entry of the Vector Embedding Policy must be an object.")
		}
		raw := e.Get("path")
		path, err := document.ParsePath(raw.Str())
		if raw.Kind() != document.String || err != nil || len(path) == 0 || strings.ContainsAny(raw.Str(), "*[]") {
			return p, policyError("The Vector Embedding Policy has an invalid Path:%s.", raw.Str())
		}
		key := pathKey(path)
		if _, dup := p.byPath[key]; dup {
			return p, policyError("The Vector Embedding Policy has the Path:%s more than once.", raw.Str())
		}
		if dt := e.Get("dataType"); dt.IsDefined() && (dt.Kind() != document.String || !dataTypes[strings.ToLower(dt.Str())]) {
			return p, policyError("The Vector Embedding Policy has an invalid DataType:%s.", plain(dt))
		}
		f := Cosine
		if df := e.Get("distanceFunction"); df.IsDefined() {
			var ok bool
			if f, ok = ParseFunction(df.Str()); !ok || df.Kind() != document.String {
				return p, policyError("The Vector Embedding Policy has an invalid DistanceFunction:%s.", plain(df))
			}
		}
		d := e.Get("dimensions")
		if d.IsDefined() {
			if d.Kind() != document.Number || !d.IsInt() || d.Int() < 1 {
				return p, policyError("The Vector Embedding Policy has Dimensions:%s, which must be a positive integer.", d.String())
			}
			if d.Int() > MaxDimensions {
				return p, policyError("The Vector Embedding Policy has Dimensions:%d which is more than the maximum supported value %d.", d.Int(), MaxDimensions)
			}
			p.dims[key] = int(d.Int())
		}
		p.byPath[key] = f
	}
	return p, nil
}

// plain is v as it reads in a message: a string without its quotes.
func plain(v document.Value) string {
	if v.Kind() == document.String {
		return v.Str()
	}
	return v.String()
}

// CheckIndexes checks the vectorIndexes of an indexing policy against the
// embedding policy p. Its errors are the service's messages for a 400.
func CheckIndexes(indexingPolicy document.Value, p Policy) error {
	list := indexingPolicy.Get("vectorIndexes")
	if !list.IsDefined() || list.IsNull() {
		return nil
	}
	if list.Kind() != document.Array {
		return policyError("The indexingPolicy property 'vectorIndexes' must be an array.")
	}
	seen := map[string]bool{}
	for _, ix := range list.Array() {
		raw := ix.Get("path")
		path, err := document.ParsePath(raw.Str())
		key := pathKey(path)
		if _, ok := p.byPath[key]; ix.Kind() != document.Object || raw.Kind() != document.String || err != nil || !ok {
			return policyError("The Vector Indexing Policy's path::%s not matching in Embedding's path.", plain(raw))
		}
		if seen[key] {
			return policyError("The Vector Indexing Policy has the path::%s more than once.", raw.Str())
		}
		seen[key] = true
		typ := ix.Get("type")
		if typ.Kind() != document.String || !indexTypes[strings.ToLower(typ.Str())] {
			return policyError("Index Type::%s is invalid. It must be one of flat, quantizedFlat or diskANN.", plain(typ))
		}
		dims, known := p.dims[key]
		if strings.EqualFold(typ.Str(), "flat") && known && dims > MaxFlatDimensions {
			return policyError("The Vector Indexing Policy's path::%s has Dimensions:%d, more than the %d a flat index supports; use quantizedFlat or diskANN.", raw.Str(), dims, MaxFlatDimensions)
		}
		if q := ix.Get("quantizationByteSize"); q.IsDefined() {
			most := 512
			if known {
				most = min(dims, most)
			}
			if q.Kind() != document.Number || !q.IsInt() || q.Int() < 1 || q.Int() > int64(most) {
				return policyError("The Vector Indexing Policy parameter QuantizationByteSize value :: %s is out of range. The allowed range is between 1 and %d.", plain(q), most)
			}
		}
		if s := ix.Get("indexingSearchListSize"); s.IsDefined() {
			if s.Kind() != document.Number || !s.IsInt() || s.Int() < 25 || s.Int() > 500 {
				return policyError("IndexingSearchListSize value :: %s is out of range. The allowed range is between 25 and 500.", plain(s))
			}
		}
		if sk := ix.Get("vectorIndexShardKey"); sk.IsDefined() && !sk.IsNull() {
			if sk.Kind() != document.Array {
				return policyError("One of the specified inputs is invalid")
			}
			if sk.Len() > 1 {
				return policyError("The number of shard paths defined in the Vector Indexing Policy: %d exceeds the maximum: 1.", sk.Len())
			}
			for _, s := range sk.Array() {
				if s.Kind() != document.String || !strings.HasPrefix(s.Str(), "/") {
					return policyError("The Vector Indexing Policy has an invalid Shard Path: %s.", plain(s))
				}
			}
		}
	}
	return nil
}

// IndexPaths are the paths of the vector indexes of an indexing policy
// CheckIndexes accepted, in its order: a vector index's place in the list
// is its ordinal, which never changes, since a replace may not change the
// list (CheckReplace).
func IndexPaths(indexingPolicy document.Value) [][]string {
	var out [][]string
	for _, ix := range indexingPolicy.Get("vectorIndexes").Array() {
		if path, err := document.ParsePath(ix.Get("path").Str()); err == nil && len(path) > 0 {
			out = append(out, path)
		}
	}
	return out
}

// CheckReplace refuses a container replace that changes the embedding
// policy or the vector indexes: the service keeps both as created.
func CheckReplace(oldPolicy, newPolicy, oldIndexes, newIndexes document.Value) error {
	if !same(oldPolicy, newPolicy) {
		return policyError("Paths in existing embedding policy cannot be modified in Collection Replace.")
	}
	if !same(oldIndexes, newIndexes) {
		return policyError("Paths in existing vector indexing policy cannot be modified in Collection Replace.")
	}
	return nil
}

// same compares two policy values, taking undefined, null and an empty
// list alike.
func same(a, b document.Value) bool {
	empty := func(v document.Value) bool {
		return !v.IsDefined() || v.IsNull() || (v.Kind() == document.Array && v.Len() == 0) ||
			(v.Kind() == document.Object && v.Get("vectorEmbeddings").Len() == 0 && v.Len() <= 1)
	}
	if empty(a) && empty(b) {
		return true
	}
	return document.Equal(a, b)
}
