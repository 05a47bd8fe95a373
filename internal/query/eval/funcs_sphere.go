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
// hemisphere is a plane polygon there.
type ringRegion struct {
	verts     []vec3
	centre    vec3
	east, up  vec3
	flat      [][2]float64
	clockwise bool // seen from outside the sphere
	// wide: the ring does not lie within the hemisphere about its centre
	// (a band around the Earth, say), and is tested in longitude and
	// latitude instead.
	wide bool
	ring []lonLat
}

func newRingRegion(r []lonLat) ringRegion {
	g := ringRegion{ring: r}
	var sum vec3
	for _, p := range r[:len(r)-1] {
		v := unit(p)
		g.verts = append(g.verts, v)
		sum = sum.add(v)
	}
	g.verts = append(g.verts, g.verts[0])
	if sum.length() < 1e-9 {
		g.wide = true
		return g
	}
	g.centre = sum.normalized()
	for _, v := range g.verts {
		if v.dot(g.centre) < 1e-9 {
			g.wide = true
			return g
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

func (g ringRegion) project(v vec3) [2]float64 {
	q := v.scale(1 / v.dot(g.centre))
	return [2]float64{q.dot(g.east), q.dot(g.up)}
}

// encloses reports whether p lies on the side of the ring that is within
// the hemisphere about its centre (the smaller side), and whether it lies
// on the ring itself, which counts as either side.
func (g ringRegion) encloses(p lonLat) (in, edge bool) {
	if g.wide {
		return inRing(p, g.ring), false
	}
	v := unit(p)
	for i := 1; i < len(g.verts); i++ {
		if onArc(g.verts[i-1], g.verts[i], v) {
			return true, true
		}
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
// its holes (whose edges belong to the polygon).
func inPolygonOnSphere(p lonLat, rings [][]lonLat) bool {
	outer := newRingRegion(rings[0])
	in, edge := outer.encloses(p)
	if outer.clockwise && !edge {
		in = !in
	}
	if !in {
		return false
	}
	for _, hole := range rings[1:] {
		if in, edge := newRingRegion(hole).encloses(p); in && !edge {
			return false
		}
	}
	return true
}
