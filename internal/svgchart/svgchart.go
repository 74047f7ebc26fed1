// Package svgchart draws the small time charts of dedupsim's HTML reports
// (a checked run's, a diagnosis's) as self-contained inline SVG: no
// network, no scripts, and the same chart gives the same bytes.
package svgchart

import (
	"fmt"
	"html"
	"math"
	"strings"
)

// Series is one line (or bars) on a chart.
type Series struct {
	Name   string
	Color  string
	X, Y   []float64
	Bars   bool // draw as bars at each X instead of a line
	Dashed bool
}

// Marker is a vertical line at X with a label (a crash, the heal point).
// Markers with the same Legend share one legend entry.
type Marker struct {
	X      float64
	Label  string
	Legend string
	Color  string
}

// Chart is a small time chart.
type Chart struct {
	Title   string
	XLabel  string
	YLabel  string
	Series  []Series
	Markers []Marker
	// HLines are horizontal reference lines (a predicted bound).
	HLines []HLine
}

// HLine is a horizontal reference line.
type HLine struct {
	Y     float64
	Label string
	Color string
}

const (
	chartW, chartH = 760.0, 240.0
	padL, padR     = 64.0, 16.0
	padB           = 40.0
	legendRowH     = 14.0
)

// legendItem is one legend entry: a filled swatch (a series) or a dashed
// line (a marker or reference line).
type legendItem struct {
	name, color string
	dashed      bool
}

// legend lists every series, every kind of marker (with how many) and
// every reference line.
func (c Chart) legend() []legendItem {
	var out []legendItem
	for _, s := range c.Series {
		out = append(out, legendItem{name: s.Name, color: s.Color, dashed: s.Dashed})
	}
	count := map[string]int{}
	var order []Marker
	for _, m := range c.Markers {
		k := m.Legend
		if k == "" {
			k = m.Label
		}
		if count[k] == 0 {
			order = append(order, Marker{Legend: k, Color: m.Color})
		}
		count[k]++
	}
	for _, m := range order {
		name := m.Legend
		if n := count[m.Legend]; n > 1 {
			name = fmt.Sprintf("%s (%d)", name, n)
		}
		out = append(out, legendItem{name: name + " (dashed line)", color: m.Color, dashed: true})
	}
	for _, h := range c.HLines {
		out = append(out, legendItem{name: h.Label, color: h.Color, dashed: true})
	}
	return out
}

// layoutLegend places the items in rows that fit the chart's width and
// returns their positions and the number of rows.
func layoutLegend(items []legendItem) (xs, ys []float64, rows int) {
	lx, row := padL, 0
	for _, it := range items {
		w := 24 + 5.6*float64(len(it.name))
		if lx+w > chartW-padR && lx > padL {
			lx, row = padL, row+1
		}
		xs, ys = append(xs, lx), append(ys, 36+legendRowH*float64(row))
		lx += w + 6
	}
	if len(items) > 0 {
		rows = row + 1
	}
	return xs, ys, rows
}

