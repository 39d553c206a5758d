//go:build unix

package verifier_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/bankdoor/bankdoor/verifier"
)

// BenchmarkVerifyDir measures offline verification of a receipts
// directory (bankdoor verify DIR --pub PEM), as the report's
// verify-offline row does: one op is verifier.VerifyDir over a chain of n
// receipt files, on all cores; receipts/s is the figure to read, and
// cpu-µs/receipt the process's CPU time per receipt (see
// BenchmarkVerifyExport). Signing and writing the files is not timed.
// n=5000 is the report's default run: one chunk and a bit.
func BenchmarkVerifyDir(b *testing.B) {
	for _, n := range []int{5000, 100_000} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			a := newAgent(b)
			start := time.Now()
			a.next(b, n)
			dir := a.writeDir(b)
			b.Logf("setup: %d receipts signed and written: %v", n, time.Since(start).Round(time.Millisecond))
			cpu0 := cpuTime(b)
			b.ResetTimer()
			for b.Loop() {
				rep, err := verifier.VerifyDir(dir, a.Public(), verifier.Options{})
				if err != nil {
					b.Fatal(err)
				}
				if len(rep.Receipts) != n {
					b.Fatalf("verified %d receipts, want %d", len(rep.Receipts), n)
				}
			}
			b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "receipts/s")
			b.ReportMetric(float64((cpuTime(b)-cpu0).Microseconds())/float64(n*b.N), "cpu-µs/receipt")
		})
	}
}
