package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/mayfly-db/mayfly/internal/document"
	"github.com/mayfly-db/mayfly/internal/query/vector"
	"github.com/mayfly-db/mayfly/internal/storage"
	"github.com/mayfly-db/mayfly/internal/ttl"
)

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

// containerRecord is a container's stored metadata. Props holds the
// user-visible properties (normalised, without system properties); the rest
// is derived from them when the record is loaded.
type containerRecord struct {
	ID       string `json:"id"`
	DBID     string `json:"db"`
	DBRid    []byte `json:"dbRid"`
	Rid      []byte `json:"rid"`
	Ts       int64  `json:"ts"`
	Etag     string `json:"etag"`
	OfferRid string `json:"offer,omitempty"`
	// Ranges is the number of partition key ranges, fixed at creation.
	Ranges int `json:"ranges,omitempty"`
	// SeqPerRange: the container keeps an LSN sequence per range
	// (sequence.go); one created before keeps one for all of them.
	SeqPerRange bool `json:"seqPerRange,omitempty"`
	// RangesV1: the ranges cut the hash space of version 1 keys
	// (partition.SplitV1), where a container with such a key created
	// before they did cuts version 2's, and keeps its items in range 0.
	RangesV1 bool `json:"rangesV1,omitempty"`
	// UniqueByValue: the unique-key entries encode values as DISTINCT
	// compares them (eval.CanonicalKey), so 1e18 and 1000000000000000000
	// collide. A container created before encodes their JSON text, and
	// keeps doing so: its stored entries are in that form.
	UniqueByValue bool `json:"uniqueByValue,omitempty"`
	// VectorEntries: the items' vectors at the paths of the vector
	// indexes are stored apart, in binary (vectors.go). A container
	// created before stores none, and scores every document.
	VectorEntries bool `json:"vectorEntries,omitempty"`
	// TextPaths are the paths whose texts' words are stored (words.go):
	// the full-text indexes' paths when the container was created. A
	// container created before stores none, and reads its scope for a
	// full-text filter.
	TextPaths [][]string `json:"textPaths,omitempty"`
	// TextTotals: the sequences' states hold the words of the items'
	// texts at TextPaths (usage.go), which a ranked query's statistics
	// take (rankwords.go). A container created before keeps none, and
	// a ranked query reads its scope.
	TextTotals bool           `json:"textTotals,omitempty"`
	Props      document.Value `json:"props"`
	TTL        ttl.History    `json:"ttl"`
	Index      indexState     `json:"index"`

	pk         pkDefinition
	uniqueKeys [][][]string // per unique key, its paths
	mode       string       // indexing mode
	index      indexPolicy
	vectors    vector.Policy
	vecPaths   [][]string // the paths of the vector indexes whose vectors are stored, by ordinal
	planar     bool       // geospatialConfig Geometry: spatial functions work in the plane
	computed   []computedProperty
}

// indexState is where the container's range index stands: entries of
// Version are complete when Ready; until then a builder fills them from
// item sequence Cursor onwards and queries scan.
type indexState struct {
	Version uint32 `json:"version"`
	Ready   bool   `json:"ready"`
	Cursor  []byte `json:"cursor,omitempty"`
	// Absent lists the paths whose documents without them have entries
	// of their own (absent.go).
	Absent []absentPath `json:"absent,omitempty"`
}

type pkDefinition struct {
	paths   [][]string
	raw     []string
	kind    string
	version int
}

// hashV1 reports whether the key hashes as version 1 (Hash or Range of
// one path, without version 2).
func (d pkDefinition) hashV1() bool {
	return len(d.paths) == 1 && d.kind != "MultiHash" && d.version != 2
}

func (c *containerRecord) ridString() string { return ridString(c.Rid) }

func (c *containerRecord) link() string { return "dbs/" + c.DBID + "/colls/" + c.ID }

func (c *containerRecord) self() string {
	return "dbs/" + ridString(c.DBRid) + "/colls/" + c.ridString() + "/"
}

func (c *containerRecord) body() document.Value {
	fields := append([]document.Field(nil), c.Props.Fields()...)
	if s := c.TTL.Setting(); s.On {
		fields = setField(fields, "defaultTtl", s.Value())
	}
	rid := c.ridString()
	fields = append(fields,
		document.Field{Name: "_rid", Value: document.Str(rid)},
		document.Field{Name: "_ts", Value: document.Int(c.Ts)},
		document.Field{Name: "_self", Value: document.Str(c.self())},
		document.Field{Name: "_etag", Value: document.Str(c.Etag)},
		document.Field{Name: "_docs", Value: document.Str("docs/")},
		document.Field{Name: "_sprocs", Value: document.Str("sprocs/")},
		document.Field{Name: "_triggers", Value: document.Str("triggers/")},
		document.Field{Name: "_udfs", Value: document.Str("udfs/")},
		document.Field{Name: "_conflicts", Value: document.Str("conflicts/")},
	)
	return document.Obj(fields)
}

func (c *containerRecord) resource() *Resource {
	return &Resource{Body: c.body(), Etag: c.Etag, Rid: c.ridString()}
}

func setField(fields []document.Field, name string, v document.Value) []document.Field {
	for i := range fields {
		if fields[i].Name == name {
			fields[i].Value = v
			return fields
		}
	}
	return append(fields, document.Field{Name: name, Value: v})
}

func decodeContainer(raw []byte) (*containerRecord, error) {
	var c containerRecord
	if err := unmarshalRecord(raw, &c); err != nil {
		return nil, err
	}
	if _, derr := c.derive(); derr != nil {
		return nil, fmt.Errorf("stored container %q: %w", c.ID, derr)
	}
	return &c, nil
}

var systemContainerProps = []string{"_rid", "_ts", "_self", "_etag", "_docs", "_sprocs", "_triggers", "_udfs", "_conflicts", "defaultTtl"}

