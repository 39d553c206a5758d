package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/bankdoor/bankdoor/anchor/anchortest"
	"github.com/bankdoor/bankdoor/internal/attacks"
	"github.com/bankdoor/bankdoor/internal/mcptest"
	"github.com/bankdoor/bankdoor/internal/report"
)

func TestMain(m *testing.M) {
	code := m.Run()
	anchortest.RemoveOmniwitness() // built by TestReportQuick
	os.Exit(code)
}

// TestReportQuick runs bankdoor-report --quick without --bankdoor and
// --fixture, so that it builds both, and checks what it wrote: the JSON
// parses strictly as the v1 schema, every attack was blocked with its
// rule without reaching the bank or moving money, every control moved
// money, no attack argument value is in any receipt, checkpoints were
// cosigned by the real omniwitness, the claims recompute from the rows
// and none failed, and the README block is rewritten between its markers
// only.
func TestReportQuick(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out, work := filepath.Join(dir, "out"), filepath.Join(dir, "work")
	readme := filepath.Join(dir, "README.md")
	before := "# x\n\nabove\n" + report.ReadmeBegin + "\nold figures\n" + report.ReadmeEnd + "\nbelow\n"
	if err := os.WriteFile(readme, []byte(before), 0o644); err != nil {
		t.Fatal(err)
	}
	policy, err := filepath.Abs(filepath.Join("..", "..", "policies", "bankdoor.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	witness, err := anchortest.BuildOmniwitness()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	args := []string{"--quick", "--out", out, "--work", work, "--readme", readme, "--policy", policy, "--witness", witness}
	if code := run(t.Context(), args, &stderr); code != exitOK {
		t.Fatalf("bankdoor-report %s: exit status %d\n%s", strings.Join(args, " "), code, stderr.Bytes())
	}
	for _, want := range []string{"report: building ./cmd/bankdoor and ./fixtures/bank-server\n", "report: attacks:"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("no %q on stderr:\n%s", want, stderr.Bytes())
		}
	}
	r := readReport(t, filepath.Join(out, "bankdoor.json"))
	if r.Settings.Mode != "quick" {
		t.Errorf("settings mode %q, want quick", r.Settings.Mode)
	}
	checkAttacks(t, r)
	checkControls(t, r)
	checkNoLeaks(t, r, filepath.Join(work, "attacks", "receipts"))
	if diff := cmp.Diff(report.Claims(r), r.Claims); diff != "" {
		t.Errorf("claims do not follow from the rows (-recomputed +report):\n%s", diff)
	}
	for _, c := range r.Claims {
		if c.Status != report.StatusHeld && c.Status != report.StatusMeasured && !strings.HasPrefix(c.Status, "not measured: ") {
			t.Errorf("claim %s: %s (%s)", c.ID, c.Status, c.Figure)
		}
	}
	checkConformance(t, r)
	if got, want := len(r.RugPulls), len(attacks.RugPullCases()); got != want {
		t.Errorf("%d rug-pull rows, want the whole matrix: %d", got, want)
	}
	for _, id := range []string{"denied-before-server", "gate-stops-money", "receipts-verify", "no-values-in-receipts", "rug-pull-caught", "proofs-log-n", "witness-anchoring", "truncation-caught", "procs-one-chain", "ledger-takeover"} {
		if c := claim(r, id); c.Status != report.StatusHeld {
			t.Errorf("claim %s is %q, want held", id, c.Status)
		}
	}
	checkLatency(t, r, "latency")
	checkLatency(t, r, "latency-http")
	for _, id := range []string{"gate-cost", "gate-cost-http", "deny-durable"} {
		if c := claim(r, id); c.Status != report.StatusMeasured {
			t.Errorf("claim %s is %q, want measured", id, c.Status)
		}
	}
	checkHTTPReceipts(t, r, work)
	checkProcs(t, r)
	checkAnchored(t, r)
	checkPostgres(t, r)
	checkFiles(t, r, out, readme)
}

// checkPostgres checks the ledger's rows on PostgreSQL (a server the
// report started): measured, in their own section, and their claims
// reported against issue 19's goals.
func checkPostgres(t *testing.T, r *report.Report) {
	t.Helper()
	proofs := fmt.Sprintf("inclusion-proof-postgres-%d", slices.Max(r.Settings.ProofSizes))
	for _, id := range []string{"appends-batched-postgres", "appends-batched-postgres-2", "checkpoint-latency-postgres", proofs, "appends-batched-postgres-of-bbolt"} {
		if m, ok := measurement(r, id); !ok || m.Status != report.StatusMeasured || m.Section != "postgres" {
			t.Errorf("row %s: %+v (present %v), want measured in section postgres", id, m, ok)
		}
	}
	for _, id := range []string{"postgres-group-commit", "postgres-checkpoint-latency", "postgres-proofs"} {
		if c := claim(r, id); c.Status != report.StatusMeasured || !strings.Contains(c.Figure, "the goal") {
			t.Errorf("claim %s is %q (%s), want measured against its goal", id, c.Status, c.Figure)
		}
	}
}

// checkAnchored checks the export bundle's rows: verified at the
// settings' size against a checkpoint the omniwitness cosigned, and its
// truncated copy refused with the missing seqs named.
func checkAnchored(t *testing.T, r *report.Report) {
	t.Helper()
	n := r.Settings.VerifyBundle
	if m, ok := measurement(r, "verify-anchored"); !ok || m.Status != report.StatusMeasured || m.Unit != "receipts/s" || m.N != n || !strings.Contains(m.Note, "cosigned by the real omniwitness") {
		t.Errorf("row verify-anchored: %+v (present %v), want measured over %d receipts, cosigned by the omniwitness", m, ok, n)
	}
	if m, ok := measurement(r, "verify-truncation"); !ok || m.Status != report.StatusMeasured || !strings.Contains(m.Note, fmt.Sprintf("seq %d..%d;", n-2, n)) {
		t.Errorf("row verify-truncation: %+v (present %v), want the missing seqs %d..%d named", m, ok, n-2, n)
	}
	if c := claim(r, "verify-anchored-rate"); c.Status != report.StatusMeasured {
		t.Errorf("claim verify-anchored-rate is %q, want measured", c.Status)
	}
}

// checkProcs checks the many-proxies rows: denies/s for each count of
// proxies over the settings' denies, and the takeover times over its
// rounds, each after its checks passed.
func checkProcs(t *testing.T, r *report.Report) {
	t.Helper()
	for _, n := range report.ProcsCounts {
		id := fmt.Sprintf("denies-procs-%d", n)
		if m, ok := measurement(r, id); !ok || m.Status != report.StatusMeasured || m.Unit != "denies/s" || m.N != r.Settings.ProcsDenies || m.Value <= 0 ||
			!strings.Contains(m.Note, fmt.Sprintf("one chain of %d receipts verified", r.Settings.ProcsDenies+n)) {
			t.Errorf("row %s: %+v (present %v), want measured over %d denies, its chain checked", id, m, ok, r.Settings.ProcsDenies)
		}
	}
	if m, ok := measurement(r, "ledger-takeover"); !ok || m.Status != report.StatusMeasured || m.Unit != "ms" || m.N != r.Settings.TakeoverRounds || m.Dist == nil {
		t.Errorf("row ledger-takeover: %+v (present %v), want measured in ms over %d kills", m, ok, r.Settings.TakeoverRounds)
	}
}

// checkLatency checks the latency rows of one transport (PREFIX-direct,
// -proxied, -deny): each measured over the settings' number of calls,
// with positive, ordered percentiles; and the ratio rows PREFIX-ratio-p50,
// -p95 and -p99 each the quotient of the proxied and direct percentiles.
func checkLatency(t *testing.T, r *report.Report, prefix string) {
	t.Helper()
	dists := map[string]*report.Dist{}
	for _, kind := range []string{"direct", "proxied", "deny"} {
		m, ok := measurement(r, prefix+"-"+kind)
		if !ok || m.Status != report.StatusMeasured || m.Unit != "µs" || m.N != r.Settings.Calls || m.Dist == nil {
			t.Errorf("row %s-%s: %+v (present %v), want measured in µs over %d calls", prefix, kind, m, ok, r.Settings.Calls)
			continue
		}
		if d := m.Dist; !(0 < d.P50 && d.P50 <= d.P95 && d.P95 <= d.P99 && d.P99 <= d.Max) {
			t.Errorf("row %s: percentiles not positive and ordered: %+v", m.ID, *d)
		}
		dists[kind] = m.Dist
	}
	d, p := dists["direct"], dists["proxied"]
	if d == nil || p == nil {
		return
	}
	for q, want := range map[string]float64{"p50": p.P50 / d.P50, "p95": p.P95 / d.P95, "p99": p.P99 / d.P99} {
		m, ok := measurement(r, prefix+"-ratio-"+q)
		if !ok || m.Status != report.StatusMeasured || m.Unit != "x" || m.Value <= 0 || m.Value != want {
			t.Errorf("row %s-ratio-%s: %+v (present %v), want value %v = proxied/direct", prefix, q, m, ok, want)
		}
	}
}

// checkHTTPReceipts checks that every HTTP deny (timed or warm-up) was
// refused by the listening proxy with a receipt, and that the receipts
// verify as one chain under the key of its one agent, "report".
func checkHTTPReceipts(t *testing.T, r *report.Report, work string) {
	t.Helper()
	dir := filepath.Join(work, "latency", "http", "receipts", "report")
	names, err := mcptest.Receipts(dir)
	if want := r.Settings.Calls + 10; err != nil || len(names) != want { // 10 untimed warm-up rounds
		t.Errorf("%d receipts in %s (%v), want one per HTTP deny: %d", len(names), dir, err, want)
	}
	home := filepath.Join(work, "home")
	pub := filepath.Join(home, "agents", "report", "bankdoor.pub.pem")
	// The bankdoor binary the report built into its working directory.
	cmd := exec.Command(filepath.Join(work, "bankdoor"), "verify", dir, "--pub", pub, "--policy", filepath.Join(work, "policy.yaml"))
	cmd.Env = mcptest.Env("BANKDOOR_HOME=" + home)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("verify the HTTP agent's receipts with its key: %v\n%s", err, out)
	}
}

