package svgchart

import (
	"slices"
	"strings"
	"testing"
)

// TestSVG: the legend names every series, each kind of marker once with
// its count, and every reference line; titles are escaped; the same chart
// gives the same bytes.
func TestSVG(t *testing.T) {
	c := Chart{Title: "rows <per> batch", XLabel: "s", YLabel: "rows",
		Series:  []Series{{Name: "numRowsTotal", Color: "#2c6fbb", X: []float64{0, 1, 2}, Y: []float64{0, 1500, 12000}}},
		Markers: []Marker{{X: 1, Label: "crash 1", Legend: "driver crash", Color: "#c0392b"}, {X: 2, Label: "crash 2", Legend: "driver crash", Color: "#c0392b"}},
		HLines:  []HLine{{Y: 20000, Label: "predicted bound", Color: "#e67e22"}},
	}
	svg := c.SVG()
	for _, w := range []string{"numRowsTotal", "driver crash (2) (dashed line)", "predicted bound", "rows &lt;per&gt; batch", ">20k<"} {
		if !strings.Contains(svg, w) {
			t.Errorf("the SVG lacks %q", w)
		}
	}
	if !strings.HasPrefix(svg, "<svg ") || !strings.HasSuffix(svg, "</svg>") || c.SVG() != svg {
		t.Errorf("not one self-contained, repeatable <svg> element")
	}
}

// TestTicks: round steps of 1, 2 or 5 times a power of ten, about five.
func TestTicks(t *testing.T) {
	for _, tc := range []struct {
		lo, hi float64
		want   []float64
	}{{0, 10, []float64{0, 2, 4, 6, 8, 10}}, {0, 1, []float64{0, 0.2, 0.4, 0.6000000000000001, 0.8, 1}}, {0, 45000, []float64{0, 10000, 20000, 30000, 40000}}} {
		if got := ticks(tc.lo, tc.hi); !slices.Equal(got, tc.want) {
			t.Errorf("ticks(%g, %g) = %v, want %v", tc.lo, tc.hi, got, tc.want)
		}
	}
	for v, want := range map[float64]string{0: "0", 1500: "1500", 12000: "12k", 2.5e6: "2.5M", 3e9: "3G", -0.04: "0"} {
		if got := short(v); got != want {
			t.Errorf("short(%g) = %q, want %q", v, got, want)
		}
	}
}