// normalizeContainer validates a container body and fills in the defaults
// the service fills in. It returns the properties to store and the TTL
// setting asked for.
func normalizeContainer(body document.Value) (document.Value, ttl.Setting, *Error) {
	id, derr := bodyID(body)
	if derr != nil {
		return document.Undef, ttl.Setting{}, derr
	}
	if derr := validateResourceID(id); derr != nil {
		return document.Undef, ttl.Setting{}, derr
	}
	setting, derr := parseDefaultTTL(body.Get("defaultTtl"))
	if derr != nil {
		return document.Undef, ttl.Setting{}, derr
	}
	props := body.Without(systemContainerProps...)
	if pk := body.Get("partitionKey"); pk.IsDefined() && !pk.IsNull() {
		norm, derr := normalizePartitionKey(pk)
		if derr != nil {
			return document.Undef, ttl.Setting{}, derr
		}
		props = props.With("partitionKey", norm)
	}
	ip, derr := normalizeIndexingPolicy(body.Get("indexingPolicy"))
	if derr != nil {
		return document.Undef, ttl.Setting{}, derr
	}
	props = props.With("indexingPolicy", ip)
	if derr := checkGeospatial(body.Get("geospatialConfig"), ip.Get("spatialIndexes")); derr != nil {
		return document.Undef, ttl.Setting{}, derr
	}
	if err := ttl.CheckIndexingMode(setting, ip.Get("indexingMode").Str()); err != nil {
		return document.Undef, ttl.Setting{}, &Error{Code: BadRequest, Message: err.Error()}
	}
	if derr := checkErasureProp(body.Get(erasureProp)); derr != nil {
		return document.Undef, ttl.Setting{}, derr
	}
	if _, err := vector.ParsePolicy(body.Get("vectorEmbeddingPolicy")); err != nil {
		return document.Undef, ttl.Setting{}, &Error{Code: BadRequest, Message: err.Error()}
	}
	if derr := checkChangeFeedPolicy(body.Get("changeFeedPolicy")); derr != nil {
		return document.Undef, ttl.Setting{}, derr
	}
	if _, derr := parseComputedProperties(body.Get("computedProperties")); derr != nil {
		return document.Undef, ttl.Setting{}, derr
	}
	if ft := body.Get("fullTextPolicy"); ft.IsDefined() && !ft.IsNull() {
		if ft.Kind() != document.Object {
			return document.Undef, ttl.Setting{}, errorf(BadRequest, "The fullTextPolicy must be an object.")
		}
		if derr := checkTextPaths(ft.Get("fullTextPaths"), "fullTextPaths"); derr != nil {
			return document.Undef, ttl.Setting{}, derr
		}
	}
	if uk := body.Get("uniqueKeyPolicy"); uk.IsDefined() {
		keys, derr := parseUniqueKeys(uk)
		if derr != nil {
			return document.Undef, ttl.Setting{}, derr
		}
		// Checked here, not in parseUniqueKeys, which also reads the
		// containers stored before the limits were.
		if len(keys) > maxUniqueKeys {
			return document.Undef, ttl.Setting{}, errorf(BadRequest, "A unique key policy may have at most %d unique keys.", maxUniqueKeys)
		}
		for _, k := range keys {
			if len(k) > maxUniqueKeyPaths {
				return document.Undef, ttl.Setting{}, errorf(BadRequest, "A unique key may have at most %d paths.", maxUniqueKeyPaths)
			}
		}
	}
	if !body.Get("conflictResolutionPolicy").IsDefined() {
		props = props.With("conflictResolutionPolicy", mustParse(`{"mode":"LastWriterWins","conflictResolutionPath":"/_ts","conflictResolutionProcedure":""}`))
	}
	if !body.Get("geospatialConfig").IsDefined() {
		props = props.With("geospatialConfig", mustParse(`{"type":"Geography"}`))
	}
	return props, setting, nil
}

// checkChangeFeedPolicy refuses a changeFeedPolicy whose retention is not
// a whole number of minutes, from 0: read as none, a retention sent in
// another form (a string, an object) would turn the feed of all versions
// and deletes off without a word.
func checkChangeFeedPolicy(v document.Value) *Error {
	if !v.IsDefined() || v.IsNull() {
		return nil
	}
	if v.Kind() != document.Object {
		return errorf(BadRequest, "The changeFeedPolicy must be an object.")
	}
	r := v.Get("retentionDuration")
	if !r.IsDefined() || r.IsNull() {
		return nil
	}
	if f := r.Float(); r.Kind() != document.Number || f < 0 || f != math.Trunc(f) || f > math.MaxInt32 {
		return errorf(BadRequest, "The changeFeedPolicy's retentionDuration must be a whole number of minutes from 0 to %d; it is %s.", math.MaxInt32, r)
	}
	return nil
}

func mustParse(s string) document.Value {
	v, err := document.Parse([]byte(s))
	if err != nil {
		panic(err) // constant input
	}
	return v
}

func normalizePartitionKey(pk document.Value) (document.Value, *Error) {
	if pk.Kind() != document.Object {
		return document.Undef, errorf(BadRequest, "The partitionKey must be an object with 'paths', 'kind' and 'version'.")
	}
	paths := pk.Get("paths")
	if paths.Kind() != document.Array || paths.Len() == 0 {
		return document.Undef, errorf(BadRequest, "The partition key definition must have at least one path in 'paths'.")
	}
	if paths.Len() > 3 {
		return document.Undef, errorf(BadRequest, "The partition key definition can have at most 3 paths.")
	}
	var parsed [][]string
	for _, p := range paths.Array() {
		if p.Kind() != document.String {
			return document.Undef, errorf(BadRequest, "Partition key paths must be strings.")
		}
		if _, err := document.ParsePath(p.Str()); err != nil {
			return document.Undef, errorf(BadRequest, "The partition key path '%s' is invalid: %v", p.Str(), err)
		}
		path, ok := propertyPath(p)
		if !ok {
			return document.Undef, errorf(BadRequest, "The partition key path '%s' is invalid: it names one property, without wildcards or array elements.", p.Str())
		}
		// Of a hierarchical key, no path may be another's or lie
		// inside it: an item could not hold values at both.
		for _, q := range parsed {
			n := min(len(q), len(path))
			if slices.Equal(q[:n], path[:n]) {
				return document.Undef, errorf(BadRequest, "The partition key path '%s' repeats or overlaps another path of the key.", p.Str())
			}
		}
		parsed = append(parsed, path)
	}
	kind := pk.Get("kind")
	switch {
	case !kind.IsDefined() || kind.IsNull() || kind.Str() == "":
		if paths.Len() > 1 {
			pk = pk.With("kind", document.Str("MultiHash"))
		} else {
			pk = pk.With("kind", document.Str("Hash"))
		}
	case kind.Str() == "Hash" || kind.Str() == "Range":
		if paths.Len() > 1 {
			return document.Undef, errorf(BadRequest, "A partition key with more than one path must be of kind 'MultiHash'.")
		}
	case kind.Str() == "MultiHash":
	default:
		return document.Undef, errorf(BadRequest, "The partition key kind '%s' is invalid; use 'Hash' or 'MultiHash'.", kind.String())
	}
	if v := pk.Get("version"); v.IsDefined() && !v.IsNull() {
		if !v.IsInt() || (v.Int() != 1 && v.Int() != 2) {
			return document.Undef, errorf(BadRequest, "The partition key version must be 1 or 2.")
		}
	}
	if pk.Get("kind").Str() == "MultiHash" {
		if v := pk.Get("version"); v.IsDefined() && !v.IsNull() && v.Int() != 2 {
			return document.Undef, errorf(BadRequest, "A partition key of kind 'MultiHash' must be of version 2.")
		}
		pk = pk.With("version", document.Int(2))
	}
	return pk, nil
}

