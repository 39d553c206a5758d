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
// reading, parsing, signature and chain checks.
func (lb *LedgerBench) VerifyThroughput(dir string, n int) (Measurement, error) {
	lb.progress("verify: %d receipts offline", n)
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
	start := time.Now()
	rep, err := verifier.VerifyDir(dir, a.Public(), verifier.Options{})
	d := time.Since(start)
	if err != nil {
		return Measurement{}, fmt.Errorf("verifying the report's own receipts in %s: %w", dir, err)
	}
	if len(rep.Receipts) != n {
		return Measurement{}, fmt.Errorf("verify checked %d receipts in %s, want %d", len(rep.Receipts), dir, n)
	}
	return Measurement{ID: "verify-offline", Section: "verify", What: "offline verification of a receipts directory (signatures and chain, files read from disk)",
		Status: StatusMeasured, Unit: "receipts/s", N: n, Value: float64(n) / d.Seconds()}, nil
}
