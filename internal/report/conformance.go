package report

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/bankdoor/bankdoor/internal/conformance"
)

// ConformanceTable is the MCP conformance suite run against one target,
// directly and through bankdoor proxy --listen (package
// internal/conformance).
type ConformanceTable struct {
	Target string `json:"target"` // "reference" or "server-everything"
	Suite  string `json:"suite"`  // package@version of the suite
	// Status is StatusMeasured or "not measured: WHY" / "failed: WHY".
	Status  string            `json:"status"`
	Elapsed float64           `json:"elapsed_s,omitempty"`
	Rows    []conformance.Row `json:"rows,omitempty"`
}

// quickConformance is the status of the suite in a --quick report: the
// suite takes a minute a target, and `go test ./internal/conformance`
// runs a subset of it and the progress scenario 20 times in CI.
const quickConformance = "not measured: --quick leaves the suite to go test ./internal/conformance"

// Conformance runs the whole suite against each target of the mode,
// through a gateway with its default limits: the suite's runner never
// sends DELETE, so its idle sessions are evicted as they pile up (issue
// 15: before eviction, the defaults scored 5 of 31).
func (b *Bench) Conformance(ctx context.Context, mode string) []ConformanceTable {
	suite := conformance.Package + "@" + conformance.Version
	var tables []ConformanceTable
	if mode == "quick" {
		return []ConformanceTable{{Target: string(conformance.Reference), Suite: suite, Status: quickConformance}}
	}
	s, err := conformance.Install(ctx)
	for _, t := range conformance.Targets {
		ct := ConformanceTable{Target: string(t), Suite: suite}
		if err != nil {
			ct.Status = "not measured: installing the suite: " + err.Error()
			tables = append(tables, ct)
			continue
		}
		fmt.Fprintf(b.Progress, "report: MCP conformance suite against %s, direct and through proxy --listen\n", t)
		work := filepath.Join(b.Work, "conformance", string(t))
		if err := os.MkdirAll(work, 0o700); err != nil {
			ct.Status = "failed: " + err.Error()
			tables = append(tables, ct)
			continue
		}
		start := time.Now()
		ct.Rows, err = s.Table(ctx, t, b.Bankdoor, work) // the gateway with its default limits
		ct.Elapsed = time.Since(start).Round(time.Second).Seconds()
		ct.Status = StatusMeasured
		if err != nil {
			ct.Status = "failed: " + err.Error()
			err = nil
		}
		tables = append(tables, ct)
	}
	return tables
}

// conformanceSection writes one table per target. A report made before
// the section existed has none, and no section.
func conformanceSection(b *strings.Builder, tables []ConformanceTable) {
	if len(tables) == 0 {
		return
	}
	b.WriteString("<a id=\"conformance\"></a>\n## MCP conformance through the gateway\n\n")
	b.WriteString("The official MCP conformance suite's server scenarios, run directly against a server over streamable HTTP and through `bankdoor proxy --listen` in front of it " +
		"(`internal/conformance`; the gateway runs with `internal/conformance/testdata/TARGET.yaml`, which exposes every feature and allows the target's tools, pinned, and with its default session limits: the suite's runner never sends DELETE, so the sessions it leaves idle are evicted). " +
		"`reference` is the suite's own everything-server, for which every scenario is written; `server-everything` is the npm demonstration server, which lacks many of the tools, prompts and resources the scenarios call. " +
		"A difference is explained as a gate deny (its rule); as passing only through bankdoor, when the checks the server fails succeed through the gateway; " +
		"as a hollow pass, not counted as a pass, when the scenario passes through bankdoor only because a gate deny (named, from its receipt) kept it from the checks the server fails; " +
		"as a gate listing, when both fail the same checks and their messages differ only in the tools listed (through bankdoor, the allowed ones); " +
		"or as a relay difference to investigate.\n\n")
	for _, t := range tables {
		fmt.Fprintf(b, "### %s (%s)\n\n", t.Target, t.Suite)
		if t.Status != StatusMeasured {
			fmt.Fprintf(b, "%s\n\n", t.Status)
			if len(t.Rows) == 0 {
				continue
			}
		}
		direct, through, hollow := 0, 0, 0
		for _, r := range t.Rows {
			if r.Direct == "pass" {
				direct++
			}
			switch r.Gateway {
			case "pass":
				through++
			case conformance.HollowPass:
				hollow++
			}
		}
		fmt.Fprintf(b, "%d scenarios in %.0f s: %d pass directly, %d through bankdoor", len(t.Rows), t.Elapsed, direct, through)
		if hollow > 0 {
			fmt.Fprintf(b, " (and %d hollow %s, not counted)", hollow, plural(hollow, "pass", "passes"))
		}
		b.WriteString(".\n\n")
		b.WriteString("| Scenario | Direct | Through bankdoor | Why they differ |\n|---|---|---|---|\n")
		for _, r := range t.Rows {
			fmt.Fprintf(b, "| `%s` | %s | %s | %s |\n", r.Scenario, cell(clip(r.Direct)), cell(clip(r.Gateway)), cell(r.Why))
		}
		b.WriteString("\n")
	}
}

// clip shortens an outcome to 300 bytes (a deny names the allowlist; the
// JSON keeps it whole), at a rune boundary.
func clip(s string) string {
	const max = 300
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
