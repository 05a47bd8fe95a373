package eval

import (
	"math"

	"github.com/mayfly-db/mayfly/internal/document"
)

// ST_AREA measures on the WGS 84 ellipsoid, as the service does, by way of
// its authalic sphere: latitudes become authalic latitudes (which keep
// areas), and each ring's spherical excess with great-circle edges, times
// the authalic radius squared, is its area in square metres. For the
// documentation's example this agrees with the service to ten digits.

const (
	wgs84A  = 6378137.0
	wgs84F  = 1 / 298.257223563
	wgs84E2 = wgs84F * (2 - wgs84F)
)

var (
	wgs84E      = math.Sqrt(wgs84E2)
	authalicQP  = authalicQ(math.Pi / 2)
	authalicRad = wgs84A * math.Sqrt(authalicQP/2)
)

func authalicQ(phi float64) float64 {
	s := math.Sin(phi)
	return (1 - wgs84E2) * (s/(1-wgs84E2*s*s) - math.Log((1-wgs84E*s)/(1+wgs84E*s))/(2*wgs84E))
}

// authalicLat is the latitude on the authalic sphere, in radians.
func authalicLat(lat float64) float64 {
	return math.Asin(max(-1, min(1, authalicQ(rad(lat))/authalicQP)))
}

// ringExcess is the signed spherical excess of a ring of authalic
// latitudes that holds no pole, in steradians.
func ringExcess(r []lonLat) float64 {
	sum := 0.0
	for i := 0; i+1 < len(r); i++ {
		t1, t2 := math.Tan(rad(r[i].lat)/2), math.Tan(rad(r[i+1].lat)/2)
		dl := rad(r[i+1].lon - r[i].lon)
		sum += 2 * math.Atan2(math.Tan(dl/2)*(t1+t2), 1+t1*t2)
	}
	return sum
}

// earthArea is the area of the ellipsoid, in square metres.
var earthArea = 4 * math.Pi * authalicRad * authalicRad

// ringArea is the area of a ring's smaller side in square metres; for a
// wide ring (ringRegion), of its left side.
func ringArea(r []lonLat) float64 {
	g := newRingRegion(r)
	if g.wide {
		return leftArea(r) * authalicRad * authalicRad
	}
	return smallArea(r) * authalicRad * authalicRad
}

// planeRingArea is the area a ring encloses in the plane.
func planeRingArea(r []lonLat) float64 {
	sum := 0.0
	for i := 0; i+1 < len(r); i++ {
		sum += r[i].lon*r[i+1].lat - r[i+1].lon*r[i].lat
	}
	return math.Abs(sum) / 2
}

// polygonArea is the outer ring's area less its holes'. On the ellipsoid,
// a clockwise outer ring bounds the rest of the Earth.
func polygonArea(rings [][]lonLat, planar bool) float64 {
	area := 0.0
	for i, r := range rings {
		a := ringArea
		if planar {
			a = planeRingArea
		}
		switch {
		case i > 0 && !planar && newRingRegion(r).wide:
			area -= earthArea - a(r) // a wide hole is its ring's right side
		case i > 0:
			area -= a(r)
		case !planar && newRingRegion(r).clockwise:
			area += earthArea - a(r)
		default:
			area += a(r)
		}
	}
	return max(area, 0)
}

func init() {
	// Not pure: the area depends on the container's kind of space, bound
	// when the program runs.
	register(1, 1, func(c *ctx, a []document.Value) (document.Value, error) {
		g, why := parseGeometry(a[0], c.prog.planar())
		if why != "" {
			return undef, nil
		}
		switch g.kind {
		case "Polygon":
			return number(polygonArea(g.rings, g.planar)), nil
		case "MultiPolygon":
			total := 0.0
			for _, p := range g.polys {
				total += polygonArea(p, g.planar)
			}
			return number(total), nil
		}
		return document.Int(0), nil // points and lines have no area
	}, "ST_AREA")
}
