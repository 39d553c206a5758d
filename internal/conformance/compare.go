package conformance

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// Row is one scenario of the table: its outcome direct and through the
// gateway, and why they differ.
type Row struct {
	Scenario string `json:"scenario"`
	Direct   string `json:"direct"`  // "pass" or "fail: ..." (the failed checks)
	Gateway  string `json:"gateway"` // the same, through bankdoor
	// Why is empty when both runs agree; "gate deny: RULE" when the
	// gateway's failure is a deny the gate documents; "passes only
	// through bankdoor: ..." when only the gateway passes; otherwise
	// "relay difference: ..." (to investigate).
	Why string `json:"why,omitempty"`
}

// denied finds the rule in the message of a gate deny ("bankdoor denied
// WHAT: RULE: REASON (receipt ID)").
var denied = regexp.MustCompile(`bankdoor denied [^:]*: ([a-z_]+(?:\.[a-z_]+)+)`)

// outcome is how a row shows a result.
func outcome(r Result) string {
	if r.Passed() {
		return "pass"
	}
	if len(r.Checks) == 0 {
		return "fail: no checks"
	}
	return "fail: " + strings.Join(r.Failures(), "; ")
}

// Explain compares a scenario's direct and gateway results.
func Explain(direct, gateway Result) Row {
	row := Row{Scenario: direct.Scenario, Direct: outcome(direct), Gateway: outcome(gateway)}
	if direct.Passed() == gateway.Passed() && row.Direct == row.Gateway {
		return row
	}
	if m := denied.FindStringSubmatch(row.Gateway); m != nil {
		row.Why = "gate deny: " + m[1]
		return row
	}
	switch {
	case direct.Passed() == gateway.Passed():
		row.Why = "relay difference: both fail, with other checks or messages"
	case gateway.Passed():
		row.Why = "passes only through bankdoor: the server alone fails it (a stricter gateway, e.g. its Origin check, or a check a deny skipped)"
	default:
		row.Why = "relay difference: fails only through bankdoor"
	}
	return row
}

// Compare runs each scenario against direct, then against gateway, with
// results under dir/direct and dir/gateway, and returns the table.
func (s *Suite) Compare(ctx context.Context, direct, gateway string, scenarios []string, dir string) ([]Row, error) {
	var rows []Row
	for _, sc := range scenarios {
		d, err := s.Run(ctx, direct, sc, filepath.Join(dir, "direct"))
		if err != nil {
			return rows, fmt.Errorf("direct: %w", err)
		}
		g, err := s.Run(ctx, gateway, sc, filepath.Join(dir, "gateway"))
		if err != nil {
			return rows, fmt.Errorf("through bankdoor: %w", err)
		}
		rows = append(rows, Explain(d, g))
	}
	return rows, nil
}

// Table runs the whole suite against t, direct and through bankdoor (the
// binary bankdoor) with flags, using work for the gateway's files and the
// results, and returns the table.
func (s *Suite) Table(ctx context.Context, t Target, bankdoor, work string, flags ...string) ([]Row, error) {
	scenarios, err := s.Scenarios(ctx)
	if err != nil {
		return nil, err
	}
	u, err := s.Start(ctx, t)
	if err != nil {
		return nil, err
	}
	defer u.Close()
	gw := filepath.Join(work, "gateway")
	if err := os.MkdirAll(gw, 0o700); err != nil {
		return nil, err
	}
	g, err := StartGateway(ctx, GatewayConfig{Bankdoor: bankdoor, Target: t, Upstream: u.URL, Work: gw, Flags: flags})
	if err != nil {
		return nil, err
	}
	rows, err := s.Compare(ctx, u.URL, g.URL, scenarios, filepath.Join(work, "results"))
	return rows, errors.Join(err, g.Close())
}
