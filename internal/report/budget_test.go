package report

import (
	"strings"
	"testing"
)

// TestBudgetClaim: the claim holds when the requests and the worst lag
// are within the interval's bounds, and fails naming which is not.
func TestBudgetClaim(t *testing.T) {
	rows := func(calls, maxLag float64) *Report {
		return &Report{Settings: Settings{Mode: "quick"}, Measurements: []Measurement{
			{ID: budgetID, Status: StatusMeasured, Unit: "ms", N: 300, Dist: &Dist{P50: 500, P95: 950, P99: 990, Max: maxLag}},
			{ID: budgetCallsID, Status: StatusMeasured, Unit: "requests", N: 1, Value: calls},
		}}
	}
	for _, c := range []struct {
		name         string
		r            *Report
		status, want string
	}{
		{"within", rows(4, 994), StatusHeld, "4 requests in 3s (at most 5)"},
		{"too many requests", rows(6, 994), "failed: more requests", ""},
		{"a receipt waited too long", rows(4, 2100), "failed: a receipt waited 2100 ms", ""},
		{"no row", &Report{Settings: Settings{Mode: "quick"}}, "not measured", ""},
	} {
		got := budgetClaim(c.r)
		if !strings.HasPrefix(got.Status, c.status) || !strings.Contains(got.Figure, c.want) {
			t.Errorf("%s: %s, %q; want %s…, a figure with %q", c.name, got.Status, got.Figure, c.status, c.want)
		}
	}
}
