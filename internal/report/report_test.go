package report

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestHasValue(t *testing.T) {
	for _, c := range []struct {
		b, v string
		want bool
	}{
		{`{"reason":"limit 1000 is above 100"}`, "1000", true},
		{`{"sig":"ab1000cd"}`, "1000", false},
		{`{"n":10000}`, "1000", false},
		{`{"to":"acc_mallory"}`, "acc_mallory", true},
		{`"1000"`, "1000", true},
		{`1000`, "1000", true},
		{`x10001000`, "1000", false},
	} {
		if got := HasValue([]byte(c.b), c.v); got != c.want {
			t.Errorf("HasValue(%q, %q) = %v, want %v", c.b, c.v, got, c.want)
		}
	}
}

func TestDistribution(t *testing.T) {
	var lat []time.Duration
	for i := 100; i >= 1; i-- {
		lat = append(lat, time.Duration(i)*time.Millisecond)
	}
	d := Distribution(lat, time.Millisecond)
	if *d != (Dist{P50: 50, P95: 95, P99: 99, Max: 100}) {
		t.Errorf("Distribution of 1..100 ms = %+v", *d)
	}
}

// TestClaimsFail checks that a row showing a breach fails its claim.
func TestClaimsFail(t *testing.T) {
	ok := AttackRow{ID: "a", ExpectedRule: "name.charset", ActualRule: "name.charset", Receipt: "000001.json", Unsafe: true}
	base := func() *Report {
		return &Report{Attacks: []AttackRow{ok}, Controls: []ControlRow{{ID: "a", Moved: 200, Reached: 1}},
			RugPulls:     []RugPullRow{{Case: "stdio_call1", Transport: "stdio", Allowed: 1, Denied: 2}},
			Measurements: []Measurement{{ID: "attack-receipts", Status: StatusMeasured, N: 1}, {ID: truncationID, Status: StatusMeasured, N: 10, Value: 1}}}
	}
	for name, c := range map[string]struct {
		change func(*Report)
		claim  string
	}{
		"reached":    {func(r *Report) { r.Attacks[0].Reached = 1 }, "denied-before-server"},
		"moved":      {func(r *Report) { r.Attacks[0].Moved = 5 }, "denied-before-server"},
		"wrong rule": {func(r *Report) { r.Attacks[0].ActualRule = "tool.not_allowed" }, "denied-before-server"},
		"no money":   {func(r *Report) { r.Controls[0].Moved = 0 }, "gate-stops-money"},
		"no control": {func(r *Report) { r.Controls = nil }, "gate-stops-money"},
		"leak":       {func(r *Report) { r.Attacks[0].Problems = []string{leakProblem + ` "acc_x"`} }, "no-values-in-receipts"},
		"rug pull":   {func(r *Report) { r.RugPulls[0].Problems = []string{"money moved"} }, "rug-pull-caught"},
		"no matrix":  {func(r *Report) { r.RugPulls = nil }, "rug-pull-caught"},
		"forwarded":  {func(r *Report) { r.Attacks[0].Forwarded = true }, "denied-before-server"},
		"receipts":   {func(r *Report) { r.Measurements[0].N = 0 }, "receipts-verify"},
		"truncation": {func(r *Report) { r.Measurements[1].Status = "failed: verify passed without seq 8..10" }, "truncation-caught"},
		"one chain": {func(r *Report) {
			r.Measurements = append(r.Measurements, procsRows(2, "failed: the receipts directory holds a chain of 15, for 16 denies answered")...)
		}, "procs-one-chain"},
		"takeover slow": {func(r *Report) {
			r.Measurements = append(r.Measurements, Measurement{ID: takeoverID, Status: StatusMeasured, Unit: "ms", N: 3, Dist: &Dist{P50: 300, P95: 2100, P99: 2100, Max: 2100}})
		}, takeoverID},
		"takeover failed": {func(r *Report) {
			r.Measurements = append(r.Measurements, Measurement{ID: takeoverID, Status: "failed: no proxy took over the ledger within 10s"})
		}, takeoverID},
	} {
		r := base()
		for _, cl := range Claims(r) {
			if strings.HasPrefix(cl.Status, "failed") {
				t.Fatalf("%s: baseline claim %s failed: %s", name, cl.ID, cl.Status)
			}
		}
		c.change(r)
		var failed []string
		for _, cl := range Failed(Claims(r)) {
			failed = append(failed, cl.ID)
		}
		if !strings.Contains(strings.Join(failed, " "), c.claim) {
			t.Errorf("%s: failed claims %q, want %s among them", name, failed, c.claim)
		}
	}
}

func TestLatencySVG(t *testing.T) {
	svg := LatencySVG("t<&>", []Series{{Name: "a", Samples: []float64{90, 120, 400}}, {Name: "b", Samples: []float64{2000, 3000}}})
	if !strings.HasPrefix(svg, "<svg ") || strings.Count(svg, "<polyline") != 2 || !strings.Contains(svg, "t&lt;&amp;&gt;") || !strings.Contains(svg, ">1ms<") {
		t.Errorf("unexpected SVG:\n%s", svg)
	}
}

// procsRows are the denies-procs-N rows, measured but for the one of
// failedProcs proxies, which has status failed.
func procsRows(failedProcs int, failed string) []Measurement {
	var ms []Measurement
	for _, n := range ProcsCounts {
		m := Measurement{ID: fmt.Sprintf("%s%d", procsIDPrefix, n), Status: StatusMeasured, Unit: "denies/s", N: 16, Value: 100}
		if n == failedProcs {
			m = Measurement{ID: m.ID, Status: failed}
		}
		ms = append(ms, m)
	}
	return ms
}

// TestProcsClaims: the many-proxies claims hold on rows that passed
// (takeovers within the bound), and are not measured without rows.
func TestProcsClaims(t *testing.T) {
	r := &Report{Measurements: append(procsRows(0, ""),
		Measurement{ID: takeoverID, Status: StatusMeasured, Unit: "ms", N: 3, Dist: &Dist{P50: 300, P95: 400, P99: 400, Max: 2000}})}
	for _, c := range []Claim{procsClaim(r), takeoverClaim(r)} {
		if c.Status != StatusHeld {
			t.Errorf("claim %s: %s, want held", c.ID, c.Status)
		}
	}
	for _, c := range []Claim{procsClaim(&Report{}), takeoverClaim(&Report{})} {
		if !strings.HasPrefix(c.Status, "not measured: ") {
			t.Errorf("claim %s without rows: %s, want not measured", c.ID, c.Status)
		}
	}
}