var defaultExcludedEtag = mustParse(`{"path":"/\"_etag\"/?"}`)

func normalizeIndexingPolicy(ip document.Value) (document.Value, *Error) {
	if !ip.IsDefined() || ip.IsNull() {
		return mustParse(`{"indexingMode":"consistent","automatic":true,"includedPaths":[{"path":"/*"}],"excludedPaths":[{"path":"/\"_etag\"/?"}]}`), nil
	}
	if ip.Kind() != document.Object {
		return document.Undef, errorf(BadRequest, "The indexingPolicy must be an object.")
	}
	mode := ip.Get("indexingMode")
	switch {
	case !mode.IsDefined() || mode.IsNull():
		ip = ip.With("indexingMode", document.Str("consistent"))
	case mode.Kind() == document.String && (strings.EqualFold(mode.Str(), "consistent") || strings.EqualFold(mode.Str(), "lazy") || strings.EqualFold(mode.Str(), "none")):
		ip = ip.With("indexingMode", document.Str(strings.ToLower(mode.Str())))
	default:
		return document.Undef, errorf(BadRequest, "The indexingMode '%s' is invalid; use 'consistent' or 'none'.", mode.String())
	}
	if a := ip.Get("automatic"); !a.IsDefined() || a.IsNull() {
		ip = ip.With("automatic", document.BoolValue(true))
	} else if a.Kind() != document.Bool {
		return document.Undef, errorf(BadRequest, "The indexingPolicy property 'automatic' must be a boolean.")
	}
	none := ip.Get("indexingMode").Str() == "none"
	for _, name := range []string{"includedPaths", "excludedPaths"} {
		paths := ip.Get(name)
		// An empty list of included paths is what the .NET SDK sends for a
		// policy that names none (only composite indexes, say): the whole
		// document, unless the excluded paths take the root.
		emptyIncluded := name == "includedPaths" && paths.Kind() == document.Array && paths.Len() == 0 &&
			!slices.ContainsFunc(ip.Get("excludedPaths").Array(), func(p document.Value) bool { return p.Get("path").Str() == "/*" })
		if !paths.IsDefined() || paths.IsNull() || emptyIncluded {
			switch {
			case none:
				paths = document.Arr(nil)
			case name == "includedPaths":
				paths = mustParse(`[{"path":"/*"}]`)
			default:
				paths = document.Arr(nil)
			}
		}
		if paths.Kind() != document.Array {
			return document.Undef, errorf(BadRequest, "The indexingPolicy property '%s' must be an array.", name)
		}
		entries := slices.Clone(paths.Array())
		for i, p := range entries {
			if p.Kind() != document.Object || p.Get("path").Kind() != document.String || !strings.HasPrefix(p.Get("path").Str(), "/") {
				return document.Undef, errorf(BadRequest, "Every entry of '%s' must be an object with a 'path' starting with '/'.", name)
			}
			// "/" is the root as DocumentDB-era policies name it: the
			// whole document, which is "/*" now.
			if p.Get("path").Str() == "/" {
				entries[i] = p.With("path", document.Str("/*"))
			}
			// The legacy per-path "indexes" (kind, dataType, precision) are
			// accepted and, as by the service, which ignores them, not kept.
			if name == "includedPaths" {
				entries[i] = entries[i].Without("indexes")
			}
		}
		paths = document.Arr(entries)
		if name == "excludedPaths" && !none {
			has := false
			for _, p := range paths.Array() {
				if p.Get("path").Str() == `/"_etag"/?` {
					has = true
				}
			}
			if !has {
				paths = document.Arr(append(append([]document.Value(nil), paths.Array()...), defaultExcludedEtag))
			}
		}
		ip = ip.With(name, paths)
	}
	if derr := checkComposites(ip.Get("compositeIndexes")); derr != nil {
		return document.Undef, derr
	}
	if derr := checkSpatialIndexes(ip.Get("spatialIndexes")); derr != nil {
		return document.Undef, derr
	}
	if derr := checkTextPaths(ip.Get("fullTextIndexes"), "fullTextIndexes"); derr != nil {
		return document.Undef, derr
	}
	return ip, nil
}

// checkIndexPath refuses an included or excluded path the service
// refuses: segments of letters, digits and underscores, "[]" for an
// array's elements, or a quoted label (any other character needs the
// quotes), ending in "/?" (the value at the path) or "/*" (its subtree).
// The position is where reading the path failed, as the service says.
func checkIndexPath(p string) *Error {
	fail := func(pos int) *Error {
		return errorf(BadRequest, "The indexing path '%s' could not be accepted, failed near position '%d'. Please ensure that the path is a valid path. Common errors include invalid characters or absence of quotes around labels.", p, pos)
	}
	i := 0
	for {
		if i >= len(p) || p[i] != '/' {
			return fail(i)
		}
		i++
		switch {
		case i >= len(p):
			return fail(i)
		case p[i] == '?' || p[i] == '*':
			if i+1 != len(p) {
				return fail(i + 1)
			}
			return nil
		case p[i] == '"':
			j := i + 1
			for j < len(p) && (p[j] != '"' || p[j-1] == '\\') {
				j++
			}
			if j >= len(p) || j == i+1 {
				return fail(j)
			}
			i = j + 1
		case strings.HasPrefix(p[i:], "[]"):
			i += 2
		default:
			start := i
			for i < len(p) && p[i] != '/' {
				r, size := utf8.DecodeRuneInString(p[i:])
				if r != '_' && !unicode.IsLetter(r) && !unicode.IsDigit(r) {
					return fail(i)
				}
				i += size
			}
			if i == start {
				return fail(i)
			}
		}
	}
}

