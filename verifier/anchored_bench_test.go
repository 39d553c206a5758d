//go:build unix

package verifier_test

import (
	"syscall"
	"testing"
	"time"

	"github.com/bankdoor/bankdoor/verifier"
)

// BenchmarkVerifyExport measures offline verification of an export bundle
// of 100,000 receipts (bankdoor verify DIR --checkpoint FILE --log-key
// VKEY --witness-key VKEY... with a quorum of 2): one op verifies the
// whole bundle, on all cores; receipts/s is the figure to read. The
// setup (signing, the ledger, the export) is not timed. cpu-µs/receipt
// is the process's CPU time (user and system) per receipt verified: on a
// machine shared with other work, GOMAXPROCS / cpu-µs/receipt is the
// throughput the cores would give if they were idle.
func BenchmarkVerifyExport(b *testing.B) {
	const n = 100_000
	a, other := newAgent(b), newAgent(b)
	w := newAnchorWorld(b, a, other)
	w.append(a.next(b, n))
	w.append(other.next(b, 10))
	start := time.Now()
	dir, cp := w.export(a)
	b.Logf("setup: export of %d receipts from the ledger file, written and synced file by file: %v", n, time.Since(start).Round(time.Millisecond))
	pol := w.policy(2)
	cpu0 := cpuTime(b)
	b.ResetTimer()
	for b.Loop() {
		rep, err := verifier.VerifyAnchored(dir, a.Public(), verifier.Options{}, pol, cp)
		if err != nil {
			b.Fatal(err)
		}
		if rep.Covered != n {
			b.Fatalf("covered %d receipts, want %d", rep.Covered, n)
		}
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "receipts/s")
	b.ReportMetric(float64((cpuTime(b)-cpu0).Microseconds())/float64(n*b.N), "cpu-µs/receipt")
}

// cpuTime is the user and system CPU time the process has used.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