func measurement(r *report.Report, id string) (report.Measurement, bool) {
	for _, m := range r.Measurements {
		if m.ID == id {
			return m, true
		}
	}
	return report.Measurement{}, false
}

// readReport decodes the report strictly: an unknown member or a wrong
// type fails, so the JSON matches the documented Go type.
func readReport(t *testing.T, path string) *report.Report {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var r report.Report
	if err := dec.Decode(&r); err != nil {
		t.Fatalf("%s does not match report.Report: %v", path, err)
	}
	if r.Schema != report.Schema {
		t.Errorf("schema %q, want %q", r.Schema, report.Schema)
	}
	if r.Settings.Mode == "" || r.Machine.Cores < 1 || r.Go == "" || r.Commit == "" || r.Date.IsZero() {
		t.Errorf("header incomplete: mode %q, machine %+v, go %q, commit %q, date %v", r.Settings.Mode, r.Machine, r.Go, r.Commit, r.Date)
	}
	for _, m := range r.Measurements {
		if m.Status != report.StatusMeasured && !strings.HasPrefix(m.Status, "not measured: ") {
			t.Errorf("measurement %s: %s", m.ID, m.Status)
		}
		if m.Status == report.StatusMeasured && m.Value <= 0 && (m.Dist == nil || m.Dist.P50 <= 0) {
			t.Errorf("measurement %s is measured but has no figure: %+v", m.ID, m)
		}
	}
	return &r
}

