package report

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bankdoor/bankdoor/internal/agentkey"
	"github.com/bankdoor/bankdoor/internal/mcptest"
)

// TestProcs runs the many-proxies rows at a small size through the built
// binaries: a denies/s row per count of proxies, each over the timed
// denies and checked, and the takeover row over its rounds; both claims
// hold.
func TestProcs(t *testing.T) {
	t.Parallel()
	work := t.TempDir()
	bankdoor, bankServer, err := mcptest.Build(t.Context(), work)
	if err != nil {
		t.Fatal(err)
	}
	policy, err := filepath.Abs("../../policies/bankdoor.yaml")
	if err != nil {
		t.Fatal(err)
	}
	b := &Bench{Bankdoor: bankdoor, BankServer: bankServer, Policy: policy, Home: filepath.Join(work, "home"), Work: work, Progress: io.Discard}
	if _, err := agentkey.Generate(b.Home, false); err != nil {
		t.Fatal(err)
	}
	s := Settings{ProcsDenies: 16, TakeoverRounds: 2}
	rows := b.Procs(t.Context(), s)
	if len(rows) != len(ProcsCounts)+1 {
		t.Fatalf("%d rows, want %d", len(rows), len(ProcsCounts)+1)
	}
	for i, n := range ProcsCounts {
		m := rows[i]
		// 16 timed denies after n warm-up ones: a chain of 16+n.
		if m.ID != fmt.Sprintf("%s%d", procsIDPrefix, n) || m.Status != StatusMeasured || m.Unit != "denies/s" || m.N != s.ProcsDenies || m.Value <= 0 ||
			!strings.Contains(m.Note, fmt.Sprintf("afterwards one chain of %d receipts verified", 16+n)) || !strings.Contains(m.Note, "load average ") {
			t.Errorf("row %d: %+v, want %s%d measured in denies/s over %d denies, its chain of %d checked", i, m, procsIDPrefix, n, s.ProcsDenies, 16+n)
		}
	}
	m := rows[len(ProcsCounts)]
	if m.ID != takeoverID || m.Status != StatusMeasured || m.Unit != "ms" || m.N != s.TakeoverRounds || m.Dist == nil || m.Dist.P50 <= 0 ||
		!strings.Contains(m.Note, "every 250ms (station.DefaultTakeover)") {
		t.Errorf("takeover row %+v, want measured in ms over %d kills, naming the standby's interval", m, s.TakeoverRounds)
	}
	r := &Report{Measurements: rows}
	var md strings.Builder
	measurementsTable(&md, rows, "procs")
	t.Logf("the rows as the report shows them:\n%s", md.String())
	for _, c := range []Claim{procsClaim(r), takeoverClaim(r)} {
		if c.Status != StatusHeld {
			t.Errorf("claim %s: %s (%s)", c.ID, c.Status, c.Figure)
		}
	}
}
