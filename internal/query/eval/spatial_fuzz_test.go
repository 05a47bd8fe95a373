package eval

import (
	"math"
	"testing"
)

// FuzzSpatial judges a point and a line against polygons made of fuzzed
// coordinates, on the Earth and in the plane: nothing may panic, no
// distance or area may be NaN, infinite or negative, no area may pass the
// Earth's, and a point within a polygon is at distance 0 from it.
func FuzzSpatial(f *testing.F) {
	f.Add(0.0, 0.0, 10.0, 0.0, 10.0, 10.0, 5.0, 5.0, 170.0, -20.0)
	f.Add(0.0, 60.0, 90.0, 60.0, 180.0, 60.0, 33.0, 89.0, -90.0, 60.0)
	f.Add(0.0, 10.0, 120.0, -5.0, -120.0, 10.0, 10.0, 50.0, 0.0, 0.0)
	f.Fuzz(func(t *testing.T, x0, y0, x1, y1, x2, y2, px, py, x3, y3 float64) {
		for _, v := range []float64{x0, y0, x1, y1, x2, y2, px, py, x3, y3} {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return // JSON has no such numbers
			}
		}
		for _, planar := range []bool{false, true} {
			clamp := func(lon, lat float64) lonLat {
				if planar {
					return lonLat{lon, lat}
				}
				return lonLat{math.Mod(lon, 180), math.Mod(lat, 90)}
			}
			ring := []lonLat{clamp(x0, y0), clamp(x1, y1), clamp(x2, y2), clamp(x3, y3), clamp(x0, y0)}
			poly := geometry{planar: planar, kind: "Polygon", rings: [][]lonLat{ring}}
			pt := geometry{planar: planar, kind: "Point", point: clamp(px, py)}
			line := geometry{planar: planar, kind: "LineString", line: []lonLat{clamp(px, py), clamp(x3, y1)}}
			in := within(pt, poly)
			_ = within(line, poly)
			_ = within(poly, poly)
			_ = intersects(line, poly)
			for _, d := range []float64{distance(pt, poly), distance(line, poly), polygonArea(poly.rings, planar)} {
				if math.IsNaN(d) || math.IsInf(d, 0) || d < 0 {
					t.Fatalf("planar %v, ring %v, point %v: a distance or area of %v", planar, ring, pt.point, d)
				}
			}
			if a := polygonArea(poly.rings, planar); !planar && a > earthArea*(1+1e-9) {
				t.Fatalf("ring %v: area %v, past the Earth's %v", ring, a, earthArea)
			}
			if d := distance(pt, poly); in && d != 0 {
				t.Fatalf("planar %v, ring %v: point %v within at distance %v", planar, ring, pt.point, d)
			}
		}
	})
}