func checkAttacks(t *testing.T, r *report.Report) {
	t.Helper()
	if got, want := len(r.Attacks), len(attacks.Catalogue()); got != want {
		t.Errorf("%d attack rows, want the whole catalogue: %d", got, want)
	}
	for _, a := range r.Attacks {
		if a.ActualRule != a.ExpectedRule || (a.Reached == 0) == a.Forwarded || a.Moved != 0 || a.Receipt == "" || len(a.Problems) > 0 {
			t.Errorf("attack %s not blocked as expected: %+v", a.ID, a)
		}
	}
}

func checkControls(t *testing.T, r *report.Report) {
	t.Helper()
	unsafe := 0
	for _, a := range attacks.Catalogue() {
		if a.Unsafe {
			unsafe++
		}
	}
	if len(r.Controls) != unsafe {
		t.Errorf("%d control rows, want one per unsafe attack: %d", len(r.Controls), unsafe)
	}
	for _, c := range r.Controls {
		if c.Moved <= 0 || c.Reached == 0 || c.Error != "" {
			t.Errorf("control %s did not move money without the gate: %+v", c.ID, c)
		}
	}
}

// checkNoLeaks searches every receipt of the attack run for every
// distinctive argument value of every attack.
func checkNoLeaks(t *testing.T, r *report.Report, receipts string) {
	t.Helper()
	names, err := mcptest.Receipts(receipts)
	if err != nil || len(names) != len(r.Attacks) {
		t.Fatalf("%d receipts in %s (%v), want %d", len(names), receipts, err, len(r.Attacks))
	}
	// A value that is part of some attack's tool name (action:
	// "transfer") is legitimately in the receipts that record that name.
	var tools, values []string
	for _, a := range attacks.Catalogue() {
		tools = append(tools, a.Tool)
	}
	for _, a := range attacks.Catalogue() {
		for _, v := range report.ArgValues(a) {
			if !strings.Contains(strings.Join(tools, "\n"), v) {
				values = append(values, v)
			}
		}
	}
	if len(values) < 10 {
		t.Fatalf("only %d argument values to search for: %q", len(values), values)
	}
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(receipts, n))
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range values {
			if report.HasValue(b, v) {
				t.Errorf("receipt %s holds the argument value %q", n, v)
			}
		}
	}
}