// checkPolicyPaths checks the included and excluded paths of policy ip
// (checkIndexPath, checkPathSets). A replace that keeps the paths the
// container has (old, its stored policy) is not refused for them: a
// container created before these checks keeps working as written.
func checkPolicyPaths(ip, old document.Value) *Error {
	lists := func(p document.Value) string {
		return p.Get("includedPaths").String() + p.Get("excludedPaths").String()
	}
	if old.IsDefined() && lists(ip) == lists(old) {
		return nil
	}
	for _, name := range []string{"includedPaths", "excludedPaths"} {
		for _, p := range ip.Get(name).Array() {
			if derr := checkIndexPath(p.Get("path").Str()); derr != nil {
				return derr
			}
		}
	}
	return checkPathSets(ip, strings.EqualFold(ip.Get("indexingMode").Str(), "none"))
}

// checkPathSets refuses included and excluded paths the service refuses
// together: neither holding the root ("/*"), which every policy that
// indexes must place, or one path in both.
func checkPathSets(ip document.Value, none bool) *Error {
	included := map[string]bool{}
	root := false
	for _, p := range ip.Get("includedPaths").Array() {
		included[p.Get("path").Str()] = true
		root = root || p.Get("path").Str() == "/*"
	}
	for _, p := range ip.Get("excludedPaths").Array() {
		path := p.Get("path").Str()
		if included[path] {
			return errorf(BadRequest, "The indexing path '%s' is both included and excluded: name each path in one of the two.", path)
		}
		root = root || path == "/*"
	}
	if !root && !none {
		return errorf(BadRequest, `The special mandatory indexing path "/" is not provided in any of the path type sets.`)
	}
	return nil
}

// policyList returns the entries of a policy's optional list property
// name: none when it is absent or null, a 400 when it is not an array.
func policyList(v document.Value, name string) ([]document.Value, *Error) {
	switch {
	case !v.IsDefined() || v.IsNull():
		return nil, nil
	case v.Kind() != document.Array:
		return nil, errorf(BadRequest, "The policy property '%s' must be an array.", name)
	}
	return v.Array(), nil
}

// checkTextPaths refuses a full-text policy's paths (or the indexing
// policy's full-text indexes) that are not an array of objects each with
// a path naming one property, without wildcards, and each once.
func checkTextPaths(v document.Value, name string) *Error {
	list, derr := policyList(v, name)
	if derr != nil {
		return derr
	}
	seen := map[string]bool{}
	for _, p := range list {
		if _, ok := propertyPath(p.Get("path")); !ok {
			return errorf(BadRequest, "The %s path %s is invalid: it names one property, such as '/text', without wildcards.", name, p.Get("path").String())
		}
		if seen[p.Get("path").Str()] {
			return errorf(BadRequest, "The %s path '%s' appears twice.", name, p.Get("path").Str())
		}
		seen[p.Get("path").Str()] = true
	}
	return nil
}

// checkComposites refuses composite indexes the service refuses: each an
// array of two or more paths naming properties (no wildcard, no array
// elements), each ascending or descending. A policy that stored one would
// leave it unused (parseComposite), and a query counting on it refused.
func checkComposites(v document.Value) *Error {
	list, derr := policyList(v, "compositeIndexes")
	if derr != nil {
		return derr
	}
	for i, ci := range list {
		if ci.Kind() != document.Array || ci.Len() < 2 {
			return errorf(BadRequest, "Composite index %d must be an array of at least two paths.", i)
		}
		for _, p := range ci.Array() {
			if _, ok := propertyPath(p.Get("path")); !ok {
				return errorf(BadRequest, "The composite index path %s is invalid: a composite index path names a property, without wildcards or array elements.", p.Get("path").String())
			}
			switch o := p.Get("order"); {
			case !o.IsDefined() || o.IsNull():
			case o.Kind() == document.String && (strings.EqualFold(o.Str(), "ascending") || strings.EqualFold(o.Str(), "descending")):
			default:
				return errorf(BadRequest, "The composite index order %s of path '%s' is invalid; use 'ascending' or 'descending'.", o.String(), p.Get("path").Str())
			}
		}
	}
	return nil
}

// checkSpatialIndexes refuses spatial indexes without a path or with a
// type other than the service's four.
func checkSpatialIndexes(v document.Value) *Error {
	list, derr := policyList(v, "spatialIndexes")
	if derr != nil {
		return derr
	}
	for _, si := range list {
		if si.Kind() != document.Object || si.Get("path").Kind() != document.String || !strings.HasPrefix(si.Get("path").Str(), "/") {
			return errorf(BadRequest, "Every spatial index must be an object with a 'path' starting with '/'.")
		}
		types := si.Get("types")
		if types.IsDefined() && !types.IsNull() && types.Kind() != document.Array {
			return errorf(BadRequest, "The spatial index 'types' of path '%s' must be an array.", si.Get("path").Str())
		}
		for _, t := range types.Array() {
			switch t.Str() {
			case "Point", "Polygon", "LineString", "MultiPolygon":
			default:
				return errorf(BadRequest, "The spatial type %s of path '%s' is invalid; use Point, Polygon, LineString or MultiPolygon.", t.String(), si.Get("path").Str())
			}
		}
	}
	return nil
}

