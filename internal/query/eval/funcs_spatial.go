package eval

import (
	"cmp"
	"math"
	"slices"

	"github.com/mayfly-db/mayfly/internal/document"
)

// Spatial functions take GeoJSON Point, LineString, Polygon and
// MultiPolygon. In a container of geography (the default) distances
// between points are geodesic distances in metres on the WGS 84
// ellipsoid, as the service measures them (funcs_geodesic.go); a point's
// distance to an edge uses a sphere of the Earth's mean radius; areas are
// measured on the ellipsoid (funcs_area.go); containment and crossing
// take edges as great-circle arcs and a polygon as the region left of its
// outer ring (funcs_sphere.go). In a container of geometry
// (geospatialConfig "Geometry", Options.Planar) coordinates are x and y
// in a plane, of any magnitude, and distances and areas are Euclidean,
// in their units.

const earthRadius = 6371008.8 // metres

type lonLat struct{ lon, lat float64 }

type geometry struct {
	planar bool         // geometry in the plane rather than geography
	kind   string       // Point, LineString, Polygon, MultiPolygon
	point  lonLat       // Point
	line   []lonLat     // LineString
	rings  [][]lonLat   // Polygon: outer ring then holes
	polys  [][][]lonLat // MultiPolygon
}

func position(v document.Value, planar bool) (lonLat, string) {
	a := v.Array()
	if v.Kind() != document.Array || len(a) < 2 || len(a) > 3 {
		return lonLat{}, "A position must be an array of two or three numbers."
	}
	for _, x := range a {
		if x.Kind() != document.Number {
			return lonLat{}, "A position must be an array of two or three numbers."
		}
	}
	p := lonLat{a[0].Float(), a[1].Float()}
	switch {
	case planar:
	case p.lat < -90 || p.lat > 90:
		return lonLat{}, "Latitude values must be between -90 and 90 degrees."
	case p.lon < -180 || p.lon > 180:
		return lonLat{}, "Longitude values must be between -180 and 180 degrees."
	}
	return p, ""
}

func positions(v document.Value, planar bool) ([]lonLat, string) {
	if v.Kind() != document.Array {
		return nil, "Coordinates must be an array of positions."
	}
	out := make([]lonLat, 0, v.Len())
	for _, e := range v.Array() {
		p, why := position(e, planar)
		if why != "" {
			return nil, why
		}
		out = append(out, p)
	}
	return out, ""
}

func ring(v document.Value, planar bool) ([]lonLat, string) {
	r, why := positions(v, planar)
	if why != "" {
		return nil, why
	}
	if len(r) < 4 {
		return nil, "A polygon ring must have at least four positions."
	}
	if r[0] != r[len(r)-1] {
		return nil, "A polygon ring must be closed: its first and last positions must be equal."
	}
	return r, ""
}

func polygon(v document.Value, planar bool) ([][]lonLat, string) {
	if v.Kind() != document.Array || v.Len() == 0 {
		return nil, "Polygon coordinates must be a non-empty array of rings."
	}
	var rings [][]lonLat
	for _, e := range v.Array() {
		r, why := ring(e, planar)
		if why != "" {
			return nil, why
		}
		rings = append(rings, r)
	}
	return rings, ""
}

// parseGeometry reads a GeoJSON geometry, in the plane when planar; the
// string is why it is invalid.
func parseGeometry(v document.Value, planar bool) (geometry, string) {
	if v.Kind() != document.Object {
		return geometry{}, "A geometry must be a GeoJSON object."
	}
	t := v.Get("type")
	c := v.Get("coordinates")
	g := geometry{kind: t.Str(), planar: planar}
	var why string
	switch g.kind {
	case "Point":
		g.point, why = position(c, planar)
	case "LineString":
		g.line, why = positions(c, planar)
		if why == "" && len(g.line) < 2 {
			why = "A LineString must have at least two positions."
		}
	case "Polygon":
		g.rings, why = polygon(c, planar)
	case "MultiPolygon":
		if c.Kind() != document.Array || c.Len() == 0 {
			return g, "MultiPolygon coordinates must be a non-empty array of polygons."
		}
		for _, pv := range c.Array() {
			rings, w := polygon(pv, planar)
			if w != "" {
				return g, w
			}
			g.polys = append(g.polys, rings)
		}
	default:
		return g, "Unsupported or missing GeoJSON type."
	}
	if why == "" && !planar {
		// Every great circle through two antipodes joins them: such an
		// edge has no one shortest arc.
		for _, e := range g.edges() {
			if angle(unit(e[0]), unit(e[1])) > math.Pi-1e-9 {
				return g, "An edge may not join two antipodal points."
			}
		}
	}
	return g, why
}

