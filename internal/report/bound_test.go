package report

import (
	"context"
	"io"
	"math"
	"strings"
	"testing"
	"time"
)

// TestBound measures the bound on a small log: a positive rate no faster
// than the checks on all cores allow, and the ratio rows divide by it.
func TestBound(t *testing.T) {
	lb := &LedgerBench{Dir: t.TempDir(), Progress: io.Discard}
	m, c, all, cores, err := lb.Bound(context.Background(), 512)
	if err != nil {
		t.Fatal(err)
	}
	checks := float64(cores) * float64(time.Second) / float64(c)
	if m.Status != StatusMeasured || m.Value <= 0 || m.Value > checks*1.0001 || c <= 0 {
		t.Fatalf("bound %+v with c %v on %d cores (checks alone: %.0f/s)", m, c, cores, checks)
	}
	ms := []Measurement{m,
		{ID: "appends-batched", Section: "ledger", Status: StatusMeasured, Value: m.Value / 2, N: 10},
		{ID: "appends-batched-1024", Section: "ledger", Status: StatusMeasured, Value: m.Value / 5, N: 10},
		{ID: "verify-offline", Section: "verify", Status: StatusMeasured, Value: checks / 4, N: 10}}
	got := boundRatios(ms, c, all, cores)
	if len(got) != 3 || math.Abs(got[0].Value-0.5) > 1e-9 || math.Abs(got[1].Value-0.2) > 1e-9 || math.Abs(got[2].Value-0.25) > 1e-9 {
		t.Errorf("ratios %+v, want 0.5, 0.2 and 0.25", got)
	}
	if all <= 0 || !strings.Contains(got[2].Note, "goroutines at once") {
		t.Errorf("checks on all cores %v, verify row's note %q", all, got[2].Note)
	}
	if got := boundRatios(ms[1:], c, all, cores); got != nil {
		t.Errorf("ratios without the bound row: %+v, want none", got)
	}
}
