package report

import (
	"strings"
	"testing"

	"github.com/bankdoor/bankdoor/internal/conformance"
)

// TestConformanceSection: one table per target with its counts, rows and
// reasons; nothing for a report without the section.
func TestConformanceSection(t *testing.T) {
	var b strings.Builder
	conformanceSection(&b, nil)
	if b.Len() != 0 {
		t.Errorf("no tables wrote %q", b.String())
	}
	tables := []ConformanceTable{
		{Target: "reference", Suite: "s@1", Status: StatusMeasured, Elapsed: 3, Rows: []conformance.Row{
			{Scenario: "ping", Direct: "pass", Gateway: "pass"},
			{Scenario: "tools-call-with-progress", Direct: "pass", Gateway: "fail: p: got 2 | " + strings.Repeat("x", 400), Why: "relay difference: fails only through bankdoor"},
		}},
		{Target: "server-everything", Suite: "s@1", Status: "not measured: no npm"},
		{Target: "other", Suite: "s@1", Status: StatusMeasured, Elapsed: 5, Rows: []conformance.Row{
			{Scenario: "ping", Direct: "pass", Gateway: "pass"},
			{Scenario: "server-sse-polling", Direct: "fail: incoming-sse-event: Tool call failed", Gateway: conformance.HollowPass, Why: "hollow pass: the gate denied x"},
		}},
	}
	conformanceSection(&b, tables)
	md := b.String()
	for _, want := range []string{
		"### reference (s@1)", "2 scenarios in 3 s: 2 pass directly, 1 through bankdoor.",
		"| `ping` | pass | pass |  |",
		"| `tools-call-with-progress` | pass | fail: p: got 2 \\| xxx", "… | relay difference: fails only through bankdoor |",
		"### server-everything (s@1)\n\nnot measured: no npm\n",
		"2 scenarios in 5 s: 1 pass directly, 1 through bankdoor (and 1 hollow pass, not counted).\n",
		"| `server-sse-polling` | fail: incoming-sse-event: Tool call failed | hollow pass | hollow pass: the gate denied x |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("section lacks %q:\n%s", want, md)
		}
	}
}