func rad(d float64) float64 { return d * math.Pi / 180 }

// haversine is the great-circle distance between two points in metres.
func haversine(a, b lonLat) float64 {
	dLat, dLon := rad(b.lat-a.lat), rad(b.lon-a.lon)
	h := math.Sin(dLat/2)*math.Sin(dLat/2) + math.Cos(rad(a.lat))*math.Cos(rad(b.lat))*math.Sin(dLon/2)*math.Sin(dLon/2)
	return 2 * earthRadius * math.Asin(math.Min(1, math.Sqrt(h)))
}

func bearing(a, b lonLat) float64 {
	y := math.Sin(rad(b.lon-a.lon)) * math.Cos(rad(b.lat))
	x := math.Cos(rad(a.lat))*math.Sin(rad(b.lat)) - math.Sin(rad(a.lat))*math.Cos(rad(b.lat))*math.Cos(rad(b.lon-a.lon))
	return math.Atan2(y, x)
}

// segmentDistance is the distance from p to the great-circle segment a-b.
func segmentDistance(p, a, b lonLat) float64 {
	dap := geodesic(a, p)
	dab := geodesic(a, b)
	if dab == 0 {
		return dap
	}
	d := haversine(a, p) / earthRadius
	cross := math.Asin(math.Max(-1, math.Min(1, math.Sin(d)*math.Sin(bearing(a, p)-bearing(a, b)))))
	along := math.Acos(math.Max(-1, math.Min(1, math.Cos(d)/math.Cos(cross)))) * earthRadius
	if math.Cos(bearing(a, p)-bearing(a, b)) < 0 || along > dab {
		return math.Min(dap, geodesic(b, p))
	}
	return math.Abs(cross) * earthRadius
}

// inRing tests containment by ray casting in the longitude/latitude plane.
func inRing(p lonLat, r []lonLat) bool {
	in := false
	for i, j := 0, len(r)-1; i < len(r); j, i = i, i+1 {
		a, b := r[i], r[j]
		if (a.lat > p.lat) != (b.lat > p.lat) &&
			p.lon < (b.lon-a.lon)*(p.lat-a.lat)/(b.lat-a.lat)+a.lon {
			in = !in
		}
	}
	return in
}

func inPolygon(p lonLat, rings [][]lonLat) bool {
	if !inRing(p, rings[0]) {
		return false
	}
	for _, hole := range rings[1:] {
		if inRing(p, hole) {
			return false
		}
	}
	return true
}

func orient(a, b, c lonLat) float64 {
	return (b.lon-a.lon)*(c.lat-a.lat) - (b.lat-a.lat)*(c.lon-a.lon)
}

func onSegment(a, b, p lonLat) bool {
	return math.Min(a.lon, b.lon) <= p.lon && p.lon <= math.Max(a.lon, b.lon) &&
		math.Min(a.lat, b.lat) <= p.lat && p.lat <= math.Max(a.lat, b.lat)
}

func segmentsCross(a, b, c, d lonLat) bool {
	o1, o2, o3, o4 := orient(a, b, c), orient(a, b, d), orient(c, d, a), orient(c, d, b)
	if ((o1 > 0 && o2 < 0) || (o1 < 0 && o2 > 0)) && ((o3 > 0 && o4 < 0) || (o3 < 0 && o4 > 0)) {
		return true
	}
	return o1 == 0 && onSegment(a, b, c) || o2 == 0 && onSegment(a, b, d) ||
		o3 == 0 && onSegment(c, d, a) || o4 == 0 && onSegment(c, d, b)
}

// vertices and edges flatten a geometry for the generic tests.
func (g geometry) vertices() []lonLat {
	switch g.kind {
	case "Point":
		return []lonLat{g.point}
	case "LineString":
		return g.line
	case "Polygon":
		return g.rings[0]
	}
	var out []lonLat
	for _, p := range g.polys {
		out = append(out, p[0]...)
	}
	return out
}

func (g geometry) edges() [][2]lonLat {
	var out [][2]lonLat
	add := func(ps []lonLat) {
		for i := 1; i < len(ps); i++ {
			out = append(out, [2]lonLat{ps[i-1], ps[i]})
		}
	}
	switch g.kind {
	case "LineString":
		add(g.line)
	case "Polygon":
		for _, r := range g.rings {
			add(r)
		}
	case "MultiPolygon":
		for _, p := range g.polys {
			for _, r := range p {
				add(r)
			}
		}
	}
	return out
}

