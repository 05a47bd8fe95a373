package eval

import "math"

// Geography on the sphere. The service draws a polygon's and a line's
// edges as geodesics, and reads a polygon as the region to the left of
// its outer ring: a ring given counter-clockwise bounds the region it
// encloses, one given clockwise the rest of the Earth ("A Polygon
// specified in clockwise order represents the inverse of the region
// within it"). Here edges are great-circle arcs, tested on unit vectors,
// so that a ring may cross the antimeridian or hold a pole; the arcs
// differ from the ellipsoid's geodesics by at most a few metres over
// the edges of a city.

// vec3 is a point of the unit sphere, or a vector of its space.
type vec3 [3]float64

func unit(p lonLat) vec3 {
	phi, lam := rad(p.lat), rad(p.lon)
	return vec3{math.Cos(phi) * math.Cos(lam), math.Cos(phi) * math.Sin(lam), math.Sin(phi)}
}

func (a vec3) dot(b vec3) float64 { return a[0]*b[0] + a[1]*b[1] + a[2]*b[2] }

func (a vec3) cross(b vec3) vec3 {
	return vec3{a[1]*b[2] - a[2]*b[1], a[2]*b[0] - a[0]*b[2], a[0]*b[1] - a[1]*b[0]}
}

func (a vec3) add(b vec3) vec3      { return vec3{a[0] + b[0], a[1] + b[1], a[2] + b[2]} }
func (a vec3) scale(k float64) vec3 { return vec3{a[0] * k, a[1] * k, a[2] * k} }
func (a vec3) length() float64      { return math.Sqrt(a.dot(a)) }
func (a vec3) normalized() vec3     { return a.scale(1 / a.length()) }
func angle(a, b vec3) float64       { return math.Atan2(a.cross(b).length(), a.dot(b)) }
func opposite(x, y int) bool        { return x != 0 && x == -y }

// arcEps is the angle, in radians, within which a point counts as on an
// arc: about 6 µm on the Earth, the rounding of coordinates given to
// fourteen decimal places of a degree.
const arcEps = 1e-12

// side tells which side of the great circle through a then b the point p
// lies on: 1 to the left, -1 to the right, 0 on it (within arcEps).
func side(a, b, p vec3) int {
	n := a.cross(b)
	l := n.length()
	if l == 0 {
		return 0
	}
	switch d := n.dot(p) / l; {
	case d > arcEps:
		return 1
	case d < -arcEps:
		return -1
	}
	return 0
}

// onArc reports whether p lies on the shorter arc from a to b.
func onArc(a, b, p vec3) bool {
	return math.Abs(angle(a, p)+angle(p, b)-angle(a, b)) <= 4*arcEps
}

// arcsCross reports whether the shorter arcs a-b and c-d cross at a point
// inside both. Each straddling the other's great circle is not enough:
// two great circles meet twice, at antipodes, and the arcs meet only when
// both pass through the same one.
func arcsCross(a, b, c, d vec3) bool {
	if !opposite(side(a, b, c), side(a, b, d)) || !opposite(side(c, d, a), side(c, d, b)) {
		return false
	}
	x := a.cross(b).cross(c.cross(d))
	return sign(x.dot(a.add(b))) == sign(x.dot(c.add(d)))
}

// arcsMeet reports whether the shorter arcs a-b and c-d share a point.
func arcsMeet(a, b, c, d vec3) bool {
	return arcsCross(a, b, c, d) || onArc(a, b, c) || onArc(a, b, d) || onArc(c, d, a) || onArc(c, d, b)
}

func sign(x float64) int {
	switch {
	case x > 0:
		return 1
	case x < 0:
		return -1
	}
	return 0
}

// ringRegion is a ring seen from the centre of its vertices: the gnomonic
// projection onto the plane touching the sphere there maps great-circle
// arcs to straight segments, so the side of the ring that lies in that
// hemisphere is a plane polygon there. A wide ring, one not within the
// hemisphere about its centre (a band around the Earth, say), is judged
// on the sphere by its left side alone (encloses, wideArea).
type ringRegion struct {
	verts     []vec3
	centre    vec3
	east, up  vec3
	flat      [][2]float64
	clockwise bool // seen from outside the sphere; false for a wide ring
	wide      bool
	// inside is a point just left of the first edge, in the ring's left
	// side, from which a wide ring's crossings are counted.
	inside vec3
}

func newRingRegion(r []lonLat) ringRegion {
	g := ringRegion{}
	var sum vec3
	for _, p := range r[:len(r)-1] {
		v := unit(p)
		g.verts = append(g.verts, v)
		sum = sum.add(v)
	}
	g.verts = append(g.verts, g.verts[0])
	if sum.length() < 1e-9 {
		return g.widen()
	}
	g.centre = sum.normalized()
	for _, v := range g.verts {
		if v.dot(g.centre) < 1e-9 {
			return g.widen()
		}
	}
	g.east = vec3{0, 0, 1}.cross(g.centre)
	if g.east.length() < 1e-9 { // the centre is a pole
		g.east = vec3{0, 1, 0}
	}
	g.east = g.east.normalized()
	g.up = g.centre.cross(g.east)
	area := 0.0
	for i, v := range g.verts {
		g.flat = append(g.flat, g.project(v))
		if i > 0 {
			p, q := g.flat[i-1], g.flat[i]
			area += p[0]*q[1] - q[0]*p[1]
		}
	}
	g.clockwise = area < 0
	return g
}

