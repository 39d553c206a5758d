package report

import (
	"io"
	"strings"
	"testing"
)

// TestProofsHeapRows grows a log to three sizes and checks the peak-heap
// rows: one per size, the largest under the id the README links to, each
// over the same number of appends (the smallest size), measured.
func TestProofsHeapRows(t *testing.T) {
	lb := &LedgerBench{Dir: t.TempDir(), Progress: io.Discard}
	ms, err := lb.Proofs(t.Context(), []uint64{300, 500, 1000}, 20)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		id, window string
		n          int
	}{
		{"ledger-peak-heap-300", "receipts 1 to 300 ", 300},
		{"ledger-peak-heap-500", "receipts 301 to 500 ", 500},
		{"ledger-peak-heap", "receipts 701 to 1000 ", 1000},
	}
	if len(ms) != 6 {
		t.Fatalf("%d rows, want 3 inclusion-proof rows and 3 peak-heap rows: %+v", len(ms), ms)
	}
	for i, w := range want {
		m := ms[3+i]
		if m.ID != w.id || m.N != w.n || m.Status != StatusMeasured || m.Unit != "MiB" || m.Value <= 0 || !strings.Contains(m.What, w.window) {
			t.Errorf("row %d: %+v, want %s measured in MiB at %d receipts over %q", 3+i, m, w.id, w.n, w.window)
		}
	}
	if strings.Contains(ms[3].Note, "whole growth") || !strings.Contains(ms[5].Note, "whole growth from 500") {
		t.Errorf("notes %q and %q: want the whole growth only where it is more than the window", ms[3].Note, ms[5].Note)
	}
	if c := heapFlatClaim(&Report{Measurements: ms}); c.Status != StatusMeasured || !strings.Contains(c.Figure, " at 300, ") {
		t.Errorf("claim %s on three sizes: %s (%s), want measured from the rows", c.ID, c.Status, c.Figure)
	}
}

// TestHeapFlatClaim: the claim reports the sizes' peaks and says flat
// when every larger log peaks within heapFlatBound of the smallest, not
// flat otherwise; a failed row fails it; fewer than two sizes are not
// measured.
func TestHeapFlatClaim(t *testing.T) {
	row := func(id string, n int, mib float64) Measurement {
		return Measurement{ID: id, Section: "ledger", Status: StatusMeasured, Unit: "MiB", N: n, Value: mib}
	}
	for name, c := range map[string]struct {
		rows           []Measurement
		status, figure string
	}{
		"flat": {[]Measurement{row("ledger-peak-heap-10000", 10_000, 10), row("ledger-peak-heap", 1_000_000, 12.5)},
			StatusMeasured, "10.0 MiB at 10000, 12.5 MiB at 1000000 receipts; the highest 1.25x the smallest log's, within 1.25x: flat"},
		"smaller": {[]Measurement{row("ledger-peak-heap-10000", 10_000, 10), row("ledger-peak-heap", 1_000_000, 8)},
			StatusMeasured, "the highest 0.80x the smallest log's, within 1.25x: flat"},
		"grows": {[]Measurement{row("ledger-peak-heap-10000", 10_000, 10), row("ledger-peak-heap-100000", 100_000, 11), row("ledger-peak-heap", 1_000_000, 12.6)},
			StatusMeasured, "the highest 1.26x the smallest log's, over 1.25x: not flat"},
		"middle": {[]Measurement{row("ledger-peak-heap-10000", 10_000, 10), row("ledger-peak-heap-100000", 100_000, 14), row("ledger-peak-heap", 1_000_000, 11)},
			StatusMeasured, "the highest 1.40x the smallest log's, over 1.25x: not flat"},
		"order": {[]Measurement{row("ledger-peak-heap", 1_000_000, 10), row("ledger-peak-heap-10000", 10_000, 7)},
			StatusMeasured, "7.00 MiB at 10000, 10.0 MiB at 1000000 receipts; the highest 1.43x the smallest log's, over 1.25x: not flat"},
		"failed row": {[]Measurement{row("ledger-peak-heap-10000", 10_000, 10), {ID: "ledger-peak-heap", N: 100_000, Status: "failed: disk full"}},
			"failed: ledger-peak-heap failed: disk full", "-"},
		"one size": {[]Measurement{row("ledger-peak-heap", 1000, 10)}, "not measured: ", "-"},
		"no rows":  {[]Measurement{row("ledger-peak-heaps", 10, 10), row("other", 1000, 99)}, "not measured: ", "-"},
	} {
		got := heapFlatClaim(&Report{Measurements: c.rows})
		if !strings.HasPrefix(got.Status, c.status) || !strings.Contains(got.Figure, c.figure) {
			t.Errorf("%s: status %q, figure %q; want %q and %q", name, got.Status, got.Figure, c.status, c.figure)
		}
		if got.Evidence != "m-ledger-peak-heap" {
			t.Errorf("%s: evidence %q, want m-ledger-peak-heap", name, got.Evidence)
		}
	}
}

// TestTileReads: the tlog-tiles rows, full tiles and entry bundles,
// measured over a log with full tiles, and the claim built from them.
func TestTileReads(t *testing.T) {
	lb := &LedgerBench{Dir: t.TempDir(), Progress: io.Discard}
	ms, err := lb.TileReads(t.Context(), 600, 20)
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 3 || ms[0].ID != "tiles-read" || ms[1].ID != "tiles-read-entries" || ms[2].ID != "tiles-read-entries-gzip" {
		t.Fatalf("rows %+v, want tiles-read, tiles-read-entries and tiles-read-entries-gzip", ms)
	}
	for _, m := range ms {
		if m.Status != StatusMeasured || m.N != 20 || m.Dist == nil || m.Dist.P50 <= 0 || m.Dist.P99 < m.Dist.P50 || !strings.Contains(m.Note, "600 receipts (2 full tiles)") {
			t.Errorf("row %+v: want measured, 20 reads, a distribution, the log's size in the note", m)
		}
	}
	if c := tilesClaim(&Report{Measurements: ms}); c.Status != StatusMeasured || !strings.Contains(c.Figure, "entry bundle p50 ") || !strings.Contains(c.Figure, "(gzipped: p50 ") {
		t.Errorf("claim: %s (%s), want measured with both figures", c.Status, c.Figure)
	}
	if c := tilesClaim(&Report{}); !strings.HasPrefix(c.Status, "not measured") {
		t.Errorf("claim without rows: %s, want not measured", c.Status)
	}
}
