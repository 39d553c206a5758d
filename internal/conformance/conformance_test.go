package conformance

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/bankdoor/bankdoor/internal/mcptest"
)

// bench is a target, and bankdoor proxy --listen in front of it.
type bench struct {
	suite   *Suite
	direct  *Upstream
	gateway *Gateway
}

// newBench installs the project (npm, once per machine), builds bankdoor
// and starts target and the gateway in front of it for t, with the
// gateway's default session limits: the runner never sends DELETE, and
// the idle sessions it leaves are evicted as a real client's are.
func newBench(t *testing.T, target Target, flags ...string) *bench {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	s, err := Install(ctx)
	if err != nil {
		t.Fatal(err)
	}
	bin, err := mcptest.BuildBankdoor(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	u, err := s.Start(ctx, target)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(u.Close)
	g, err := StartGateway(ctx, GatewayConfig{Bankdoor: bin, Target: target, Upstream: u.URL,
		Work: t.TempDir(), Flags: flags})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := g.Close(); err != nil {
			t.Errorf("bankdoor proxy --listen: %v", err)
		}
	})
	return &bench{suite: s, direct: u, gateway: g}
}

// Subset is the scenarios TestConformanceSubset runs: one of each kind
// the gateway relays (lifecycle, ping, tools, logging, resources,
// prompts, completion, SSE streams, Origin checks). The whole suite runs
// in the report (cmd/bankdoor-report).
var Subset = []string{"server-initialize", "ping", "logging-set-level", "completion-complete", "tools-list",
	"tools-call-simple-text", "tools-call-error", "tools-call-sampling", "resources-list", "resources-subscribe",
	"prompts-list", "server-sse-multiple-streams", "dns-rebinding-protection"}

