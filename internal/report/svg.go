package report

import (
	"fmt"
	"math"
	"strings"
)

// Chart geometry, in SVG user units.
const (
	chartW, chartH         = 720, 360
	padL, padR, padT, padB = 60, 20, 30, 50
)

// seriesColours are colour-blind-safe (Okabe-Ito) stroke colours, one
// for each of the six latency cases.
var seriesColours = []string{"#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9"}

// LatencySVG draws the cumulative distribution of each series (samples
// sorted, in microseconds) on a log-scaled time axis: for each latency x,
// the share of calls that took at most x. It returns a self-contained
// SVG document.
func LatencySVG(title string, series []Series) string {
	lo, hi := bounds(series)
	x := func(us float64) float64 {
		return padL + (math.Log10(us)-lo)/(hi-lo)*(chartW-padL-padR)
	}
	y := func(frac float64) float64 { return chartH - padB - frac*(chartH-padT-padB) }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", chartW, chartH, chartW, chartH)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", chartW, chartH)
	fmt.Fprintf(&b, `<text x="%d" y="18" font-size="14">%s</text>`+"\n", padL, escape(title))
	axes(&b, lo, hi, x, y)
	for i, s := range series {
		colour := seriesColours[i%len(seriesColours)]
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>`+"\n", colour, cdfPoints(s.Samples, x, y))
		// The legend sits bottom right, where a CDF has already risen.
		ly := chartH - padB - 16*(len(series)-i)
		fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2"/><text x="%d" y="%d">%s</text>`+"\n",
			chartW-padR-170, ly, chartW-padR-150, ly, colour, chartW-padR-145, ly+4, escape(s.Name))
	}
	b.WriteString("</svg>\n")
	return b.String()
}

// bounds returns the log10 range of the x axis: whole decades around
// every sample.
func bounds(series []Series) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, s := range series {
		for _, v := range s.Samples {
			if v > 0 {
				lo, hi = math.Min(lo, math.Log10(v)), math.Max(hi, math.Log10(v))
			}
		}
	}
	if math.IsInf(lo, 1) {
		return 0, 1
	}
	lo, hi = math.Floor(lo), math.Ceil(hi)
	if hi <= lo {
		hi = lo + 1
	}
	return lo, hi
}

func axes(b *strings.Builder, lo, hi float64, x, y func(float64) float64) {
	fmt.Fprintf(b, `<g stroke="#888" fill="none"><line x1="%d" y1="%g" x2="%d" y2="%g"/><line x1="%d" y1="%g" x2="%d" y2="%g"/></g>`+"\n",
		padL, y(0), chartW-padR, y(0), padL, y(0), padL, y(1))
	for d := lo; d <= hi; d++ {
		for _, m := range []float64{1, 2, 5} {
			us := m * math.Pow(10, d)
			if math.Log10(us) > hi+1e-9 {
				break
			}
			fmt.Fprintf(b, `<line x1="%.1f" y1="%g" x2="%.1f" y2="%g" stroke="#eee"/><text x="%.1f" y="%g" text-anchor="middle">%s</text>`+"\n",
				x(us), y(0), x(us), y(1), x(us), y(0)+16, durationLabel(us))
		}
	}
	for _, f := range []float64{0, 0.25, 0.5, 0.75, 1} {
		fmt.Fprintf(b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#eee"/><text x="%d" y="%.1f" text-anchor="end">%g%%</text>`+"\n",
			padL, y(f), chartW-padR, y(f), padL-6, y(f)+4, f*100)
	}
	fmt.Fprintf(b, `<text x="%d" y="%d" text-anchor="middle">latency of one tools/call (log scale)</text>`+"\n", (chartW+padL)/2, chartH-12)
}

// cdfPoints returns the polyline of the empirical CDF of sorted samples.
func cdfPoints(sorted []float64, x, y func(float64) float64) string {
	var b strings.Builder
	n := float64(len(sorted))
	for i, v := range sorted {
		if v <= 0 {
			continue
		}
		fmt.Fprintf(&b, "%.1f,%.1f %.1f,%.1f ", x(v), y(float64(i)/n), x(v), y(float64(i+1)/n))
	}
	return strings.TrimSpace(b.String())
}

// durationLabel formats microseconds as "50µs", "2ms", "1s".
func durationLabel(us float64) string {
	switch {
	case us >= 1e6:
		return fmt.Sprintf("%gs", us/1e6)
	case us >= 1e3:
		return fmt.Sprintf("%gms", us/1e3)
	}
	return fmt.Sprintf("%gµs", us)
}

func escape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;").Replace(s)
}
