package diagnose

import "math"

// fit is a least-squares line y = a + b*x over points, with its R² (the
// share of the variance the line explains: the trend's confidence).
type fit struct {
	slope, intercept, r2 float64
	n                    int
}

func linear(xs, ys []float64) fit {
	n := len(xs)
	if n < 2 {
		return fit{n: n}
	}
	var sx, sy float64
	for i := range xs {
		sx += xs[i]
		sy += ys[i]
	}
	mx, my := sx/float64(n), sy/float64(n)
	var sxx, sxy, syy float64
	for i := range xs {
		dx, dy := xs[i]-mx, ys[i]-my
		sxx += dx * dx
		sxy += dx * dy
		syy += dy * dy
	}
	if sxx == 0 {
		return fit{n: n, intercept: my}
	}
	f := fit{slope: sxy / sxx, n: n}
	f.intercept = my - f.slope*mx
	switch {
	case syy == 0:
		f.r2 = 1
	default:
		f.r2 = math.Max(0, math.Min(1, sxy*sxy/(sxx*syy)))
	}
	return f
}

func mean(ys []float64) float64 {
	if len(ys) == 0 {
		return 0
	}
	var s float64
	for _, y := range ys {
		s += y
	}
	return s / float64(len(ys))
}

func maxOf(ys []float64) float64 {
	m := math.Inf(-1)
	for _, y := range ys {
		m = math.Max(m, y)
	}
	return m
}
