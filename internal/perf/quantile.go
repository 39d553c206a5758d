// Package perf holds the measuring helpers that bankdoor's benchmarks and
// its report (internal/report) share, so both compute a percentile or a
// peak heap the same way: Quantile (nearest rank, rounded down), LiveHeap
// (heap in use after two collections) and SampleHeap (peak HeapAlloc,
// sampled every millisecond).
package perf

import "time"

// Quantile returns the q-quantile (0 <= q <= 1) of sorted by nearest
// rank: the sample at index q*(len-1), rounded down. It returns 0 for no
// samples.
func Quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[int(q*float64(len(sorted)-1))]
}