// checkGeospatial refuses a geospatialConfig other than the service's two
// kinds of space, and a spatial index whose boundingBox is not four
// numbers around some area; in a container of geometry every spatial
// index needs one, for the plane has no extent of its own to index.
func checkGeospatial(config, spatial document.Value) *Error {
	if config.IsDefined() && !config.IsNull() {
		t := config.Get("type")
		if config.Kind() != document.Object || t.Kind() != document.String || !strings.EqualFold(t.Str(), "Geography") && !strings.EqualFold(t.Str(), "Geometry") {
			return errorf(BadRequest, "The geospatialConfig must be an object whose 'type' is Geography or Geometry.")
		}
	}
	list, _ := policyList(spatial, "spatialIndexes")
	for _, si := range list {
		path := si.Get("path").Str()
		box := si.Get("boundingBox")
		if !box.IsDefined() || box.IsNull() {
			if planarConfig(config) {
				return errorf(BadRequest, "The spatial index of path '%s' needs a boundingBox in a container whose geospatialConfig is Geometry.", path)
			}
			continue
		}
		var v [4]float64
		for i, name := range []string{"xmin", "ymin", "xmax", "ymax"} {
			x := box.Get(name)
			if x.Kind() != document.Number {
				return errorf(BadRequest, "The boundingBox of the spatial index of path '%s' must have the numbers xmin, ymin, xmax and ymax.", path)
			}
			v[i] = x.Float()
		}
		if v[0] >= v[2] || v[1] >= v[3] {
			return errorf(BadRequest, "The boundingBox of the spatial index of path '%s' must have xmin below xmax and ymin below ymax.", path)
		}
	}
	return nil
}

// planarConfig reports whether a geospatialConfig makes a container's
// space the plane (geometry) rather than the Earth (geography).
func planarConfig(config document.Value) bool {
	return strings.EqualFold(config.Get("type").Str(), "Geometry")
}

// The service's limits on a unique key policy: keys per container, and
// paths per key.
const (
	maxUniqueKeys     = 10
	maxUniqueKeyPaths = 16
)

func parseUniqueKeys(uk document.Value) ([][][]string, *Error) {
	if !uk.IsDefined() || uk.IsNull() {
		return nil, nil
	}
	keys := uk.Get("uniqueKeys")
	if uk.Kind() != document.Object || (keys.IsDefined() && !keys.IsNull() && keys.Kind() != document.Array) {
		return nil, errorf(BadRequest, "The uniqueKeyPolicy must be an object with a 'uniqueKeys' array.")
	}
	var out [][][]string
	for _, k := range keys.Array() {
		paths := k.Get("paths")
		if paths.Kind() != document.Array || paths.Len() == 0 {
			return nil, errorf(BadRequest, "Every unique key must have a non-empty 'paths' array.")
		}
		var ps [][]string
		for _, p := range paths.Array() {
			parsed, err := document.ParsePath(p.Str())
			if p.Kind() != document.String || err != nil {
				return nil, errorf(BadRequest, "The unique key path %s is invalid.", p.String())
			}
			ps = append(ps, parsed)
		}
		out = append(out, ps)
	}
	return out, nil
}

// derive fills the record's derived fields from Props.
func (c *containerRecord) derive() (*containerRecord, *Error) {
	c.pk = pkDefinition{}
	if pk := c.Props.Get("partitionKey"); pk.Kind() == document.Object {
		for _, p := range pk.Get("paths").Array() {
			parsed, err := document.ParsePath(p.Str())
			if err != nil {
				return nil, errorf(BadRequest, "invalid partition key path %q", p.Str())
			}
			c.pk.paths = append(c.pk.paths, parsed)
			c.pk.raw = append(c.pk.raw, p.Str())
		}
		c.pk.kind = pk.Get("kind").Str()
		c.pk.version = int(pk.Get("version").Int())
	}
	uk, derr := parseUniqueKeys(c.Props.Get("uniqueKeyPolicy"))
	if derr != nil {
		return nil, derr
	}
	c.uniqueKeys = uk
	c.mode = c.Props.Get("indexingPolicy").Get("indexingMode").Str()
	c.index = newIndexPolicy(c.Props.Get("indexingPolicy"))
	c.index.ts = c.tsReady()
	// Checked when the container was written; one stored before the check
	// existed orders by cosine wherever its policy cannot be read.
	c.vectors, _ = vector.ParsePolicy(c.Props.Get("vectorEmbeddingPolicy"))
	if c.VectorEntries {
		c.vecPaths = vector.IndexPaths(c.Props.Get("indexingPolicy"))
		c.vecPaths = c.vecPaths[:min(len(c.vecPaths), maxVectorIndexes)]
	}
	c.planar = planarConfig(c.Props.Get("geospatialConfig"))
	// Checked when written; a container stored before they were computed
	// computes none it cannot read.
	c.computed, _ = parseComputedProperties(c.Props.Get("computedProperties"))
	return c, nil
}

// loadContainer reads a container's metadata, reusing the parsed form while
// the stored bytes are unchanged (another gateway may have changed them).
//
// The database's rid is remembered by name, so the usual read is one Get:
// the container record under that rid. A database dropped and created
// again under the same name has a new rid; the old one then finds nothing,
// and the database record is read afresh.
func (e *Engine) loadContainer(r storage.Reader, db, coll string) (*containerRecord, error) {
	e.mu.Lock()
	rid, known := e.dbRids[db]
	e.mu.Unlock()
	if known {
		raw, err := r.Get(containerKey(rid, coll))
		if err == nil {
			return e.decodeCachedContainer(containerKey(rid, coll), raw)
		}
		if err != storage.ErrNotFound {
			return nil, err
		}
	}
	d, err := e.loadDatabase(r, db)
	if err != nil {
		if isNotFound(err) {
			return nil, &Error{Code: NotFound, SubStatus: SubOwnerResourceNotFound, Message: fmt.Sprintf("Owner resource does not exist: database '%s' not found.", db)}
		}
		return nil, err
	}
	e.mu.Lock()
	e.dbRids[db] = d.Rid
	e.mu.Unlock()
	key := containerKey(d.Rid, coll)
	raw, err := r.Get(key)
	if err == storage.ErrNotFound {
		return nil, errorf(NotFound, "Resource Not Found. Container '%s' does not exist in database '%s'.", coll, db)
	}
	if err != nil {
		return nil, err
	}
	return e.decodeCachedContainer(key, raw)
}

func (e *Engine) decodeCachedContainer(key, raw []byte) (*containerRecord, error) {
	e.mu.Lock()
	cached, ok := e.cache[string(key)]
	e.mu.Unlock()
	if ok && bytes.Equal(cached.raw, raw) {
		return cached.c, nil
	}
	c, err := decodeContainer(raw)
	if err != nil {
		return nil, err
	}
	e.mu.Lock()
	e.cache[string(key)] = cachedContainer{raw: bytes.Clone(raw), c: c}
	e.mu.Unlock()
	return c, nil
}

