package engine

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/mayfly-db/mayfly/internal/document"
	"github.com/mayfly-db/mayfly/internal/query/plan"
)

// TestRangeSpansAgainstTheEvaluator drains random ranges of values, in a
// large logical partition and across partitions, once the path's tie and
// partition entries are built (rangeTieSpans, partRange), and compares
// every drain with the evaluator's answer over the same documents. The
// values mix small numbers, fractions, numbers of magnitude 2^53 and more
// (which keep no tie entry), strings, and values no range holds (arrays,
// objects, null, booleans, no value); ranges of more than maxRangeValues
// values take the collecting path. Some queries join a term on a second
// path, for intersections (intersectSource), some on so many items each
// that a first page scans and later ones step through both
// (mergeAfterScan).
func TestRangeSpansAgainstTheEvaluator(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 29))
	be := newBatchEnvWith(t, `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2}}`)
	numbers := []string{"9007199254740993", "-9007199254740993", "1e300", "-2.5", "3.5", "0"}
	for i := range 300 {
		numbers = append(numbers, strconv.Itoa(i))
	}
	value := func() string {
		switch k := rng.IntN(20); {
		case k < 11:
			return numbers[rng.IntN(len(numbers))]
		case k < 16:
			return fmt.Sprintf(`"s%02d"`, rng.IntN(80))
		default:
			return []string{`[1, 2]`, `{"a": 1}`, `null`, `true`, ``}[k-16]
		}
	}
	items := make([]string, 0, 3000)
	for n := range 3000 {
		g := value()
		if g != "" {
			g = `,"g":` + g
		}
		h := strconv.Itoa(rng.IntN(9))
		if rng.IntN(10) == 0 {
			h = `"x"`
		}
		items = append(items, fmt.Sprintf(`{"id":"i%d","pk":"%s","n":%d,"h":%s%s}`, n, []string{"a", "a", "a", "b", "c"}[n%5], n, h, g))
	}
	be.seed(t, items...)
	for _, path := range []string{"g", "h"} {
		be.e.wantAbsent(be.container(t), []string{path}, entryKinds{ties: true, parts: true})
		drainIndexer(t, be.e.NewIndexer(nil))
		if c := be.container(t); !c.tiesReady([]string{path}) || !c.partsReady([]string{path}) {
			t.Fatalf("the tie and partition entries of /%s are not built", path)
		}
	}
	docs := parseItems(t, items)
	bound := func() string {
		if rng.IntN(3) == 0 {
			return fmt.Sprintf(`"s%02d"`, rng.IntN(80))
		}
		return numbers[rng.IntN(len(numbers))]
	}
	d := &evaluatorDrains{t: t, be: be, rng: rng, docs: docs}
	for q := range d.drains() {
		var where string
		switch rng.IntN(10) {
		case 8, 9:
			// Terms on many items each, and fewer together: a scan
			// first, then steps through both (mergeAfterScan).
			lo := rng.IntN(240)
			where = fmt.Sprintf("c.h IN (%d, %d, %d, %d) AND c.g BETWEEN %d AND %d", rng.IntN(9), rng.IntN(9), rng.IntN(9), rng.IntN(9), lo, lo+60)
		case 6:
			where = fmt.Sprintf("c.h = %d AND c.g %s %s", rng.IntN(9), []string{">", ">=", "<", "<="}[rng.IntN(4)], bound())
		case 7:
			where = fmt.Sprintf("c.h IN (%d, %d, 'x') AND c.g BETWEEN %s AND %s", rng.IntN(9), rng.IntN(9), bound(), bound())
		case 0:
			where = fmt.Sprintf("c.g %s %s", []string{">", ">=", "<", "<="}[rng.IntN(4)], bound())
		case 1:
			where = fmt.Sprintf("c.g BETWEEN %s AND %s", bound(), bound())
		case 2:
			where = fmt.Sprintf("c.g >= %s AND c.g < %s", bound(), bound())
		case 3:
			where = fmt.Sprintf("STARTSWITH(c.g, 's%d')", rng.IntN(8))
		case 4:
			where = fmt.Sprintf("c.g < %s OR c.g > %s", bound(), bound())
		default:
			where = fmt.Sprintf("c.g > %s AND c.n >= %d", bound(), rng.IntN(3000))
		}
		query := "SELECT VALUE c.n FROM c WHERE " + where
		d.drain(query, q%2 == 0)
	}
	d.enough()
}

