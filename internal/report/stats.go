package report

import (
	"slices"
	"time"

	"github.com/bankdoor/bankdoor/internal/perf"
)

// Distribution sorts lat in place and returns its p50, p95, p99 and max
// in units of unit.
func Distribution(lat []time.Duration, unit time.Duration) *Dist {
	slices.Sort(lat)
	f := func(d time.Duration) float64 { return float64(d) / float64(unit) }
	return &Dist{P50: f(perf.Quantile(lat, 0.5)), P95: f(perf.Quantile(lat, 0.95)), P99: f(perf.Quantile(lat, 0.99)), Max: f(perf.Quantile(lat, 1))}
}