// checkVectorIndexes checks a container's vector indexes against its
// embedding policy (normalizeContainer checked the policy itself).
func checkVectorIndexes(props document.Value) *Error {
	p, err := vector.ParsePolicy(props.Get("vectorEmbeddingPolicy"))
	if err == nil {
		err = vector.CheckIndexes(props.Get("indexingPolicy"), p)
	}
	if err != nil {
		return &Error{Code: BadRequest, Message: err.Error()}
	}
	return nil
}

// CreateContainer creates a container in database db.
func (e *Engine) CreateContainer(ctx context.Context, db string, body document.Value, tp *Throughput) (*Resource, error) {
	props, setting, derr := normalizeContainer(body)
	if derr == nil {
		derr = checkPolicyPaths(props.Get("indexingPolicy"), document.Undef)
	}
	if derr == nil {
		derr = checkVectorIndexes(props)
	}
	if pk := body.Get("partitionKey"); derr == nil && tp != nil && tp.Autoscale && (!pk.IsDefined() || pk.IsNull()) {
		// The service's create-a-collection reference: "When autoscale is
		// used, a partitionKey definition is required."
		derr = errorf(BadRequest, "A container with autoscale throughput needs a partitionKey definition.")
	}
	if derr != nil {
		return nil, derr
	}
	id := props.Get("id").Str()
	now, err := e.Now(ctx)
	if err != nil {
		return nil, err
	}
	var c *containerRecord
	err = e.store.Update(ctx, func(tx storage.Txn) error {
		d, err := e.loadDatabase(tx, db)
		if err != nil {
			return err
		}
		if _, err := tx.Get(containerKey(d.Rid, id)); err == nil {
			return conflict()
		} else if err != storage.ErrNotFound {
			return err
		}
		n, err := nextCounter(tx, "rid")
		if err != nil {
			return err
		}
		rid := containerRid(d.Rid, n)
		c = &containerRecord{ID: id, DBID: db, DBRid: d.Rid, Rid: rid, Ts: now.Unix(), Props: props}
		c.Etag = etagFor(rid, n)
		c.TTL = ttl.NewHistory(setting, now)
		c.Index = indexState{Version: 1, Ready: true}
		c.VectorEntries = len(vector.IndexPaths(props.Get("indexingPolicy"))) > 0
		c.TextPaths = textIndexPaths(props.Get("indexingPolicy"))
		c.TextTotals = len(c.TextPaths) > 0
		if _, derr := c.derive(); derr != nil {
			return derr
		}
		if tp == nil && d.OfferRid == "" {
			// The service gives a container created without throughput,
			// in a database without shared throughput, its own 400 RU/s.
			tp = &Throughput{Manual: defaultThroughput}
		}
		c.Ranges, c.SeqPerRange, c.RangesV1, c.UniqueByValue = e.rangeCount(tp), true, c.pk.hashV1(), true
		if tp != nil {
			o, err := e.createOffer(tx, now, tp, c.self(), c.ridString())
			if err != nil {
				return err
			}
			c.OfferRid = o.Rid
		}
		return setJSON(tx, containerKey(d.Rid, id), c)
	})
	if err != nil {
		return nil, err
	}
	e.containerChanged(ctx, c)
	return c.resource(), nil
}