// contains reports whether point p lies in area g (a Polygon or
// MultiPolygon).
func (g geometry) contains(p lonLat) bool {
	in := inPolygonOnSphere
	if g.planar {
		in = inPolygon
	}
	switch g.kind {
	case "Polygon":
		return in(p, g.rings)
	case "MultiPolygon":
		for _, rings := range g.polys {
			if in(p, rings) {
				return true
			}
		}
	}
	return false
}

// onEdge reports whether p lies on edge e.
func (g geometry) onEdge(e [2]lonLat, p lonLat) bool {
	if g.planar {
		return orient(e[0], e[1], p) == 0 && onSegment(e[0], e[1], p)
	}
	return onArc(unit(e[0]), unit(e[1]), unit(p))
}

// edgesMeet reports whether edges e and f share a point; with proper, only
// whether they cross at a point inside both.
func (g geometry) edgesMeet(e, f [2]lonLat, proper bool) bool {
	if g.planar {
		if proper {
			o1, o2 := orient(f[0], f[1], e[0]), orient(f[0], f[1], e[1])
			o3, o4 := orient(e[0], e[1], f[0]), orient(e[0], e[1], f[1])
			return ((o1 > 0 && o2 < 0) || (o1 < 0 && o2 > 0)) && ((o3 > 0 && o4 < 0) || (o3 < 0 && o4 > 0))
		}
		return segmentsCross(e[0], e[1], f[0], f[1])
	}
	a, b, c, d := unit(e[0]), unit(e[1]), unit(f[0]), unit(f[1])
	if proper {
		return arcsCross(a, b, c, d)
	}
	return arcsMeet(a, b, c, d)
}

func intersects(a, b geometry) bool {
	if a.kind == "Point" && b.kind == "Point" {
		return a.samePlace(a.point, b.point)
	}
	for _, v := range a.vertices() {
		if b.contains(v) {
			return true
		}
	}
	for _, v := range b.vertices() {
		if a.contains(v) {
			return true
		}
	}
	if a.kind == "Point" || b.kind == "Point" {
		pt, other := a, b
		if b.kind == "Point" {
			pt, other = b, a
		}
		for _, e := range other.edges() {
			if a.onEdge(e, pt.point) {
				return true
			}
		}
		return false
	}
	for _, e := range a.edges() {
		for _, f := range b.edges() {
			if a.edgesMeet(e, f, false) {
				return true
			}
		}
	}
	return false
}

func distance(a, b geometry) float64 {
	if intersects(a, b) {
		return 0
	}
	points, segment := geodesic, segmentDistance
	if a.planar {
		points, segment = planeDistance, planeSegmentDistance
	}
	best := math.Inf(1)
	for _, v := range a.vertices() {
		if b.kind == "Point" {
			best = math.Min(best, points(v, b.point))
		}
		for _, e := range b.edges() {
			best = math.Min(best, segment(v, e[0], e[1]))
		}
	}
	for _, v := range b.vertices() {
		for _, e := range a.edges() {
			best = math.Min(best, segment(v, e[0], e[1]))
		}
	}
	return best
}

func planeDistance(a, b lonLat) float64 { return math.Hypot(b.lon-a.lon, b.lat-a.lat) }

// planeSegmentDistance is the distance from p to the segment a-b in the
// plane.
func planeSegmentDistance(p, a, b lonLat) float64 {
	dx, dy := b.lon-a.lon, b.lat-a.lat
	l2 := dx*dx + dy*dy
	if l2 == 0 {
		return planeDistance(p, a)
	}
	t := max(0, min(1, ((p.lon-a.lon)*dx+(p.lat-a.lat)*dy)/l2))
	return planeDistance(p, lonLat{a.lon + t*dx, a.lat + t*dy})
}

// within reports whether g1 lies within g2. An area holds what has no
// vertex outside it and no edge leaving it and coming back (through a
// hole or a concave part); a line holds the points on it and the lines
// whose every vertex and edge is on it; a point holds itself alone.
func within(g1, g2 geometry) bool {
	switch g2.kind {
	case "Point":
		return g1.kind == "Point" && intersects(g1, g2)
	case "LineString":
		switch g1.kind {
		case "Point":
			return g2.onBoundary(g1.point)
		case "LineString":
			return lineOnLine(g1, g2)
		}
		return false
	}
	for _, v := range g1.vertices() {
		if !g2.contains(v) {
			return false
		}
	}
	if g1.kind == "Point" {
		return true
	}
	for _, e := range g1.edges() {
		for _, f := range g2.edges() {
			if g2.edgesMeet(e, f, true) {
				return false
			}
		}
	}
	// An area that holds a point of the other's boundary inside it (round
	// a hole, or round what a clockwise ring leaves out) holds points on
	// both sides of that boundary.
	if g1.kind == "Polygon" || g1.kind == "MultiPolygon" {
		for _, e := range g2.edges() {
			if g1.contains(e[0]) && !g1.onBoundary(e[0]) {
				return false
			}
		}
	}
	return true
}

