package report

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestVerifyThroughput: the row is a positive rate over n receipts, says
// it is the fastest of its passes, and leaves the n files it verified.
func TestVerifyThroughput(t *testing.T) {
	lb := &LedgerBench{Dir: t.TempDir(), Progress: io.Discard}
	dir := filepath.Join(t.TempDir(), "receipts")
	m, err := lb.VerifyThroughput(dir, 20)
	if err != nil {
		t.Fatal(err)
	}
	if m.ID != "verify-offline" || m.Status != StatusMeasured || m.N != 20 || m.Value <= 0 || !strings.Contains(m.What, "fastest of 5 passes") {
		t.Errorf("row %+v", m)
	}
	if files, err := os.ReadDir(dir); err != nil || len(files) != 20 {
		t.Errorf("%d files left in %s (%v), want 20", len(files), dir, err)
	}
}