// TestElementSpansAgainstTheEvaluator drains random terms on array
// elements (ARRAY_CONTAINS, a JOIN's elements or their properties, EXISTS
// over them), alone and with a term on another path, across partitions and
// in one, once the element paths' tie entries are built, and compares
// every drain with the evaluator's answer over the same documents. Arrays
// repeat values, nest arrays and objects, hold numbers of magnitude 2^53
// and more (which keep no tie entry), or are missing or not arrays.
func TestElementSpansAgainstTheEvaluator(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 17))
	be := newBatchEnvWith(t, `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2}}`)
	elem := func() string {
		switch k := rng.IntN(12); {
		case k < 6:
			return fmt.Sprintf(`"t%d"`, rng.IntN(6))
		case k < 9:
			return strconv.Itoa(rng.IntN(4))
		default:
			return []string{`9007199254740993`, `["t1"]`, `{"k": "t2"}`}[k-9]
		}
	}
	array := func() string {
		var es []string
		for range rng.IntN(5) {
			es = append(es, elem())
		}
		return "[" + strings.Join(es, ",") + "]"
	}
	items := make([]string, 0, 3000)
	for n := range 3000 {
		var extra string
		switch rng.IntN(10) {
		case 0: // no tags
		case 1:
			extra = `,"tags":"t1"`
		default:
			extra = `,"tags":` + array()
		}
		if rng.IntN(3) > 0 {
			extra += fmt.Sprintf(`,"items":[{"k":%s},{"k":%s,"x":1}]`, elem(), elem())
		}
		items = append(items, fmt.Sprintf(`{"id":"i%d","pk":"%s","n":%d,"h":%d%s}`, n, []string{"a", "a", "b", "c", "d"}[n%5], n, rng.IntN(6), extra))
	}
	be.seed(t, items...)
	for _, path := range [][]string{{"tags", "[]"}, {"items", "[]", "k"}, {"h"}} {
		be.e.wantAbsent(be.container(t), path, entryKinds{ties: true})
		drainIndexer(t, be.e.NewIndexer(nil))
		if !be.container(t).tiesReady(path) {
			t.Fatalf("the tie entries of %v are not built", path)
		}
	}
	docs := parseItems(t, items)
	d := &evaluatorDrains{t: t, be: be, rng: rng, docs: docs}
	for q := range d.drains() {
		var query string
		v, w := elem(), elem()
		switch rng.IntN(9) {
		case 8:
			// Terms on many items each, and fewer together: a scan
			// first, then steps through both (mergeAfterScan).
			query = fmt.Sprintf("SELECT VALUE c.n FROM c WHERE ARRAY_CONTAINS(c.tags, %s) AND c.h IN (%d, %d)", v, rng.IntN(6), rng.IntN(6))
		case 0, 1:
			query = "SELECT VALUE c.n FROM c WHERE ARRAY_CONTAINS(c.tags, " + v + ")"
		case 2:
			query = "SELECT VALUE c.n FROM c JOIN t IN c.tags WHERE t = " + v
		case 3:
			query = "SELECT VALUE c.n FROM c JOIN t IN c.tags WHERE t IN (" + v + ", " + w + ")"
		case 4:
			query = "SELECT VALUE c.n FROM c WHERE EXISTS(SELECT VALUE i FROM i IN c.items WHERE i.k = " + v + ")"
		case 5:
			query = "SELECT VALUE [c.n, i.x] FROM c JOIN i IN c.items WHERE i.k IN (" + v + ", " + w + ")"
		case 6:
			query = fmt.Sprintf("SELECT VALUE c.n FROM c WHERE ARRAY_CONTAINS(c.tags, %s) AND c.h = %d", v, rng.IntN(6))
		default:
			query = "SELECT VALUE c.n FROM c JOIN t IN c.tags WHERE t = " + v + " AND ARRAY_CONTAINS(c.tags, " + w + ")"
		}
		d.drain(query, q%3 == 0)
	}
	d.enough()
}

// evaluatorDrains drains queries against the evaluator's answer over docs,
// across partitions or in partition "a", in pages of 1, 7 or 50, and
// counts the first pages that read an index span or an intersection.
type evaluatorDrains struct {
	t                    *testing.T
	be                   *batchEnv
	rng                  *rand.Rand
	docs                 []document.Value
	indexed, intersected int
}

// drains is how many random queries a test drains: 160, or 40 in short
// mode (the engine's tests over PostgreSQL, where every read is a round
// trip) and under the race detector.
func (d *evaluatorDrains) drains() int {
	if testing.Short() || RaceEnabled {
		return 40
	}
	return 160
}

func (d *evaluatorDrains) drain(query string, inPartition bool) {
	d.t.Helper()
	p := QueryParams{ItemRef: batchRef(""), RangeID: "0", CrossPartition: true, Query: query, MaxItemCount: []int{1, 7, 50}[d.rng.IntN(3)]}
	pk := ""
	if inPartition {
		p = QueryParams{ItemRef: batchRef(`["a"]`), Query: query, MaxItemCount: p.MaxItemCount}
		pk = "a"
	}
	got := drainRows(d.t, d.be.e, p, func(n int, page *FeedPage) {
		if n == 0 && page.Plan != nil {
			switch page.Plan.Chosen.Access {
			case plan.IndexSpan:
				d.indexed++
			case plan.Intersect:
				d.intersected++
			}
		}
	})
	if want := oracleRows(d.t, query, d.docs, pk); !slices.Equal(got, want) {
		d.t.Fatalf("%s (partition %q, pages of %d): %d rows, want %d\n got %v\nwant %v", query, pk, p.MaxItemCount, len(got), len(want), got, want)
	}
}

// enough fails the test unless enough drains read each index path.
func (d *evaluatorDrains) enough() {
	d.t.Helper()
	n := d.drains()
	d.t.Logf("of %d drains, %d read an index span and %d an intersection", n, d.indexed, d.intersected)
	if d.indexed < n/8 || d.intersected < n/32 {
		d.t.Fatalf("of %d drains, %d read an index span and %d an intersection", n, d.indexed, d.intersected)
	}
}