// TestConformanceSubset runs Subset against the reference server, direct
// and through bankdoor, and fails on every relay difference (a gate deny
// is a documented difference). The whole suite, against both targets,
// runs in the report.
func TestConformanceSubset(t *testing.T) {
	t.Parallel()
	b := newBench(t, Reference)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	start := time.Now()
	rows, err := b.suite.Compare(ctx, b.direct.URL, b.gateway, Subset, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d scenarios in %v", len(rows), time.Since(start).Round(time.Millisecond))
	for _, r := range rows {
		t.Logf("%-30s direct %-6s bankdoor %-6s %s", r.Scenario, short(r.Direct), short(r.Gateway), r.Why)
		if strings.HasPrefix(r.Why, "relay difference") {
			t.Errorf("%s: %s\n  direct:   %s\n  bankdoor: %s", r.Scenario, r.Why, r.Direct, r.Gateway)
		}
	}
}

func short(outcome string) string { s, _, _ := strings.Cut(outcome, ":"); return s }

// TestOnlyThroughBankdoor runs, against server-everything, the two
// scenarios the report's table shows failing directly and passing
// through bankdoor, and holds Explain to what each run shows:
// dns-rebinding-protection passes through bankdoor for a real reason
// (the gateway refuses the foreign Host and Origin, which the server
// accepts), and server-sse-polling is a hollow pass: the gate denies its
// tool test_reconnection, which server-everything lacks (tool.not_allowed),
// and the scenario takes the deny's JSON answer as "SSE tests not
// applicable", so it never checks a tool result.
func TestOnlyThroughBankdoor(t *testing.T) {
	t.Parallel()
	b := newBench(t, ServerEverything)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	rows, err := b.suite.Compare(ctx, b.direct.URL, b.gateway, []string{"dns-rebinding-protection", "server-sse-polling"}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		t.Logf("%s: direct %s; bankdoor %s; %s", r.Scenario, r.Direct, r.Gateway, r.Why)
	}
	if r := rows[0]; r.Gateway != "pass" || !strings.HasPrefix(r.Why, "passes only through bankdoor: ") {
		t.Errorf("dns-rebinding-protection: bankdoor %q, why %q; want a real pass only through bankdoor", r.Gateway, r.Why)
	}
	r := rows[1]
	for _, want := range []string{"hollow pass: ", `denied tools/call "test_reconnection" (tool.not_allowed)`, "without running incoming-sse-event", "Server returned JSON instead of SSE stream"} {
		if r.Gateway != HollowPass || !strings.Contains(r.Why, want) {
			t.Errorf("server-sse-polling: bankdoor %q, why %q; want %q, why with %q", r.Gateway, r.Why, HollowPass, want)
		}
	}
}

// TestProgressTwentyRuns runs the suite's tools-call-with-progress
// scenario against the reference server 20 times through the gateway and
// wants 20 passes (issue 15: progress must arrive before the result, on
// the POST's own stream). It reports the pass counts direct (5 runs) and
// through bankdoor. Before the gateway answered POSTs on their own event
// stream, 10 to 14 runs of 20 passed.
func TestProgressTwentyRuns(t *testing.T) {
	t.Parallel()
	const runs = 20
	b := newBench(t, Reference)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	dir := t.TempDir()
	count := func(url, name string, n int) (int, map[string]int) {
		passed, why := 0, map[string]int{}
		for i := range n {
			r, err := b.suite.Run(ctx, url, "tools-call-with-progress", filepath.Join(dir, fmt.Sprintf("%s-%02d", name, i)))
			if err != nil {
				t.Fatal(err)
			}
			if r.Passed() {
				passed++
			} else {
				why[receiptID.ReplaceAllString(strings.Join(r.Failures(), "; "), "receipt N")]++
			}
		}
		return passed, why
	}
	dp, dwhy := count(b.direct.URL, "direct", 5)
	gp, gwhy := count(b.gateway.URL, "gateway", runs)
	if gp != runs {
		t.Errorf("tools-call-with-progress through bankdoor passed %d of %d runs, want %d of %d; failures (count: checks): %s\n"+
			"direct against the reference server: passed %d of 5; failures: %s",
			gp, runs, runs, runs, fmtWhy(gwhy), dp, fmtWhy(dwhy))
	}
}

// receiptID is the receipt a deny names, which differs run by run.
var receiptID = regexp.MustCompile(`receipt \d+\.json`)

func fmtWhy(why map[string]int) string {
	b, _ := json.Marshal(why)
	return string(b)
}

// TestProjectPinned: npm/package.json asks for exactly the versions the
// package's constants name.
func TestProjectPinned(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("npm", "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	var pkg struct{ Dependencies map[string]string }
	if err := json.Unmarshal(b, &pkg); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{Package: Version, EverythingPackage: EverythingVersion, NodePackage: NodeVersion}
	if fmt.Sprint(pkg.Dependencies) != fmt.Sprint(want) {
		t.Errorf("npm/package.json dependencies %v, want %v", pkg.Dependencies, want)
	}
}

// TestParseList reads the server scenarios of `conformance list`.
func TestParseList(t *testing.T) {
	out := "Server scenarios (test against a server):\n  - server-initialize [2025-06-18,2025-11-25]\n  - ping [2025-06-18]\n\nClient scenarios (test against a client):\n  - initialize [2025-06-18]\n"
	got, err := parseList([]byte(out))
	if err != nil || strings.Join(got, ",") != "server-initialize,ping" {
		t.Errorf("parseList = %v, %v; want [server-initialize ping]", got, err)
	}
	if _, err := parseList([]byte("Client scenarios:\n  - initialize\n")); err == nil {
		t.Error("parseList of a list with no server scenarios: no error")
	}
}

// TestExplain: a gate deny is named by its rule, a failure that is not a
// deny is a relay difference, agreeing runs have no reason, and a pass
// only through bankdoor is real when the checks the server fails succeed
// through it, hollow when they do not and the gate denied something in the
// run, and a relay difference otherwise.
func TestExplain(t *testing.T) {
	pass := []Check{{ID: "c", Status: "SUCCESS"}}
	fail := func(msg string) []Check { return []Check{{ID: "c", Status: "FAILURE", ErrorMessage: msg}} }
	deny := `Failed: MCP error -32001: bankdoor denied tools/call "t": tool.not_allowed: tool "t" is not in the allowlist (receipt 000001.json)`
	// What server-sse-polling reports against server-everything: directly
	// the tool's error result fails incoming-sse-event; through bankdoor
	// the deny's JSON answer ends the scenario with an INFO check.
	sseDirect := []Check{{ID: "incoming-sse-event", Status: "INFO"}, {ID: "incoming-sse-event", Status: "FAILURE", ErrorMessage: "Tool call failed"},
		{ID: "server-sse-priming-event", Status: "WARNING"}}
	sseGateway := []Check{{ID: "outgoing-request", Status: "INFO", Details: json.RawMessage(`{"method":"POST"}`)},
		{ID: "server-sse-content-type", Status: "INFO", Details: json.RawMessage(`{"contentType":"application/json","message":"Server returned JSON instead of SSE stream - priming event tests not applicable"}`)}}
	reconnect := []Denial{{Receipt: "000001.json", Tool: "test_reconnection", Rule: "tool.not_allowed"}}
	method := []Denial{{Receipt: "000002.json", Rule: "method.not_exposed", Reason: `method "prompts/get" needs "prompts"`}}
	for _, c := range []struct {
		direct, gateway []Check
		denials         []Denial
		outcome, why    string
	}{
		{pass, pass, nil, "pass", ""},
		{fail("x"), fail("x"), nil, "fail: c: x", ""},
		{nil, nil, nil, "fail: no checks", ""},
		{pass, fail(deny), nil, "fail: c: " + deny, "gate deny: tool.not_allowed"},
		{fail("not found"), fail(deny), reconnect, "fail: c: " + deny, "gate deny: tool.not_allowed"},
		{pass, fail("Expected at least 3 progress notifications, got 2"), nil, "fail: c: Expected at least 3 progress notifications, got 2", "relay difference: fails only through bankdoor"},
		{fail("x"), fail("y"), nil, "fail: c: y", "relay difference: both fail, with other checks or messages"},
		{fail("got 200"), pass, nil, "pass", "passes only through bankdoor: c, which the server fails, succeeds through the gateway"},
		{fail("got 200"), pass, reconnect, "pass", "passes only through bankdoor: c, which the server fails, succeeds through the gateway"},
		{append(fail("a"), Check{ID: "d", Status: "FAILURE"}), append(pass, Check{ID: "d", Status: "SUCCESS"}), nil, "pass",
			"passes only through bankdoor: c, d, which the server fails, succeed through the gateway"},
		{sseDirect, sseGateway, reconnect, HollowPass,
			`hollow pass: the gate denied tools/call "test_reconnection" (tool.not_allowed), and the scenario passed without running incoming-sse-event, which the server fails ` +
				`(its last check: "Server returned JSON instead of SSE stream - priming event tests not applicable"); the pass tests nothing the server fails`},
		{fail("x"), []Check{{ID: "c", Status: "INFO"}}, append(reconnect, method...), HollowPass,
			`hollow pass: the gate denied tools/call "test_reconnection" (tool.not_allowed), method "prompts/get" needs "prompts" (method.not_exposed), ` +
				`and the scenario passed without a success of c, which the server fails; the pass tests nothing the server fails`},
		{sseDirect, sseGateway, nil, "pass", "relay difference: passes only through bankdoor, without running incoming-sse-event, which the server fails"},
		// json-schema-2020-12 against server-everything: the tool is missing
		// either way; through bankdoor the list holds the allowed tools only.
		{fail("Tool 'j' not found. Available tools: echo, get-env, gzip-file, get-sum"), fail("Tool 'j' not found. Available tools: echo, get-sum"), nil,
			"fail: c: Tool 'j' not found. Available tools: echo, get-sum",
			"gate listing: both fail the same checks, and their messages differ only in the tools the server lists, which through bankdoor are the allowed ones (not listed: get-env, gzip-file)"},
		{fail("Tool 'j' not found. Available tools: echo"), fail("Tool 'j' not found. Available tools: echo, j2"), nil,
			"fail: c: Tool 'j' not found. Available tools: echo, j2", "relay difference: both fail, with other checks or messages"},
		{fail("Tool 'j' not found. Available tools: echo, j2"), fail("Tool 'k' not found. Available tools: echo"), nil,
			"fail: c: Tool 'k' not found. Available tools: echo", "relay difference: both fail, with other checks or messages"},
	} {
		row := Explain(Result{Scenario: "s", Checks: c.direct}, Result{Scenario: "s", Checks: c.gateway, Denials: c.denials})
		if row.Gateway != c.outcome || row.Why != c.why {
			t.Errorf("Explain(%v, %v, denials %v) = gateway %q, why %q;\nwant gateway %q, why %q", c.direct, c.gateway, c.denials, row.Gateway, row.Why, c.outcome, c.why)
		}
	}
}

// TestTypeScriptClientSession measures the session lifecycle with a real
// client, the official TypeScript SDK's (ts-client.mjs): once connected
// it keeps its notification stream open, so its session survives a pause
// of three idle timeouts and its next call is served; its close() sends
// no DELETE, and the gateway closes the session one idle timeout after
// the stream broke. The figures are logged (go test -v -run
// TestTypeScriptClientSession ./internal/conformance).
func TestTypeScriptClientSession(t *testing.T) {
	t.Parallel()
	const idle = 2 * time.Second
	b := newBench(t, Reference, "--idle-timeout", idle.String(), "-v")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, b.suite.Node(), filepath.Join(b.suite.Dir, "ts-client.mjs"), b.gateway.URL)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr mcptest.SyncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer cmd.Process.Kill()
	lines := bufio.NewScanner(stdout)
	next := func(prefix string) string {
		t.Helper()
		if !lines.Scan() || !strings.HasPrefix(lines.Text(), prefix) {
			t.Fatalf("ts-client printed %q, want %q...; its stderr: %s\ngateway:\n%s", lines.Text(), prefix, stderr.String(), b.gateway.Stderr())
		}
		return strings.TrimPrefix(lines.Text(), prefix)
	}
	sid := next("connected ")
	waitLog(ctx, t, b.gateway, "notification stream open", sid)

	time.Sleep(3 * idle) // the pause under test, not a wait for an event
	if logged(b.gateway, "closing an idle session", sid) {
		t.Fatalf("the gateway closed the session of a client whose stream was open:\n%s", b.gateway.Stderr())
	}
	fmt.Fprintln(stdin, "call")
	next("called")

	closed := time.Now()
	fmt.Fprintln(stdin, "close")
	next("closed")
	waitLog(ctx, t, b.gateway, "notification stream closed", sid)
	broke := time.Since(closed)
	waitLog(ctx, t, b.gateway, "closing an idle session", sid)
	t.Logf("TypeScript SDK client: session kept through a %v pause with its stream open; after close() (no DELETE) the stream broke in %v and the session was closed %v after close() (--idle-timeout %v)",
		3*idle, broke.Round(time.Millisecond), time.Since(closed).Round(time.Millisecond), idle)
}

// logged reports whether the gateway's log has a line with msg for
// session sid.
func logged(g *Gateway, msg, sid string) bool {
	for _, l := range strings.Split(g.Stderr(), "\n") {
		if strings.Contains(l, msg) && strings.Contains(l, sid) {
			return true
		}
	}
	return false
}

// waitLog waits until the gateway logs msg for session sid.
func waitLog(ctx context.Context, t *testing.T, g *Gateway, msg, sid string) {
	t.Helper()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !logged(g, msg, sid) {
		select {
		case <-ctx.Done():
			t.Fatalf("the gateway never logged %q for session %s:\n%s", msg, sid, g.Stderr())
		case <-tick.C:
		}
	}
}
