package report

import (
	"slices"
	"time"
)

// Quantile returns the q-quantile (0 <= q <= 1) of sorted by nearest
// rank: the sample at index q*(len-1), rounded down. It returns 0 for no
// samples. The ledger benchmarks use it too, so the report and the
// benchmarks compute percentiles the same way.
func Quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[int(q*float64(len(sorted)-1))]
}

// Distribution sorts lat in place and returns its p50, p95, p99 and max
// in units of unit.
func Distribution(lat []time.Duration, unit time.Duration) *Dist {
	slices.Sort(lat)
	f := func(d time.Duration) float64 { return float64(d) / float64(unit) }
	return &Dist{P50: f(Quantile(lat, 0.5)), P95: f(Quantile(lat, 0.95)), P99: f(Quantile(lat, 0.99)), Max: f(Quantile(lat, 1))}
}