// widen makes g a wide ring, with its point inside.
func (g ringRegion) widen() ringRegion {
	g.wide = true
	for i := 1; i < len(g.verts); i++ {
		a, b := g.verts[i-1], g.verts[i]
		if n := a.cross(b); n.length() > 1e-9 {
			mid := a.add(b).normalized()
			g.inside = mid.add(n.normalized().scale(1e-7)).normalized()
			break
		}
	}
	return g
}

// crossings counts the edges of g that the shorter arc from a to b
// crosses; the arc goes by a point a quarter turn from a when b is nearly
// a's antipode, where the shorter arc is not one.
func (g ringRegion) crossings(a, b vec3) int {
	if a.dot(b) < -0.9 {
		n := a.cross(b)
		if n.length() < 1e-9 {
			n = a.cross(vec3{0, 0, 1})
			if n.length() < 1e-9 {
				n = a.cross(vec3{1, 0, 0})
			}
		}
		q := n.cross(a).normalized()
		return g.crossings(a, q) + g.crossings(q, b)
	}
	n := 0
	for i := 1; i < len(g.verts); i++ {
		if arcsCross(a, b, g.verts[i-1], g.verts[i]) {
			n++
		}
	}
	return n
}

func (g ringRegion) project(v vec3) [2]float64 {
	q := v.scale(1 / v.dot(g.centre))
	return [2]float64{q.dot(g.east), q.dot(g.up)}
}

// encloses reports whether p lies on the side of the ring that is within
// the hemisphere about its centre (the smaller side; for a wide ring, its
// left side), and whether it lies on the ring itself, which counts as
// either side.
func (g ringRegion) encloses(p lonLat) (in, edge bool) {
	v := unit(p)
	for i := 1; i < len(g.verts); i++ {
		if onArc(g.verts[i-1], g.verts[i], v) {
			return true, true
		}
	}
	if g.wide {
		return g.crossings(g.inside, v)%2 == 0, false
	}
	if v.dot(g.centre) <= 0 {
		return false, false
	}
	q := g.project(v)
	for i, j := 0, len(g.flat)-1; i < len(g.flat); j, i = i, i+1 {
		a, b := g.flat[i], g.flat[j]
		if (a[1] > q[1]) != (b[1] > q[1]) && q[0] < (b[0]-a[0])*(q[1]-a[1])/(b[1]-a[1])+a[0] {
			in = !in
		}
	}
	return in, false
}

// inPolygonOnSphere reports whether p lies in the polygon of rings: to the
// left of its outer ring (the ring's own side when counter-clockwise, the
// rest of the sphere when clockwise, its edge either way) and in none of
// its holes (whose edges belong to the polygon). A hole is its ring's
// smaller side; a wide hole, the right side of its ring, as GeoJSON winds
// holes clockwise.
func inPolygonOnSphere(p lonLat, rings [][]lonLat) bool {
	outer := newRingRegion(rings[0])
	in, edge := outer.encloses(p)
	if outer.clockwise && !edge {
		in = !in
	}
	if !in {
		return false
	}
	for _, r := range rings[1:] {
		hole := newRingRegion(r)
		in, edge := hole.encloses(p)
		if hole.wide {
			in = !in
		}
		if in && !edge {
			return false
		}
	}
	return true
}

// authalicUnit is p's point on the authalic sphere, whose areas are the
// ellipsoid's.
func authalicUnit(p lonLat) vec3 { return unit(lonLat{p.lon, authalicLat(p.lat) * 180 / math.Pi}) }

// smallArea is the area of the ring's smaller side on the unit authalic
// sphere: the ring is turned so that its centre lies at longitude and
// latitude 0, where it holds no pole, and measured there (ringExcess).
func smallArea(r []lonLat) float64 {
	var sum vec3
	vs := make([]vec3, len(r))
	for i, p := range r {
		vs[i] = authalicUnit(p)
		if i+1 < len(r) {
			sum = sum.add(vs[i])
		}
	}
	c := sum.normalized()
	east := vec3{0, 0, 1}.cross(c)
	if east.length() < 1e-9 {
		east = vec3{0, 1, 0}
	}
	east = east.normalized()
	up := c.cross(east)
	turned := make([]lonLat, len(vs))
	for i, v := range vs {
		turned[i] = lonLat{math.Atan2(v.dot(east), v.dot(c)) * 180 / math.Pi, math.Asin(max(-1, min(1, v.dot(up)))) * 180 / math.Pi}
	}
	return math.Abs(ringExcess(turned))
}

// leftArea is the area of the ring's left side on the unit authalic
// sphere, by the Gauss-Bonnet theorem: 2π less the turns the ring makes
// at its vertices, left turns positive. Any ring has one, wide or not;
// smallArea is the more exact for small rings, where 2π and the turns
// nearly cancel.
func leftArea(r []lonLat) float64 {
	n := len(r) - 1
	vs := make([]vec3, n)
	for i := range n {
		vs[i] = authalicUnit(r[i])
	}
	turns := 0.0
	for i := range n {
		a, b, c := vs[(i+n-1)%n], vs[i], vs[(i+1)%n]
		in, out := a.cross(b).cross(b), b.cross(c).cross(b)
		if in.length() == 0 || out.length() == 0 {
			continue // a repeated vertex turns nowhere
		}
		turns += math.Atan2(in.cross(out).dot(b), in.dot(out))
	}
	return math.Mod(2*math.Pi-turns+4*math.Pi, 4*math.Pi)
}