// SVG renders the chart as a self-contained <svg> element.
func (c Chart) SVG() string {
	items := c.legend()
	lxs, lys, rows := layoutLegend(items)
	padT := 34 + legendRowH*float64(rows)
	xmin, xmax, ymin, ymax := math.Inf(1), math.Inf(-1), 0.0, math.Inf(-1)
	for _, s := range c.Series {
		for i := range s.X {
			xmin, xmax = math.Min(xmin, s.X[i]), math.Max(xmax, s.X[i])
			ymin, ymax = math.Min(ymin, s.Y[i]), math.Max(ymax, s.Y[i])
		}
	}
	for _, h := range c.HLines {
		ymax = math.Max(ymax, h.Y)
	}
	for _, m := range c.Markers {
		xmin, xmax = math.Min(xmin, m.X), math.Max(xmax, m.X)
	}
	if math.IsInf(xmin, 1) {
		xmin, xmax = 0, 1
	}
	if math.IsInf(ymax, -1) || ymax <= ymin {
		ymax = ymin + 1
	}
	if xmax <= xmin {
		xmax = xmin + 1
	}
	ymax = niceCeil(ymax)
	sx := func(x float64) float64 { return padL + (x-xmin)/(xmax-xmin)*(chartW-padL-padR) }
	sy := func(y float64) float64 { return chartH - padB - (y-ymin)/(ymax-ymin)*(chartH-padT-padB) }

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %.0f %.0f" width="%.0f" height="%.0f" role="img" aria-label="%s">`,
		chartW, chartH, chartW, chartH, html.EscapeString(c.Title))
	fmt.Fprintf(&b, `<rect x="0" y="0" width="%.0f" height="%.0f" fill="#fff"/>`, chartW, chartH)
	fmt.Fprintf(&b, `<text x="%.0f" y="18" font-size="13" font-weight="bold">%s</text>`, padL, html.EscapeString(c.Title))
	// Axes and ticks.
	fmt.Fprintf(&b, `<g stroke="#999" stroke-width="1"><line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/><line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/></g>`,
		padL, chartH-padB, chartW-padR, chartH-padB, padL, padT, padL, chartH-padB)
	b.WriteString(`<g font-size="10" fill="#444">`)
	for _, y := range ticks(ymin, ymax) {
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="end">%s</text>`, padL-4, sy(y)+3, short(y))
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#eee"/>`, padL, sy(y), chartW-padR, sy(y))
	}
	for _, x := range ticks(xmin, xmax) {
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`, sx(x), chartH-padB+14, short(x))
	}
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`, (padL+chartW-padR)/2, chartH-6, html.EscapeString(c.XLabel))
	fmt.Fprintf(&b, `<text x="12" y="%.1f" transform="rotate(-90 12 %.1f)" text-anchor="middle">%s</text>`, (padT+chartH-padB)/2, (padT+chartH-padB)/2, html.EscapeString(c.YLabel))
	b.WriteString(`</g>`)
	for _, m := range c.Markers {
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-dasharray="3,3"><title>%s</title></line>`,
			sx(m.X), padT, sx(m.X), chartH-padB, m.Color, html.EscapeString(m.Label))
	}
	for _, h := range c.HLines {
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-dasharray="6,3"/>`, padL, sy(h.Y), chartW-padR, sy(h.Y), h.Color)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="10" fill="%s" text-anchor="end">%s</text>`, chartW-padR, sy(h.Y)-3, h.Color, html.EscapeString(h.Label))
	}
	barW := 3.0
	for _, s := range c.Series {
		if s.Bars {
			fmt.Fprintf(&b, `<g fill="%s" fill-opacity="0.8">`, s.Color)
			for i := range s.X {
				if s.Y[i] == 0 {
					continue
				}
				fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f"/>`, sx(s.X[i])-barW/2, sy(s.Y[i]), barW, sy(ymin)-sy(s.Y[i]))
			}
			b.WriteString(`</g>`)
			continue
		}
		if len(s.X) == 0 {
			continue
		}
		var pts strings.Builder
		for i := range s.X {
			fmt.Fprintf(&pts, "%.1f,%.1f ", sx(s.X[i]), sy(s.Y[i]))
		}
		dash := ""
		if s.Dashed {
			dash = ` stroke-dasharray="5,3"`
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="1.6"%s points="%s"/>`, s.Color, dash, strings.TrimSpace(pts.String()))
	}
	// Legend: every series, marker kind and reference line.
	for i, it := range items {
		x, y := lxs[i], lys[i]
		if it.dashed {
			fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="2" stroke-dasharray="3,2"/>`, x, y-4, x+10, y-4, it.color)
		} else {
			fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="10" height="10" fill="%s"/>`, x, y-9, it.color)
		}
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="10">%s</text>`, x+14, y, html.EscapeString(it.name))
	}
	b.WriteString(`</svg>`)
	return b.String()
}

// ticks returns round values (multiples of 1, 2 or 5 times a power of
// ten) spanning [lo, hi], about five of them.
func ticks(lo, hi float64) []float64 {
	step := niceCeil((hi - lo) / 5)
	var out []float64
	for v := math.Ceil(lo/step) * step; v <= hi+step*1e-9; v += step {
		out = append(out, v)
		if len(out) > 12 {
			break
		}
	}
	return out
}

// niceCeil rounds up to 1, 2 or 5 times a power of ten.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

// short formats a tick value compactly (1.5k, 2M).
func short(v float64) string {
	a := math.Abs(v)
	switch {
	case a >= 1e9:
		return trim(v/1e9) + "G"
	case a >= 1e6:
		return trim(v/1e6) + "M"
	case a >= 1e4:
		return trim(v/1e3) + "k"
	}
	return trim(v)
}

func trim(v float64) string {
	s := strings.TrimSuffix(fmt.Sprintf("%.1f", v), ".0")
	if s == "-0" {
		return "0"
	}
	return s
}
