package report

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bankdoor/bankdoor/internal/loadgen"
	"github.com/bankdoor/bankdoor/internal/mcptest"
	"github.com/bankdoor/bankdoor/internal/tesseralog"
)

// TestSideBySideQuick runs one round of the side-by-side at the --quick
// sizes (which --quick leaves to this test)
// against the real `bankdoor ledger serve` and the real Tessera log and
// checks its rows: all measured, the ratio row the ratio of the two rates,
// and the claim a figure.
func TestSideBySideQuick(t *testing.T) {
	if testing.Short() {
		t.Skip("builds bankdoor and the tessera log and loads each for seconds; skipped in -short mode")
	}
	work := t.TempDir()
	bankdoor, err := mcptest.BuildBankdoor(t.Context(), work)
	if err != nil {
		t.Fatal(err)
	}
	tessera := filepath.Join(work, "tessera-posix")
	if err := tesseralog.Build(t.Context(), "", tessera); err != nil {
		t.Fatal(err)
	}
	var progress strings.Builder
	b := &Bench{Bankdoor: bankdoor, Work: work, Progress: &progress, Tessera: Tessera{Bin: tessera}}
	s := SettingsFor("quick") // its writers and seconds; --quick itself runs no round
	s.SideBySideRounds = 1
	r := &Report{Measurements: b.SideBySide(t.Context(), s)}
	ids := []string{sbsAppendsBankdoor, sbsCheckpointBankdoor, sbsCPUBankdoor, sbsAppendsTessera, sbsCheckpointTessera, sbsCPUTessera, sbsAppendsRatio}
	for _, id := range ids {
		m, ok := find(r.Measurements, id)
		if !ok || m.Status != StatusMeasured {
			t.Fatalf("row %s: %+v (present %v), want measured\n%s", id, m, ok, progress.String())
		}
		if m.Dist != nil {
			t.Logf("%s: p50 %s, p99 %s (%s)", id, num(m.Dist.P50, m.Unit), num(m.Dist.P99, m.Unit), m.Note)
		} else {
			t.Logf("%s: %s (%s)", id, num(m.Value, m.Unit), m.Note)
		}
	}
	bd, _ := find(r.Measurements, sbsAppendsBankdoor)
	ts, _ := find(r.Measurements, sbsAppendsTessera)
	ratio, _ := find(r.Measurements, sbsAppendsRatio)
	if ratio.Value != bd.Value/ts.Value {
		t.Errorf("ratio %v, want %v / %v", ratio.Value, bd.Value, ts.Value)
	}
	c := tesseraClaim(r)
	if c.Status != StatusMeasured {
		t.Errorf("claim %s: %s, want measured", c.ID, c.Status)
	}
	t.Logf("claim: %s", c.Figure)
}

// TestSideBySideClaim: the claim is a figure when measured, not measured
// without Tessera, and failed when bankdoor's run failed its check.
func TestSideBySideClaim(t *testing.T) {
	skipped := Tessera{Skipped: "no --tessera given"}
	bdFailed := sbsRows(loadgen.Result{}, errors.New("checkpoint size 9 and largest index 9 after 10 acknowledged entries"), "bankdoor", "bankdoor", "load")
	tsMissing := sbsRows(loadgen.Result{}, errors.New(skipped.Skipped), "tessera", "Tessera", "load")
	for i := range tsMissing {
		tsMissing[i].Status = "not measured: " + skipped.Skipped
	}
	ratio := ratioRow(bdFailed[0], tsMissing[0], bdFailed[1], tsMissing[1], bdFailed[2], tsMissing[2])
	rows := append(append(bdFailed, tsMissing...), ratio)
	if c := tesseraClaim(&Report{Measurements: rows}); !strings.HasPrefix(c.Status, "failed: ") {
		t.Errorf("claim with bankdoor's run failed: %q, want failed", c.Status)
	}
	if c := tesseraClaim(&Report{}); !strings.HasPrefix(c.Status, "not measured: ") {
		t.Errorf("claim without rows: %q, want not measured", c.Status)
	}
	if !strings.HasPrefix(ratio.Status, "not measured: ") {
		t.Errorf("ratio row without Tessera: %q, want not measured", ratio.Status)
	}
}

// TestRoundRatios: the ratio row's note lists each round's ratio, in
// round order.
func TestRoundRatios(t *testing.T) {
	r := func(acked int) loadgen.Result { return loadgen.Result{Acked: acked, Elapsed: time.Second} }
	got := roundRatios([]loadgen.Result{r(900), r(1100)}, []loadgen.Result{r(1000), r(1000)})
	if want := "0.90x, 1.10x"; got != want {
		t.Errorf("roundRatios = %q, want %q", got, want)
	}
}
