//go:build unix

package verifier_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/bankdoor/bankdoor/ledger/receipt"
	"github.com/bankdoor/bankdoor/verifier"
)

// BenchmarkVerifyDir measures offline verification of a receipts
// directory (bankdoor verify DIR --pub PEM) as the report's
// verify-offline row does: one op is verifier.VerifyDir over a chain of n
// receipt files just written, on all cores; receipts/s is the figure to
// read, and cpu-µs/receipt the process's CPU time per receipt (see
// BenchmarkVerifyExport). Signing and writing the files is not timed.
// n=5000 is the report's default run; files are written afresh for each
// op, as a verification that reads them for the first time (the kernel
// updates their access times) is the one to measure.
func BenchmarkVerifyDir(b *testing.B) {
	for _, n := range []int{5000, 100_000} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			a := newAgent(b)
			start := time.Now()
			files := a.next(b, n)
			b.Logf("setup: %d receipts signed: %v", n, time.Since(start).Round(time.Millisecond))
			var cpu time.Duration
			for b.Loop() {
				b.StopTimer()
				dir := writeReceipts(b, files)
				cpu0 := cpuTime(b)
				b.StartTimer()
				rep, err := verifier.VerifyDir(dir, a.Public(), verifier.Options{})
				b.StopTimer()
				cpu += cpuTime(b) - cpu0
				if err != nil {
					b.Fatal(err)
				}
				if len(rep.Receipts) != n {
					b.Fatalf("verified %d receipts, want %d", len(rep.Receipts), n)
				}
				if err := os.RemoveAll(dir); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
			b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "receipts/s")
			b.ReportMetric(float64(cpu.Microseconds())/float64(n*b.N), "cpu-µs/receipt")
		})
	}
}

// writeReceipts writes files, seq 1 on, into a new directory, one file
// each as the proxy does (without its syncs).
func writeReceipts(b *testing.B, files [][]byte) string {
	dir, err := os.MkdirTemp(b.TempDir(), "receipts")
	if err != nil {
		b.Fatal(err)
	}
	for i, f := range files {
		if err := os.WriteFile(filepath.Join(dir, receipt.FileName(uint64(i)+1)), f, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	return dir
}