func claim(r *report.Report, id string) report.Claim {
	for _, c := range r.Claims {
		if c.ID == id {
			return c
		}
	}
	return report.Claim{ID: id, Status: "missing"}
}

// checkFiles checks the markdown, the chart and the README block.
func checkFiles(t *testing.T, r *report.Report, out, readme string) {
	t.Helper()
	md, err := os.ReadFile(filepath.Join(out, "bankdoor.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range r.Claims {
		if !bytes.Contains(md, []byte(`<a id="`+c.Evidence+`"></a>`)) {
			t.Errorf("claim %s links to #%s, which bankdoor.md does not have", c.ID, c.Evidence)
		}
	}
	svg, err := os.ReadFile(filepath.Join(out, report.ChartFile))
	if err != nil || !bytes.HasPrefix(svg, []byte("<svg ")) || bytes.Count(svg, []byte("<polyline")) != 6 {
		t.Errorf("%s is not a chart of six series (%v):\n%.300s", report.ChartFile, err, svg)
	}
	got, err := os.ReadFile(readme)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(got, []byte("# x\n\nabove\n"+report.ReadmeBegin+"\n")) || !bytes.HasSuffix(got, []byte(report.ReadmeEnd+"\nbelow\n")) ||
		bytes.Contains(got, []byte("old figures")) || !bytes.Contains(got, []byte("reports/bankdoor.md#attacks")) {
		t.Errorf("README block not rewritten as expected:\n%s", got)
	}
}

// TestReportCommitted checks that the committed reports/bankdoor.md and
// the README's Measured block are what bankdoor-report renders from the
// committed reports/bankdoor.json: no figure is edited by hand.
func TestReportCommitted(t *testing.T) {
	t.Parallel()
	r := readReport(t, "../../reports/bankdoor.json")
	if got, want := repoFile(t, "reports/bankdoor.md"), report.Markdown(r); got != want {
		t.Errorf("reports/bankdoor.md is not report.Markdown(reports/bankdoor.json); regenerate with go run ./cmd/bankdoor-report")
	}
	readme := repoFile(t, "README.md")
	want, err := report.ReadmeBlock(readme, r)
	if err != nil {
		t.Fatal(err)
	}
	if readme != want {
		t.Errorf("README.md's report block is not generated from reports/bankdoor.json; regenerate with go run ./cmd/bankdoor-report")
	}
	for _, c := range report.Failed(r.Claims) {
		t.Errorf("committed report: claim %s %s", c.ID, c.Status)
	}
}

func repoFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// checkConformance: --quick does not run the conformance suite (a minute
// a target; internal/conformance's tests run it in CI) and says so.
func checkConformance(t *testing.T, r *report.Report) {
	t.Helper()
	if len(r.Conformance) != 1 || !strings.HasPrefix(r.Conformance[0].Status, "not measured: --quick") {
		t.Errorf("conformance tables %+v, want one, not measured under --quick", r.Conformance)
	}
}
