package report

import (
	"errors"
	"io"
	"math"
	"strings"
	"testing"

	"github.com/bankdoor/bankdoor/internal/pgtest"
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

// TestPostgresRows runs the PostgreSQL rows on a server of their own
// with tiny sizes: every row measured, in section postgres, the two
// servers' appends making one log; the ratio to bbolt divides the two
// group-commit rows; the claims are reported against their goals.
func TestPostgresRows(t *testing.T) {
	lb := &LedgerBench{Dir: t.TempDir(), Progress: io.Discard}
	s := Settings{Appends: 256, CheckpointN: 40, ProofSizes: []uint64{300, 600}, Proofs: 20}
	ms := postgresRows(t.Context(), lb, s, pgtest.Start)
	want := []string{"appends-batched-postgres", "appends-batched-postgres-2", "checkpoint-latency-postgres", "inclusion-proof-postgres-600"}
	if len(ms) != len(want) {
		t.Fatalf("%d rows, want %v: %+v", len(ms), want, ms)
	}
	for i, m := range ms {
		if m.ID != want[i] || m.Status != StatusMeasured || m.Section != "postgres" || !strings.Contains(m.Note, "PostgreSQL ") || !strings.HasSuffix(m.Note, " on 127.0.0.1") {
			t.Errorf("row %d: %+v, want %s measured in section postgres, the server's version in the note", i, m, want[i])
		}
	}
	if ms[0].N != 256 || ms[0].Value <= 0 || ms[1].N != 256 || ms[1].Value <= 0 || !strings.Contains(ms[1].What, "2 ledger servers on one database (32 agents each") {
		t.Errorf("append rows %+v and %+v, want 256 receipts each, the second from two servers", ms[0], ms[1])
	}
	if ms[2].N != 40 || ms[2].Dist == nil || ms[3].N != 20 || ms[3].Dist == nil {
		t.Errorf("latency rows %+v and %+v, want distributions over 40 checkpoints and 20 proofs", ms[2], ms[3])
	}
	bolt := Measurement{ID: "appends-batched", Section: "ledger", Status: StatusMeasured, Unit: "receipts/s", N: 256, Value: ms[0].Value * 4}
	ms = append(ms, bolt)
	q := postgresRatio(ms)
	if q.Status != StatusMeasured || math.Abs(q.Value-0.25) > 1e-9 || q.Section != "postgres" {
		t.Errorf("ratio %+v, want 0.25 measured", q)
	}
	boltProofs := Measurement{ID: "inclusion-proof-600", Section: "ledger", Status: StatusMeasured, Unit: "µs", N: 20, Dist: &Dist{P50: 1, P95: 2, P99: 2, Max: 3}}
	r := &Report{Settings: s, Measurements: append(ms, q, boltProofs)}
	for _, c := range []Claim{postgresAppendsClaim(r), postgresCheckpointClaim(r), postgresProofClaim(r)} {
		if c.Status != StatusMeasured || !strings.Contains(c.Figure, "the goal") {
			t.Errorf("claim %s: %s (%s), want measured against the goal", c.ID, c.Status, c.Figure)
		}
	}
	if c := proofClaim(r); c.Status != StatusHeld || !strings.Contains(c.Figure, " at 600 on PostgreSQL; p50 1.00 µs at 600") || c.Evidence != "m-inclusion-proof-600" {
		t.Errorf("claim %s: %s (%s, evidence %s), want held with the PostgreSQL proofs named, the bbolt row as evidence", c.ID, c.Status, c.Figure, c.Evidence)
	}
}

// TestPostgresDoesNotStart: a PostgreSQL that does not start fails every
// PostgreSQL row with the reason, and so their claims; the ratio is not
// measured.
func TestPostgresDoesNotStart(t *testing.T) {
	lb := &LedgerBench{Dir: t.TempDir(), Progress: io.Discard}
	s := Settings{Appends: 64, CheckpointN: 10, ProofSizes: []uint64{100}, Proofs: 5}
	ms := postgresRows(t.Context(), lb, s, func(func(string, ...any)) (*pgtest.Server, error) {
		return nil, errors.New("pgtest: no PostgreSQL")
	})
	if len(ms) != 4 || ms[3].ID != "inclusion-proof-postgres-100" {
		t.Fatalf("rows %+v, want the four PostgreSQL rows", ms)
	}
	for _, m := range ms {
		if !strings.HasPrefix(m.Status, "failed: ") || !strings.HasSuffix(m.Status, ": starting PostgreSQL: pgtest: no PostgreSQL") || strings.Count(m.Status, "starting") != 1 || m.Section != "postgres" {
			t.Errorf("row %s: %q in section %q, want failed with the reason, in postgres", m.ID, m.Status, m.Section)
		}
	}
	ms = append(ms, Measurement{ID: "appends-batched", Status: StatusMeasured, Value: 1000})
	if q := postgresRatio(ms); !strings.HasPrefix(q.Status, "not measured: ") {
		t.Errorf("ratio %+v, want not measured", q)
	}
	r := &Report{Settings: s, Measurements: ms}
	for _, c := range []Claim{postgresAppendsClaim(r), postgresCheckpointClaim(r), postgresProofClaim(r), proofClaim(r)} {
		if !strings.HasPrefix(c.Status, "failed: ") {
			t.Errorf("claim %s: %s, want failed", c.ID, c.Status)
		}
	}
}

// TestPostgresClaims: the goal claims against synthetic rows, on either
// side of each goal (at the goal meets it), and without rows.
func TestPostgresClaims(t *testing.T) {
	rate := func(id string, v float64) Measurement {
		return Measurement{ID: id, Status: StatusMeasured, Unit: "receipts/s", N: 100, Value: v}
	}
	dist := func(id, unit string, p50, p99 float64) Measurement {
		return Measurement{ID: id, Status: StatusMeasured, Unit: unit, N: 100, Dist: &Dist{P50: p50, P95: p99, P99: p99, Max: p99}}
	}
	s := Settings{ProofSizes: []uint64{10_000, 1_000_000}}
	for name, c := range map[string]struct {
		rows   []Measurement
		claim  func(*Report) Claim
		figure string // "" for not measured
	}{
		"appends meet": {[]Measurement{rate("appends-batched-postgres", 5000), rate("appends-batched-postgres-2", 7000), {ID: postgresRatioID, Status: StatusMeasured, Value: 0.5}},
			postgresAppendsClaim, "5000 receipts/s with one server, 7000 receipts/s with two (one server: 0.50x bbolt's group commit); meets the goal"},
		"appends miss": {[]Measurement{rate("appends-batched-postgres", 4999), rate("appends-batched-postgres-2", 9000)},
			postgresAppendsClaim, "with two; misses the goal"},
		"appends one row": {[]Measurement{rate("appends-batched-postgres", 6000)}, postgresAppendsClaim, ""},
		"checkpoint meets": {[]Measurement{dist("checkpoint-latency-postgres", "ms", 20, 100)},
			postgresCheckpointClaim, "p50 20.0 ms, p99 100 ms; meets the goal"},
		"checkpoint misses": {[]Measurement{dist("checkpoint-latency-postgres", "ms", 20, 101)},
			postgresCheckpointClaim, "p99 101 ms; misses the goal"},
		"proofs meet": {[]Measurement{dist("inclusion-proof-postgres-10000", "µs", 900, 5000), dist("inclusion-proof-postgres-1000000", "µs", 900, 1999)},
			postgresProofClaim, "p50 900 µs, p99 1999 µs at 1000000 leaves; meets the goal"},
		"proofs miss": {[]Measurement{dist("inclusion-proof-postgres-1000000", "µs", 900, 2001)},
			postgresProofClaim, "misses the goal"},
		"proofs smaller log only": {[]Measurement{dist("inclusion-proof-postgres-10000", "µs", 9, 10)}, postgresProofClaim, ""},
	} {
		got := c.claim(&Report{Settings: s, Measurements: c.rows})
		switch {
		case c.figure == "" && !strings.HasPrefix(got.Status, "not measured: "):
			t.Errorf("%s: %s (%s), want not measured", name, got.Status, got.Figure)
		case c.figure != "" && (got.Status != StatusMeasured || !strings.Contains(got.Figure, c.figure)):
			t.Errorf("%s: %s (%s), want measured with %q", name, got.Status, got.Figure, c.figure)
		}
		if !strings.HasPrefix(got.Evidence, "m-") || !strings.Contains(got.Evidence, "postgres") {
			t.Errorf("%s: evidence %q, want a PostgreSQL row", name, got.Evidence)
		}
	}
}