// samePlace reports whether a and b are one place: in the plane, equal;
// on the Earth, within arcEps (longitudes 180 and -180 are one meridian,
// and every longitude at a pole is the pole).
func (g geometry) samePlace(a, b lonLat) bool {
	if g.planar {
		return a == b
	}
	return angle(unit(a), unit(b)) <= arcEps
}

// onBoundary reports whether p lies on an edge of g, or is g when g is a
// point.
func (g geometry) onBoundary(p lonLat) bool {
	if g.kind == "Point" {
		return g.samePlace(g.point, p)
	}
	return slices.ContainsFunc(g.edges(), func(e [2]lonLat) bool { return g.onEdge(e, p) })
}

// lineOnLine reports whether every edge of line a lies on line b: each
// edge, cut where b's vertices lie on it, has every piece's middle on b.
func lineOnLine(a, b geometry) bool {
	for _, e := range a.edges() {
		cuts := []lonLat{e[0], e[1]}
		for _, v := range b.line {
			if a.onEdge(e, v) {
				cuts = append(cuts, v)
			}
		}
		from := func(p lonLat) float64 {
			if a.planar {
				return planeDistance(e[0], p)
			}
			return angle(unit(e[0]), unit(p))
		}
		slices.SortFunc(cuts, func(p, q lonLat) int { return cmp.Compare(from(p), from(q)) })
		for i := 1; i < len(cuts); i++ {
			if !b.onBoundary(a.middle(cuts[i-1], cuts[i])) {
				return false
			}
		}
	}
	return true
}

// middle is the point halfway along the edge from p to q.
func (g geometry) middle(p, q lonLat) lonLat {
	if g.planar {
		return lonLat{(p.lon + q.lon) / 2, (p.lat + q.lat) / 2}
	}
	m := unit(p).add(unit(q))
	if m.length() < 1e-12 {
		return p
	}
	m = m.normalized()
	return lonLat{math.Atan2(m[1], m[0]) * 180 / math.Pi, math.Asin(max(-1, min(1, m[2]))) * 180 / math.Pi}
}

// planar reports whether the program runs over a container of geometry.
func (p *Program) planar() bool { return p.opts.Planar != nil && *p.opts.Planar }

// spatial2 registers a function of two geometries, charging the work of
// comparing every edge of one with every edge of the other.
func spatial2(name string, fn func(g1, g2 geometry) document.Value) {
	register(2, 2, func(c *ctx, a []document.Value) (document.Value, error) {
		g1, w1 := parseGeometry(a[0], c.prog.planar())
		g2, w2 := parseGeometry(a[1], c.prog.planar())
		if w1 != "" || w2 != "" {
			return undef, nil
		}
		n1 := len(g1.vertices()) + len(g1.edges())
		n2 := len(g2.vertices()) + len(g2.edges())
		if err := c.charge(n1 * n2); err != nil {
			return undef, err
		}
		return fn(g1, g2), nil
	}, name)
}

func init() {
	spatial2("ST_DISTANCE", func(g1, g2 geometry) document.Value { return number(distance(g1, g2)) })
	spatial2("ST_WITHIN", func(g1, g2 geometry) document.Value { return boolVal(within(g1, g2)) })
	spatial2("ST_INTERSECTS", func(g1, g2 geometry) document.Value { return boolVal(intersects(g1, g2)) })
	// Not pure: whether a position is valid depends on the container's
	// kind of space, bound when the program runs.
	register(1, 1, func(c *ctx, a []document.Value) (document.Value, error) {
		_, why := parseGeometry(a[0], c.prog.planar())
		return boolVal(why == ""), nil
	}, "ST_ISVALID")
	register(1, 1, func(c *ctx, a []document.Value) (document.Value, error) {
		_, why := parseGeometry(a[0], c.prog.planar())
		fields := []document.Field{{Name: "valid", Value: boolVal(why == "")}}
		if why != "" {
			fields = append(fields, document.Field{Name: "reason", Value: document.Str(why)})
		}
		return document.Obj(fields), nil
	}, "ST_ISVALIDDETAILED")
}
