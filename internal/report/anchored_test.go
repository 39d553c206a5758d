package report

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"
)

// TestVerifyAnchored exports a bundle from a real ledger (no witness: the
// checkpoint is the log's own) and checks both rows: the bundle verifies,
// and the copy without its newest receipts is refused, naming them.
func TestVerifyAnchored(t *testing.T) {
	const n = bundlePage + 6 // more than one request of bundlePage, and more than one GetEntries page
	lb := &LedgerBench{Dir: t.TempDir(), Progress: io.Discard}
	al, err := lb.openAnchorLog(Witness{Skipped: "none in this test"})
	if err != nil {
		t.Fatal(err)
	}
	defer al.Close()
	rows := lb.VerifyAnchored(t.Context(), al, filepath.Join(t.TempDir(), "bundle"), n)
	if len(rows) != 2 || rows[0].ID != anchoredID || rows[1].ID != truncationID {
		t.Fatalf("rows %+v, want %s and %s", rows, anchoredID, truncationID)
	}
	for _, m := range rows {
		if m.Status != StatusMeasured || m.N != n || m.Value <= 0 {
			t.Errorf("row %s: %+v, want measured over %d receipts", m.ID, m, n)
		}
	}
	if !strings.Contains(rows[0].Note, "signed by the log only") || !strings.Contains(rows[0].Note, "none in this test") {
		t.Errorf("note %q does not say the checkpoint is not cosigned, and why", rows[0].Note)
	}
	if want := fmt.Sprintf("seq %d..%d;", n-truncated+1, n); !strings.Contains(rows[1].Note, want) || !strings.Contains(rows[1].Note, "COPY/receipts lacks 3 receipt(s)") {
		t.Errorf("truncation note %q does not name %q", rows[1].Note, want)
	}
	if c := truncationClaim(&Report{Measurements: rows}); c.Status != StatusHeld {
		t.Errorf("claim %s: %s", c.ID, c.Status)
	}
}
