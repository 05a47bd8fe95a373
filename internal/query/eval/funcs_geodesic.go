package eval

import "math"

// geodesic is the distance in metres between two points along the WGS 84
// ellipsoid, by Vincenty's inverse formula, which agrees with the service's
// distances to a few centimetres over thousands of kilometres. For nearly
// antipodal points, where the iteration need not converge, it falls back to
// the great-circle distance.
func geodesic(p, q lonLat) float64 {
	const b = wgs84A * (1 - wgs84F)
	l := rad(q.lon - p.lon)
	u1 := math.Atan((1 - wgs84F) * math.Tan(rad(p.lat)))
	u2 := math.Atan((1 - wgs84F) * math.Tan(rad(q.lat)))
	su1, cu1 := math.Sincos(u1)
	su2, cu2 := math.Sincos(u2)
	lambda := l
	var sinSigma, cosSigma, sigma, cos2Alpha, cos2SigmaM float64
	for range 200 {
		sl, cl := math.Sincos(lambda)
		sinSigma = math.Hypot(cu2*sl, cu1*su2-su1*cu2*cl)
		if sinSigma == 0 {
			return 0 // the same point
		}
		cosSigma = su1*su2 + cu1*cu2*cl
		sigma = math.Atan2(sinSigma, cosSigma)
		sinAlpha := cu1 * cu2 * sl / sinSigma
		cos2Alpha = 1 - sinAlpha*sinAlpha
		cos2SigmaM = 0
		if cos2Alpha != 0 {
			cos2SigmaM = cosSigma - 2*su1*su2/cos2Alpha
		}
		c := wgs84F / 16 * cos2Alpha * (4 + wgs84F*(4-3*cos2Alpha))
		prev := lambda
		lambda = l + (1-c)*wgs84F*sinAlpha*(sigma+c*sinSigma*(cos2SigmaM+c*cosSigma*(-1+2*cos2SigmaM*cos2SigmaM)))
		if math.Abs(lambda-prev) < 1e-12 {
			u := cos2Alpha * (wgs84A*wgs84A - b*b) / (b * b)
			bigA := 1 + u/16384*(4096+u*(-768+u*(320-175*u)))
			bigB := u / 1024 * (256 + u*(-128+u*(74-47*u)))
			ds := bigB * sinSigma * (cos2SigmaM + bigB/4*(cosSigma*(-1+2*cos2SigmaM*cos2SigmaM)-
				bigB/6*cos2SigmaM*(-3+4*sinSigma*sinSigma)*(-3+4*cos2SigmaM*cos2SigmaM)))
			return b * bigA * (sigma - ds)
		}
	}
	return haversine(p, q)
}
