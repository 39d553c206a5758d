package report

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/bankdoor/bankdoor/internal/agentchain"
	"github.com/bankdoor/bankdoor/ledger/receipt"
	"github.com/bankdoor/bankdoor/verifier"
)

// VerifyThroughput writes a chain of n receipts signed by a fresh key
// into dir, one file each as the proxy does, and times
// verifier.VerifyDir over it (what `bankdoor verify DIR --pub PEM` runs):
// reading, parsing, signature and chain checks. It does so boundPasses
// times over the same files and gives the fastest, as Bound gives the
// fastest of its passes over the checks: the row is judged against that
// bound (verify-offline-of-bound), and a single pass of a tenth of a
// second on a shared machine measured its neighbours as much as itself.
// The files are written once: VerifyDir reads them without updating
// their access times (they are this process's), so a later pass reads
// them as the first did, and writing them afresh for each pass left the
// kernel writing back and removing files while Bound timed c. The row's
// text gives the first pass and the slowest too.
func (lb *LedgerBench) VerifyThroughput(dir string, n int) (Measurement, error) {
	lb.progress("verify: %d receipts offline, %d passes", n, boundPasses)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Measurement{}, err
	}
	a, err := agentchain.Generate()
	if err != nil {
		return Measurement{}, err
	}
	for range n {
		b, err := a.Next()
		if err != nil {
			return Measurement{}, err
		}
		if err := os.WriteFile(filepath.Join(dir, receipt.FileName(a.Seq)), b, 0o644); err != nil {
			return Measurement{}, err
		}
	}
	var first, best, worst time.Duration
	for pass := range boundPasses {
		start := time.Now()
		rep, err := verifier.VerifyDir(dir, a.Public(), verifier.Options{})
		d := time.Since(start)
		if err != nil {
			return Measurement{}, fmt.Errorf("verifying the report's own receipts in %s: %w", dir, err)
		}
		if len(rep.Receipts) != n {
			return Measurement{}, fmt.Errorf("verify checked %d receipts in %s, want %d", len(rep.Receipts), dir, n)
		}
		if pass == 0 {
			first = d
		}
		best, worst = minPositive(best, d), max(worst, d)
	}
	rate := func(d time.Duration) float64 { return float64(n) / d.Seconds() }
	return Measurement{ID: "verify-offline", Section: "verify",
		What: fmt.Sprintf("offline verification of a receipts directory (signatures and chain, files read from disk), the fastest of %d passes over the same files (first pass %.0f/s, slowest %.0f/s)",
			boundPasses, rate(first), rate(worst)),
		Status: StatusMeasured, Unit: "receipts/s", N: n, Value: rate(best)}, nil
}

func minPositive(a, b time.Duration) time.Duration {
	if a == 0 || b < a {
		return b
	}
	return a
}
