package conformance

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// Row is one scenario of the table: its outcome direct and through the
// gateway, and why they differ.
type Row struct {
	Scenario string `json:"scenario"`
	Direct   string `json:"direct"` // "pass" or "fail: ..." (the failed checks)
	// Gateway is the same, through bankdoor, or HollowPass.
	Gateway string `json:"gateway"`
	// Why is empty when both runs agree; "gate deny: RULE" when the
	// gateway's failure is a deny the gate documents; "passes only
	// through bankdoor: ..." when only the gateway passes, and every check
	// the server fails succeeds through it; "hollow pass: ..." (with
	// Gateway HollowPass) when only the gateway passes, without those
	// checks succeeding, and the gate denied something during the run;
	// "gate listing: ..." when both fail the same checks and the messages
	// differ only in the tools listed (the gate lists the allowed ones);
	// otherwise "relay difference: ..." (to investigate).
	Why string `json:"why,omitempty"`
}

// HollowPass is the gateway outcome of a scenario that passed through
// bankdoor only without a success of the checks the server fails, while
// the gate denied something in the run: the deny's answer, not the
// server, decided the outcome (e.g. server-sse-polling against
// server-everything takes the JSON answer of a deny of its tool as "SSE
// tests not applicable" and never looks at a tool result). It is not
// counted as a pass.
const HollowPass = "hollow pass"

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

// Explain compares a scenario's direct and gateway results; the gateway's
// Denials tell a hollow pass from a real one (see [HollowPass]).
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
		if hidden, ok := listingOnly(direct, gateway); ok {
			row.Why = "gate listing: both fail the same checks, and their messages differ only in the tools the server lists, which through bankdoor are the allowed ones (not listed: " + strings.Join(hidden, ", ") + ")"
		}
	case gateway.Passed():
		row.Gateway, row.Why = onlyThrough(direct, gateway)
	default:
		row.Why = "relay difference: fails only through bankdoor"
	}
	return row
}

// toolListing starts the list of tools a scenario names in a failure
// message ("Tool 'x' not found. Available tools: a, b").
const toolListing = "Available tools: "

// listingOnly reports whether direct and gateway fail the same checks
// with the same messages, except that a message lists the server's tools
// and the gateway's list is a subset of the direct one: what the gate's
// filtered tools/list makes of the same failure. It returns the tools
// listed only directly.
func listingOnly(direct, gateway Result) (hidden []string, ok bool) {
	d, g := direct.Failures(), gateway.Failures()
	if len(d) != len(g) || len(d) == 0 {
		return nil, false
	}
	for i := range d {
		if d[i] == g[i] {
			continue
		}
		dp, dl, dok := strings.Cut(d[i], toolListing)
		gp, gl, gok := strings.Cut(g[i], toolListing)
		if !dok || !gok || dp != gp {
			return nil, false
		}
		listed := strings.Split(strings.TrimSuffix(dl, "."), ", ")
		shown := strings.Split(strings.TrimSuffix(gl, "."), ", ")
		for _, t := range shown {
			if !slices.Contains(listed, t) {
				return nil, false
			}
		}
		for _, t := range listed {
			if !slices.Contains(shown, t) && !slices.Contains(hidden, t) {
				hidden = append(hidden, t)
			}
		}
	}
	return hidden, len(hidden) > 0
}

// onlyThrough explains a scenario that fails directly and passes through
// the gateway, from what the gateway's run shows: a check the server
// fails counts as passed through bankdoor only if the gateway's run has a
// SUCCESS check of the same id.
func onlyThrough(direct, gateway Result) (outcome, why string) {
	var unshown []string
	for _, id := range direct.failedIDs() {
		if !gateway.succeeded(id) {
			unshown = append(unshown, id)
		}
	}
	if len(unshown) == 0 {
		ids, verb := direct.failedIDs(), "succeeds"
		if len(ids) > 1 {
			verb = "succeed"
		}
		return "pass", "passes only through bankdoor: " + strings.Join(ids, ", ") + ", which the server fails, " + verb + " through the gateway"
	}
	without := without(unshown, gateway) + ", which the server fails"
	if len(gateway.Denials) == 0 {
		return "pass", "relay difference: passes only through bankdoor, " + without
	}
	var ds []string
	for _, d := range gateway.Denials {
		ds = append(ds, d.String())
	}
	why = "hollow pass: the gate denied " + strings.Join(ds, ", ") + ", and the scenario passed " + without
	if m := lastMessage(gateway); m != "" {
		why += fmt.Sprintf(" (its last check: %q)", m)
	}
	return HollowPass, why + "; the pass tests nothing the server fails"
}

// without says which of the check ids did not run in r, and which ran
// without a success.
func without(ids []string, r Result) string {
	var notRun, notSucceeded []string
	for _, id := range ids {
		if r.ran(id) {
			notSucceeded = append(notSucceeded, id)
		} else {
			notRun = append(notRun, id)
		}
	}
	var parts []string
	if len(notRun) > 0 {
		parts = append(parts, "without running "+strings.Join(notRun, ", "))
	}
	if len(notSucceeded) > 0 {
		parts = append(parts, "without a success of "+strings.Join(notSucceeded, ", "))
	}
	return strings.Join(parts, " and ")
}

// lastMessage is the details message of the last check of r that has
// one: what the scenario said last, e.g. why it skipped its test.
func lastMessage(r Result) string {
	for i := len(r.Checks) - 1; i >= 0; i-- {
		if m := r.Checks[i].Message(); m != "" {
			return m
		}
	}
	return ""
}

// RunGateway runs scenario through g as Run does, and puts in the result
// the denies g signed receipts for while it ran. The runner has exited
// when Run returns, and a deny's receipt is on disk before its answer, so
// the receipts after those there before the run are the run's own.
func (s *Suite) RunGateway(ctx context.Context, g *Gateway, scenario, dir string) (Result, error) {
	before, err := g.receipts()
	if err != nil {
		return Result{Scenario: scenario}, err
	}
	r, err := s.Run(ctx, g.URL, scenario, dir)
	if err != nil {
		return r, err
	}
	r.Denials, err = g.denialsAfter(len(before))
	return r, err
}

// Compare runs each scenario against direct, then through gateway, with
// results under dir/direct and dir/gateway, and returns the table.
func (s *Suite) Compare(ctx context.Context, direct string, gateway *Gateway, scenarios []string, dir string) ([]Row, error) {
	var rows []Row
	for _, sc := range scenarios {
		d, err := s.Run(ctx, direct, sc, filepath.Join(dir, "direct"))
		if err != nil {
			return rows, fmt.Errorf("direct: %w", err)
		}
		g, err := s.RunGateway(ctx, gateway, sc, filepath.Join(dir, "gateway"))
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
	rows, err := s.Compare(ctx, u.URL, g, scenarios, filepath.Join(work, "results"))
	return rows, errors.Join(err, g.Close())
}