// ReadContainer returns a container.
func (e *Engine) ReadContainer(ctx context.Context, db, coll string) (*Resource, *ContainerUsage, error) {
	var c *containerRecord
	var usage *ContainerUsage
	now, done, err := e.judging(ctx, db, coll)
	if err != nil {
		return nil, nil, err
	}
	defer done()
	err = e.store.View(ctx, func(r storage.Reader) error {
		var err error
		c, err = e.loadContainer(r, db, coll)
		if err != nil {
			return err
		}
		if usage, err = e.usage(r, c, now, nil); err != nil {
			return err
		}
		if usage.Scripts, err = countScripts(r, c); err != nil || c.Index.Ready {
			return err
		}
		cursor := c.Index.Cursor
		switch kept, err := r.Get(indexCursorKey(c)); {
		case err == nil:
			cursor = kept
		case !errors.Is(err, storage.ErrNotFound):
			return err
		}
		usage.IndexProgress = c.Index.progress(cursor)
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	if c.Index.Ready {
		usage.IndexProgress = 100
	}
	return c.resource(), usage, nil
}

// ContainerUsage is what a container holds, expired items excluded, and
// how far a rebuild of its index has come.
type ContainerUsage struct {
	DocumentsCount int64
	DocumentsSize  int64 // bytes
	// IndexProgress is the percentage of the items the index of the
	// current policy covers: 100 unless a policy change is being applied.
	IndexProgress int
	// Scripts counts the container's scripts of each kind (ReadContainer
	// alone fills it in).
	Scripts map[ScriptKind]int
}

// progress estimates how much of the container a rebuild has covered,
// from the location the builder has reached (indexCursorKey). The
// builder walks items in key order, which is effective partition key
// order, and hashed keys spread evenly over it, so the first byte of the
// location is the share done, in 256ths.
func (s indexState) progress(cursor []byte) int {
	if s.Ready {
		return 100
	}
	if len(cursor) == 0 {
		return 0
	}
	return min(int(cursor[0])*100/256, 99)
}

// usage reads the container's counters (usage.go) and takes away the
// items that have expired but are not purged yet, which ttl.md says no
// longer count (eachExpired): the cost is O(1) plus the purge backlog,
// whatever the container holds. st, if not nil, counts the sequences'
// states and the expiry entries read.
func (e *Engine) usage(r storage.Reader, c *containerRecord, now time.Time, st *readStats) (*ContainerUsage, error) {
	totals, err := readTotals(r, c, 0)
	if err != nil {
		return nil, err
	}
	u := &ContainerUsage{DocumentsCount: totals.items, DocumentsSize: totals.bytes}
	if st != nil {
		st.entries += c.sequences()
	}
	err = eachExpired(r, c, now, func(size int64, _ []byte) {
		if st != nil {
			st.entries++
		}
		u.DocumentsCount--
		u.DocumentsSize -= size
	})
	if err != nil {
		return nil, err
	}
	u.DocumentsCount, u.DocumentsSize = max(u.DocumentsCount, 0), max(u.DocumentsSize, 0)
	return u, nil
}

// eachExpired calls fn with the size and location of each item of c that
// has expired by now but is not purged yet. Those are exactly the expiry
// index entries within the horizon, each holding its item's size and
// location.
func eachExpired(r storage.Reader, c *containerRecord, now time.Time, fn func(size int64, loc []byte)) error {
	if !c.TTL.NeedsPurge() {
		return nil
	}
	if from := c.TTL.Current().From; now.Before(from) {
		now = from // as expired() judges
	}
	z := c.TTL.Horizon(now)
	for _, fam := range []byte{famOwnDue, famByTs} {
		bound := z.OwnDue
		if fam == famByTs {
			bound = z.InheritTS
		}
		prefix, upper, ok := expiryRange(c, fam, bound)
		if !ok {
			continue
		}
		err := scanRange(r, prefix, upper, func(_, v []byte) (bool, error) {
			if size, loc, ok := decodeExpiryValue(v); ok {
				fn(size, loc)
			}
			return true, nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// ListContainers returns the containers of database db in id order.
func (e *Engine) ListContainers(ctx context.Context, db string) ([]document.Value, string, error) {
	var out []document.Value
	var dbRid string
	err := e.store.View(ctx, func(r storage.Reader) error {
		d, err := e.loadDatabase(r, db)
		if err != nil {
			return err
		}
		dbRid = d.ridString()
		return scanPrefix(r, containerPrefix(d.Rid), func(_, v []byte) (bool, error) {
			c, err := decodeContainer(v)
			if err != nil {
				return false, err
			}
			out = append(out, c.body())
			return true, nil
		})
	})
	return out, dbRid, err
}

// settingLead is how far ahead of the store's clock a TTL setting change
// over a shared store is dated: more than its transaction takes from
// reading the clock to committing, and short enough that the change still
// looks instant (ttl.md B2).
const settingLead = 200 * time.Millisecond

// settingMargin is how long before its instant a setting change must pass
// the store's commit deadline (storage.Deadliner): the store reads its
// clock a moment before the COMMIT itself, and the margin covers that
// moment, so the change is committed before its instant.
const settingMargin = 50 * time.Millisecond

// settingStamp is a setting change's "now", taken in its transaction tx:
// over a store with a clock of its own, the store's clock as tx began,
// read through tx's connection (a separate reading would wait for a
// second connection while tx holds one, and enough changes at once
// would hold every connection of the pool, each waiting for another);
// otherwise a stamp strictly after every one handed out.
func (e *Engine) settingStamp(ctx context.Context, tx storage.Txn) (time.Time, error) {
	if _, ok := e.store.(storage.Clocked); ok {
		return e.nowIn(ctx, tx, time.Time{})
	}
	return e.stamp(ctx, true)
}

// ReplaceContainer replaces a container's properties. The partition key and
// unique keys cannot change; a defaultTtl change takes effect at once for
// every item (ttl.md B2) at O(1) cost.
func (e *Engine) ReplaceContainer(ctx context.Context, db, coll string, body document.Value, ifMatch string) (*Resource, error) {
	props, setting, derr := normalizeContainer(body)
	if derr != nil {
		return nil, derr
	}
	if props.Get("id").Str() != coll {
		return nil, errorf(BadRequest, "The id in the body '%s' does not match the container '%s' addressed.", props.Get("id").Str(), coll)
	}
	// No expiry may be judged at an instant the change has passed before
	// it commits (ttl.md B1; docs/design/ttl.md, "the instant of a
	// change"). In one process, the new setting's instant is taken and
	// committed while no expiry is being judged in this container (see
	// Engine.locks). Over a store shared by several gateways, it is dated
	// settingLead ahead of the store's clock and committed before that
	// instant, or not at all.
	if e.leases == nil {
		defer e.changingSetting(db, coll)()
	}
	var now time.Time
	var c *containerRecord
	reindex := false
	err := e.store.Update(ctx, func(tx storage.Txn) error {
		reindex = false
		var err error
		if now, err = e.settingStamp(ctx, tx); err != nil {
			return err
		}
		if e.leases != nil {
			now = now.Add(settingLead)
			if !storage.CommitBefore(tx, now.Add(-settingMargin)) {
				return fmt.Errorf("engine: a store shared by several gateways cannot date a setting change: its transactions have no commit deadline")
			}
		}
		old, err := e.loadContainer(tx, db, coll)
		if err != nil {
			return err
		}
		if staleMatch(ifMatch, old.Etag) {
			return preconditionFailed()
		}
		if !body.Get("partitionKey").IsDefined() {
			props = props.With("partitionKey", old.Props.Get("partitionKey"))
		}
		// SDKs that know only the service's properties send a replace
		// without Mayfly's erasure setting: it stays unless set (null
		// clears it).
		if p := old.Props.Get(erasureProp); !body.Get(erasureProp).IsDefined() && p.IsDefined() {
			props = props.With(erasureProp, p)
		}
		if !samePartitionKey(old.Props, props) && (old.Props.Get("partitionKey").IsDefined() || props.Get("partitionKey").IsDefined()) {
			return errorf(BadRequest, "The partition key of a container cannot be changed.")
		}
		// The same definition, perhaps with its defaults spelled out: it
		// reads back as created.
		if pk := old.Props.Get("partitionKey"); pk.IsDefined() {
			props = props.With("partitionKey", pk)
		}
		// The embedding policy and the vector indexes stay as created. A
		// client that does not know them (an older SDK, which drops the
		// properties it has no field for) replaces without them: they
		// stay.
		if !body.Get("vectorEmbeddingPolicy").IsDefined() {
			props = props.With("vectorEmbeddingPolicy", old.Props.Get("vectorEmbeddingPolicy"))
		}
		if ip := props.Get("indexingPolicy"); !ip.Get("vectorIndexes").IsDefined() {
			props = props.With("indexingPolicy", ip.With("vectorIndexes", old.Props.Get("indexingPolicy").Get("vectorIndexes")))
		}
		if derr := checkVectorIndexes(props); derr != nil {
			return derr
		}
		if err := vector.CheckReplace(old.Props.Get("vectorEmbeddingPolicy"), props.Get("vectorEmbeddingPolicy"),
			old.Props.Get("indexingPolicy").Get("vectorIndexes"), props.Get("indexingPolicy").Get("vectorIndexes")); err != nil {
			return &Error{Code: BadRequest, Message: err.Error()}
		}
		if derr := checkPolicyPaths(props.Get("indexingPolicy"), old.Props.Get("indexingPolicy")); derr != nil {
			return derr
		}
		oldUK, newUK := old.Props.Get("uniqueKeyPolicy"), props.Get("uniqueKeyPolicy")
		if (oldUK.IsDefined() || newUK.IsDefined()) && !document.Equal(uniqueKeysValue(oldUK), uniqueKeysValue(newUK)) {
			// The service's answer, also to a replace that leaves the
			// policy out (the Python SDK's replace_container does).
			return errorf(Forbidden, "The unique index cannot be modified. To change the unique index, remove the collection and re-create a new one.")
		}
		n, err := nextCounter(tx, "rid")
		if err != nil {
			return err
		}
		// Readers judge at no earlier than the current setting's first
		// instant (containerRecord.expired), and the stamp that orders
		// changes after them is forgotten by a restart; a change dated at
		// or before that instant would replace the setting as one never in
		// force, and bring back items judged expired under it (ttl.md B1).
		if from := old.TTL.Current().From; !now.After(from) {
			now = from.Add(time.Nanosecond)
		}
		c = &containerRecord{ID: old.ID, DBID: old.DBID, DBRid: old.DBRid, Rid: old.Rid, Ts: now.Unix(), OfferRid: old.OfferRid, Ranges: old.Ranges, SeqPerRange: old.SeqPerRange, RangesV1: old.RangesV1, UniqueByValue: old.UniqueByValue, VectorEntries: old.VectorEntries, TextPaths: old.TextPaths, TextTotals: old.TextTotals, Props: props}
		c.Etag = etagFor(c.Rid, n)
		c.TTL = old.TTL.Change(setting, now)
		c.Index = old.Index
		if !document.Equal(old.Props.Get("indexingPolicy"), props.Get("indexingPolicy")) {
			// A new policy starts a new index version, built in the
			// background; queries scan until it is complete.
			c.Index = indexState{Version: old.Index.Version + 1, Absent: rebuilt(old.Index.Absent)}
			reindex = true
		}
		if _, derr := c.derive(); derr != nil {
			return derr
		}
		return setJSON(tx, containerKey(c.DBRid, c.ID), c)
	})
	if err != nil {
		return nil, err
	}
	e.containerChanged(ctx, c)
	if reindex {
		e.kickIndexer()
	}
	if e.leases != nil {
		// Dated settingLead ahead, the change is not in force until
		// then: a write sent on its answer, earlier, would be judged by
		// the old setting (an item with "ttl": 1 written just after TTL
		// was turned off would expire, for good). So the answer waits
		// for the change's instant on the store's clock.
		e.awaitStoreClock(ctx, now)
	}
	return c.resource(), nil
}

// awaitStoreClock returns once the store's clock has reached at, or once
// it has paused twice settingLead in all, the most a change dated ahead
// can need from its commit unless the store's clock stands still (a
// test's); at once when the clock cannot be read or the request is gone,
// since what waits is only the answer to a committed change. The pauses
// are the process's own time, between readings of the store's clock.
func (e *Engine) awaitStoreClock(ctx context.Context, at time.Time) {
	for left := 2 * settingLead; left > 0; {
		t, err := e.Now(ctx)
		wait := min(at.Sub(t), left)
		if err != nil || wait <= 0 {
			return
		}
		left -= wait
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-timer.C:
		}
	}
}

// samePartitionKey reports whether two containers' properties define the
// same partition key: paths, kind and version, a version left out being
// 1 (normalizePartitionKey fills in the kind, and MultiHash's version).
// Items are stored under hashes the definition decides, so none of it may
// change.
func samePartitionKey(a, b document.Value) bool {
	version := func(pk document.Value) int64 {
		if v := pk.Get("version"); v.IsInt() {
			return v.Int()
		}
		return 1
	}
	pa, pb := a.Get("partitionKey"), b.Get("partitionKey")
	return document.Equal(pa.Get("paths"), pb.Get("paths")) && pa.Get("kind").Str() == pb.Get("kind").Str() && version(pa) == version(pb)
}

func uniqueKeysValue(uk document.Value) document.Value {
	keys := uk.Get("uniqueKeys")
	if !keys.IsDefined() || keys.IsNull() {
		return document.Arr(nil)
	}
	return keys
}

// DeleteContainer removes a container and everything in it. A non-empty
// ifMatch other than "*" must be the container's etag, or nothing is
// deleted (412), as with a replace.
func (e *Engine) DeleteContainer(ctx context.Context, db, coll, ifMatch string) error {
	var c *containerRecord
	err := e.store.Update(ctx, func(tx storage.Txn) error {
		var err error
		c, err = e.loadContainer(tx, db, coll)
		if err != nil {
			return err
		}
		if staleMatch(ifMatch, c.Etag) {
			return preconditionFailed()
		}
		return e.removeContainerMeta(tx, c)
	})
	if err != nil {
		return err
	}
	e.containerGone(ctx, c)
	return e.dropContainerData(ctx, c)
}

// removeContainerMeta deletes a container's record and offer and schedules
// the deletion of its data (cleanup.go), all in tx.
func (e *Engine) removeContainerMeta(tx storage.Txn, c *containerRecord) error {
	if c.OfferRid != "" {
		if err := tx.Delete(offerKey(c.OfferRid)); err != nil {
			return err
		}
	}
	if err := scheduleCleanup(tx, c.Rid, containerSpans(c.Rid)); err != nil {
		return err
	}
	// Its data is erased once the cleanup has deleted it (ttl.md B4).
	if err := e.queueErasure(tx, c, 0, e.clock.Now(), 0); err != nil {
		return err
	}
	return tx.Delete(containerKey(c.DBRid, c.ID))
}

// dropContainerData deletes the data of a container whose metadata is gone,
// as its cleanup record says.
func (e *Engine) dropContainerData(ctx context.Context, c *containerRecord) error {
	e.mu.Lock()
	delete(e.cache, string(containerKey(c.DBRid, c.ID)))
	e.mu.Unlock()
	if err := e.runCleanup(ctx, c.Rid); err != nil {
		return fmt.Errorf("drop container %q data: %w", c.ID, err)
	}
	return nil
}
