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
// times, the files written afresh each time (each verification reads
// files just written, as the first did), and gives the fastest, as Bound
// gives the fastest of its passes over the checks: the row is judged
// against that bound (verify-offline-of-bound), and a single pass of a
// tenth of a second on a shared machine measured its neighbours as much
// as itself. The row's text gives the first pass and the slowest too.
func (lb *LedgerBench) VerifyThroughput(dir string, n int) (Measurement, error) {
	lb.progress("verify: %d receipts offline, %d passes", n, boundPasses)
	a, err := agentchain.Generate()
	if err != nil {
		return Measurement{}, err
	}
	files := make([][]byte, n)
	for i := range files {
		if files[i], err = a.Next(); err != nil {
			return Measurement{}, err
		}
	}
	var first, best, worst time.Duration
	for pass := range boundPasses {
		d, err := verifyPass(dir, a, files)
		if err != nil {
			return Measurement{}, err
		}
		if pass == 0 {
			first = d
		}
		best, worst = minPositive(best, d), max(worst, d)
	}
	rate := func(d time.Duration) float64 { return float64(n) / d.Seconds() }
	return Measurement{ID: "verify-offline", Section: "verify",
		What: fmt.Sprintf("offline verification of a receipts directory (signatures and chain, files read from disk), the fastest of %d passes over files written afresh (first pass %.0f/s, slowest %.0f/s)",
			boundPasses, rate(first), rate(worst)),
		Status: StatusMeasured, Unit: "receipts/s", N: n, Value: rate(best)}, nil
}

// verifyPass writes files (a's chain, seq 1 on) into dir, emptied first,
// and times verifier.VerifyDir over it.
func verifyPass(dir string, a *agentchain.Agent, files [][]byte) (time.Duration, error) {
	if err := os.RemoveAll(dir); err != nil {
		return 0, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, err
	}
	for i, b := range files {
		if err := os.WriteFile(filepath.Join(dir, receipt.FileName(uint64(i)+1)), b, 0o644); err != nil {
			return 0, err
		}
	}
	start := time.Now()
	rep, err := verifier.VerifyDir(dir, a.Public(), verifier.Options{})
	d := time.Since(start)
	if err != nil {
		return 0, fmt.Errorf("verifying the report's own receipts in %s: %w", dir, err)
	}
	if len(rep.Receipts) != len(files) {
		return 0, fmt.Errorf("verify checked %d receipts in %s, want %d", len(rep.Receipts), dir, len(files))
	}
	return d, nil
}

func minPositive(a, b time.Duration) time.Duration {
	if a == 0 || b < a {
		return b
	}
	return a
}
