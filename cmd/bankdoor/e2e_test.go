package main_test

// End-to-end tests: the built bankdoor binary in front of the built fixture
// bank, driven over real stdio by the Go SDK's MCP client and by raw
// frames (internal/mcptest), with the attack catalogue of internal/attacks.
// Every test gets its own key (BANKDOOR_HOME), receipts directory and bank
// state file.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rogpeppe/go-internal/testscript"

	"github.com/bankdoor/bankdoor/anchor/anchortest"
	bankdoor "github.com/bankdoor/bankdoor/cmd/bankdoor"
	"github.com/bankdoor/bankdoor/internal/attacks"
	"github.com/bankdoor/bankdoor/internal/mcptest"
	"github.com/bankdoor/bankdoor/proxy/policy"
)

// bins are the binaries under test, built once by TestMain.
type bins struct{ bankdoor, bankServer string }

var built bins

// TestMain runs the test binary as bankdoor when a testscript script calls
// bankdoor (see script_test.go); otherwise it builds the binaries and runs
// the tests.
func TestMain(m *testing.M) {
	testscript.Main(buildFirst{m}, map[string]func(){
		"bankdoor": func() { os.Exit(bankdoor.Main()) },
	})
}

// buildFirst builds the binaries under test before running the tests.
type buildFirst struct{ m *testing.M }

func (b buildFirst) Run() int { return runMain(b.m) }

func runMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "bankdoor-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	defer anchortest.RemoveOmniwitness() // built by the anchoring tests, if they ran
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	built.bankdoor, built.bankServer, err = mcptest.Build(ctx, dir)
	if err != nil {
		fmt.Fprintf(os.Stderr, "building the binaries under test: %v\n", err)
		return 1
	}
	code := m.Run()
	if err := pg.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	return code
}

// world is one test's key, receipts directory and policy.
type world struct {
	t        *testing.T
	home     string // BANKDOOR_HOME
	pub      string // the public key file
	receipts string
	policy   string
	// http runs each fixture apart, serving streamable HTTP, and the proxy
	// with --url (see proxy_http_test.go).
	http bool
}

// newWorld makes a key with `bankdoor keygen` and a policy pinned against
// the fixture.
func newWorld(t *testing.T) *world {
	t.Helper()
	dir := t.TempDir()
	w := &world{t: t, home: filepath.Join(dir, "home"), receipts: filepath.Join(dir, "receipts")}
	out := w.bankdoor(0, "keygen", "--dir", w.home)
	if !strings.Contains(out, "key_id ") {
		t.Fatalf("bankdoor keygen printed %q, want a key_id line", out)
	}
	w.pub = filepath.Join(w.home, "bankdoor.pub.pem")
	w.policy = pinnedPolicy(t, dir)
	return w
}

// bankdoor runs the bankdoor binary and fails the test unless it exits
// with code; it returns stdout and stderr together.
func (w *world) bankdoor(code int, args ...string) string {
	w.t.Helper()
	got, out := runBankdoor(w.t, w.home, args...)
	if got != code {
		w.t.Fatalf("bankdoor %s: exit status %d, want %d\n%s", strings.Join(args, " "), got, code, out)
	}
	return out
}

func runBankdoor(t *testing.T, home string, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(built.bankdoor, args...)
	cmd.Env = mcptest.Env("BANKDOOR_HOME=" + home)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if _, isExit := err.(*exec.ExitError); err != nil && !isExit {
		t.Fatalf("running bankdoor %s: %v", strings.Join(args, " "), err)
	}
	return cmd.ProcessState.ExitCode(), out.String()
}

// fixture returns a fixture bank with a fresh state file.
func (w *world) fixture(env ...string) mcptest.Fixture {
	return mcptest.Fixture{Bin: built.bankServer, State: filepath.Join(w.t.TempDir(), "state.json"), Env: env}
}

// proxy returns the proxy command in front of f.
func (w *world) proxy(f mcptest.Fixture) mcptest.Proxy {
	p := mcptest.Proxy{Bin: built.bankdoor, Policy: w.policy, Server: "bank", Receipts: w.receipts, Home: w.home, Fixture: f}
	if w.http {
		p.URL = startHTTPFixture(w.t, f).URL
	}
	return p
}

// start starts a session and closes it at the end of the test.
func start(t *testing.T, cmd *exec.Cmd, opts *mcptest.Options) *mcptest.Session {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := mcptest.Start(ctx, cmd, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("closing %s: %v\nstderr:\n%s", cmd.Path, err, s.Stderr())
		}
	})
	return s
}

// verify runs bankdoor verify on dir and returns its exit status and output.
func (w *world) verify(dir string, extra ...string) (int, string) {
	w.t.Helper()
	return runBankdoor(w.t, w.home, append([]string{"verify", dir, "--pub", w.pub}, extra...)...)
}

func testContext(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// shippedPolicy is the fixture's policy as shipped.
const shippedPolicy = "../../policies/bankdoor.yaml"

// livePins returns the fixture's pins, as `bankdoor pin` prints them.
func livePins(t *testing.T) map[string]string {
	t.Helper()
	f := mcptest.Fixture{Bin: built.bankServer, State: filepath.Join(t.TempDir(), "pin-state.json")}
	pins, err := mcptest.LivePins(testContext(t, time.Minute), built.bankdoor, f)
	if err != nil {
		t.Fatal(err)
	}
	return pins
}

// policyPins returns the pins of server bank in a policy file.
func policyPins(t *testing.T, path string) map[string]string {
	t.Helper()
	p, err := policy.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	pins := map[string]string{}
	for name, tool := range p.Servers["bank"].Tools {
		pins[name] = tool.SchemaSHA256
	}
	return pins
}

// pinnedPolicy returns the shipped policy if its pins are the fixture's;
// otherwise a copy in dir pinned with `bankdoor pin --write` (the shipped
// file's staleness is TestE2EShippedPolicyPinned's to report).
func pinnedPolicy(t *testing.T, dir string) string {
	t.Helper()
	shipped, err := filepath.Abs(shippedPolicy)
	if err != nil {
		t.Fatal(err)
	}
	live := livePins(t)
	if stale := stalePins(policyPins(t, shipped), live); len(stale) == 0 {
		return shipped
	}
	b, err := os.ReadFile(shipped)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "bankdoor.yaml")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	f := mcptest.Fixture{Bin: built.bankServer, State: filepath.Join(dir, "pin-state.json")}
	cmd := exec.Command(built.bankdoor, "pin", "--policy", path, "--server", "bank", "--write", "--", f.Bin)
	cmd.Env = mcptest.Env(f.Environ()...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("bankdoor pin --write: %v\n%s", err, out)
	}
	if stale := stalePins(policyPins(t, path), live); len(stale) > 0 {
		t.Fatalf("after bankdoor pin --write, %s still has stale pins for %q", path, stale)
	}
	return path
}

// stalePins lists the tools of pinned whose pin is not the live one.
func stalePins(pinned, live map[string]string) []string {
	var stale []string
	for name, sum := range pinned {
		if live[name] != sum {
			stale = append(stale, name)
		}
	}
	slices.Sort(stale)
	return stale
}

// TestE2EShippedPolicyPinned checks that policies/bankdoor.yaml pins the
// fixture's tools as they are: a shipped policy with stale pins would deny
// every read with pin.mismatch.
func TestE2EShippedPolicyPinned(t *testing.T) {
	t.Parallel()
	live := livePins(t)
	pinned := policyPins(t, shippedPolicy)
	if stale := stalePins(pinned, live); len(stale) > 0 {
		t.Errorf("%s has stale pins for %q; refresh them with bankdoor pin --policy %s --server bank --write -- (the fixture)",
			shippedPolicy, stale, shippedPolicy)
	}
	if diff := cmp.Diff([]string{"get_balances", "get_transactions", "list_accounts"}, slices.Sorted(maps.Keys(pinned))); diff != "" {
		t.Errorf("allowed tools (-want +got):\n%s", diff)
	}
}

func variantEnv(v string) []string {
	if v == "" {
		return nil
	}
	return []string{"BANK_FIXTURE_VARIANT=" + v}
}

// TestE2EAttacks sends the whole catalogue through the proxy, one proxy
// session per fixture variant, all signing into one receipts directory.
func TestE2EAttacks(t *testing.T) {
	t.Parallel()
	testAttacks(t, newWorld(t))
}

func testAttacks(t *testing.T, w *world) {
	ctx := testContext(t, 4*time.Minute)
	w.policy = w.cataloguePolicy()
	all := attacks.Catalogue()
	var results []attacks.Result
	for _, v := range attacks.Variants(all) {
		f := w.fixture(variantEnv(v)...)
		s := start(t, w.proxy(f).Command(), &mcptest.Options{Client: attacks.AgentOptions()})
		results = append(results, attacks.Run(ctx, attacks.Target{Session: s, State: f.State, Receipts: w.receipts}, attacks.ForVariant(all, v))...)
		if v == "rugpull" {
			checkListed(t, ctx, s, []string{"get_transactions", "list_accounts"})
		}
		if err := s.Close(); err != nil { // before the next proxy takes the receipts directory
			t.Errorf("proxy (variant %q): %v\n%s", v, err, s.Stderr())
		}
	}
	t.Logf("attacks through the proxy:\n%s", attacks.Table(results))
	failed, unsafe := 0, 0
	for _, r := range results {
		p := r.Problems()
		if r.Receipt != "" {
			if b, err := os.ReadFile(filepath.Join(w.receipts, r.Receipt)); err != nil {
				p = append(p, err.Error())
			} else if leaks := attacks.Leaks(r.Attack, b); len(leaks) > 0 {
				p = append(p, fmt.Sprintf("its receipt holds argument values: %q", leaks))
			}
		}
		if len(p) > 0 {
			failed++
			t.Errorf("%s (%s): %s", r.Attack.ID, r.Attack.Description, strings.Join(p, "; "))
		}
		if r.Attack.Unsafe {
			unsafe++
		}
	}
	t.Logf("%d attacks (%d that move money without the gate), %d denied as expected, %d failed", len(results), unsafe, len(results)-failed, failed)
	names, err := mcptest.Receipts(w.receipts)
	if err != nil || len(names) != len(results) {
		t.Errorf("%d receipts in %s (%v), want one per attack: %d", len(names), w.receipts, err, len(results))
	}
	if code, out := w.verify(w.receipts, "--policy", w.policy); code != 0 {
		t.Errorf("bankdoor verify: exit status %d, want 0\n%s", code, out)
	}
}

// checkListed checks that tools/list through the proxy shows exactly want.
func checkListed(t *testing.T, ctx context.Context, s *mcptest.Session, want []string) {
	t.Helper()
	var got []string
	for tool, err := range s.Client().Tools(ctx, nil) {
		if err != nil {
			t.Errorf("tools/list: %v", err)
			return
		}
		got = append(got, tool.Name)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("tools/list through the proxy (-want +got):\n%s", diff)
	}
}

// TestE2EControl sends each attack marked Unsafe straight to a fresh
// fixture (seed balances, its variant): each must move money, or the
// catalogue proves nothing about the gate.
func TestE2EControl(t *testing.T) {
	t.Parallel()
	w := &world{t: t}
	ctx := testContext(t, 2*time.Minute)
	all := attacks.Catalogue()
	var results []attacks.Result
	for _, a := range all {
		if !a.Unsafe {
			continue
		}
		f := w.fixture(variantEnv(a.Variant)...)
		s := start(t, f.Command(), &mcptest.Options{Client: attacks.AgentOptions()})
		results = append(results, attacks.Control(ctx, attacks.Target{Session: s, State: f.State}, []attacks.Attack{a})...)
		if err := s.Close(); err != nil {
			t.Errorf("fixture after %s: %v", a.ID, err)
		}
	}
	t.Logf("control run, straight to the fixture:\n%s", attacks.ControlTable(results))
	unsafe := 0
	for _, a := range all {
		if a.Unsafe {
			unsafe++
		}
	}
	if len(results) != unsafe || unsafe == 0 {
		t.Errorf("%d control results for %d unsafe attacks", len(results), unsafe)
	}
	for _, r := range results {
		if r.Err != nil || r.Moved == 0 || len(r.Reached) == 0 {
			t.Errorf("%s: without the proxy the fixture moved %d cents (reached: %d entries, err %v); an Unsafe attack must move money",
				r.Attack.ID, r.Moved, len(r.Reached), r.Err)
		}
	}
}

// allowedTools are the reads policies/bankdoor.yaml allows, in the order
// the fixture lists them (the SDK server sorts by name).
var allowedTools = []string{"get_balances", "get_transactions", "list_accounts"}

// reads are allowed calls, with arguments the policy accepts.
func reads() []*mcp.CallToolParams {
	return []*mcp.CallToolParams{
		{Name: "list_accounts"},
		{Name: "get_balances"},
		{Name: "get_balances", Arguments: map[string]any{"account_id": "acc_savings"}},
		{Name: "get_balances", Arguments: map[string]any{"account_id": "acc_nobody"}}, // the bank's own isError
		{Name: "get_transactions", Arguments: map[string]any{"account_id": "acc_checking"}},
		{Name: "get_transactions", Arguments: map[string]any{"account_id": "acc_business", "limit": 3, "since": "2025-05-01"}},
	}
}

// TestE2EAllowedReads checks that reads pass through the proxy unchanged:
// the same results as straight from the fixture, the same arguments in
// the bank's log, and tools/list showing the allowed tools byte for byte.
func TestE2EAllowedReads(t *testing.T) {
	t.Parallel()
	testAllowedReads(t, newWorld(t))
}

func testAllowedReads(t *testing.T, w *world) {
	ctx := testContext(t, 2*time.Minute)
	df, pf := w.fixture(), w.fixture()
	direct := start(t, df.Command(), nil)
	proxied := start(t, w.proxy(pf).Command(), nil)
	for _, p := range reads() {
		want, err := direct.Client().CallTool(ctx, p)
		if err != nil {
			t.Fatalf("direct %s: %v", p.Name, err)
		}
		got, err := proxied.Client().CallTool(ctx, p)
		if err != nil {
			t.Errorf("proxied %s %v: %v", p.Name, p.Arguments, err)
			continue
		}
		if diff := cmp.Diff(marshal(t, want), marshal(t, got)); diff != "" {
			t.Errorf("%s %v: proxied result differs from direct (-direct +proxied):\n%s", p.Name, p.Arguments, diff)
		}
	}
	dst, _ := mcptest.ReadState(df.State)
	pst, _ := mcptest.ReadState(pf.State)
	if dst == nil || pst == nil || !cmp.Equal(logLines(dst), logLines(pst)) {
		t.Errorf("the bank's log differs through the proxy (-direct +proxied):\n%s", cmp.Diff(logLines(dst), logLines(pst)))
	}
	wantDefs := filterDefs(t, rawToolDefs(t, ctx, direct), allowedTools)
	gotDefs := rawToolDefs(t, ctx, proxied)
	if diff := cmp.Diff(wantDefs, gotDefs); diff != "" {
		t.Errorf("tools/list through the proxy is not the allowed tools' definitions byte for byte (-want +got):\n%s", diff)
	}
	checkListed(t, ctx, proxied, allowedTools)
	if names, _ := mcptest.Receipts(w.receipts); len(names) != 0 {
		t.Errorf("allowed reads left receipts %q; the policy says receipts: deny", names)
	}
	t.Run("Pagination", func(t *testing.T) { testPagination(t, w) })
}

// testPagination lists tools one per page: the SDK client walks every
// page through the proxy, which hides the write tools page by page and
// keeps the allowed definitions byte for byte.
func testPagination(t *testing.T, parent *world) {
	w := *parent // same key and policy; its own receipts, as the parent's proxy still holds its own
	w.t, w.receipts = t, filepath.Join(t.TempDir(), "receipts")
	ctx := testContext(t, time.Minute)
	direct := start(t, w.fixture("BANK_FIXTURE_PAGE_SIZE=1").Command(), nil)
	proxied := start(t, w.proxy(w.fixture("BANK_FIXTURE_PAGE_SIZE=1")).Command(), nil)
	checkListed(t, ctx, proxied, allowedTools)
	first := rawToolsList(t, ctx, proxied)
	if first.NextCursor == nil || len(first.Tools) != 1 {
		t.Errorf("first page through the proxy: %d tools, nextCursor %s; want 1 tool and a cursor", len(first.Tools), first.NextCursor)
	}
	want := filterDefs(t, rawToolDefs(t, ctx, direct), allowedTools)
	if diff := cmp.Diff(want, rawToolDefs(t, ctx, proxied)); diff != "" {
		t.Errorf("paginated tools/list through the proxy (-want +got):\n%s", diff)
	}
	if _, err := proxied.Client().CallTool(ctx, &mcp.CallToolParams{Name: "get_transactions",
		Arguments: map[string]any{"account_id": "acc_checking", "limit": 1}}); err != nil {
		t.Errorf("a pinned read, pins listed page by page: %v", err)
	}
}

func marshal(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func logLines(st *mcptest.State) []string {
	if st == nil {
		return nil
	}
	var out []string
	for _, e := range st.Log {
		out = append(out, e.String())
	}
	return out
}

// rawToolDefs returns every tool definition, as raw bytes, over all pages.
func rawToolDefs(t *testing.T, ctx context.Context, s *mcptest.Session) []string {
	t.Helper()
	defs, err := s.ToolDefs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, len(defs))
	for i, d := range defs {
		out[i] = string(d)
	}
	return out
}

// rawToolsList returns the first page of tools/list, sent as a raw frame.
func rawToolsList(t *testing.T, ctx context.Context, s *mcptest.Session) *mcptest.ToolsPage {
	t.Helper()
	page, err := s.ToolsList(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	return page
}

// filterDefs keeps the definitions whose name is in names.
func filterDefs(t *testing.T, defs, names []string) []string {
	t.Helper()
	var out []string
	for _, d := range defs {
		var tool struct{ Name string }
		if err := json.Unmarshal([]byte(d), &tool); err != nil {
			t.Fatal(err)
		}
		if slices.Contains(names, tool.Name) {
			out = append(out, d)
		}
	}
	return out
}

// deniedWith checks that err is a bankdoor denial with rule and that its
// receipt records that rule; it returns the receipt's name.
func deniedWith(t *testing.T, w *world, err error, rule string) string {
	t.Helper()
	var we *jsonrpc.Error
	if !errors.As(err, &we) {
		t.Errorf("want a JSON-RPC error with rule %s, got %v", rule, err)
		return ""
	}
	var data struct{ Rule, Receipt string }
	if json.Unmarshal(we.Data, &data) != nil || data.Rule != rule || !strings.Contains(we.Message, rule) {
		t.Errorf("denied with %q (data %s), want rule %s", we.Message, we.Data, rule)
		return ""
	}
	rc, rerr := mcptest.ReadReceipt(w.receipts, data.Receipt)
	if rerr != nil || rc.Rule != rule {
		t.Errorf("receipt %q of the denial: %v; want one recording %s", data.Receipt, rerr, rule)
	}
	return data.Receipt
}

// TestE2EListChanged: the listchange bank swaps get_balances for a
// sweeping version after the first call and says so; the proxy forwards
// notifications/tools/list_changed, re-checks the pins and denies the
// changed tool before it can run.
func TestE2EListChanged(t *testing.T) {
	t.Parallel()
	testListChanged(t, newWorld(t))
}

func testListChanged(t *testing.T, w *world) {
	ctx := testContext(t, time.Minute)
	changed := make(chan struct{}, 1)
	f := w.fixture("BANK_FIXTURE_VARIANT=listchange")
	s := start(t, w.proxy(f).Command(), &mcptest.Options{Client: &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case changed <- struct{}{}:
			default:
			}
		},
	}})
	bal := &mcp.CallToolParams{Name: "get_balances", Arguments: map[string]any{"account_id": "acc_checking"}}
	if res, err := s.Client().CallTool(ctx, bal); err != nil || res.IsError {
		t.Fatalf("first get_balances, before the rug pull: %v %v", res, err)
	}
	select {
	case <-changed:
	case <-time.After(15 * time.Second):
		t.Fatalf("no notifications/tools/list_changed reached the client within 15s\nstderr:\n%s", s.Stderr())
	}
	before, err := mcptest.ReadState(f.State)
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Client().CallTool(ctx, bal)
	deniedWith(t, w, err, "pin.mismatch")
	after, err := mcptest.ReadState(f.State)
	if err != nil {
		t.Fatal(err)
	}
	if moved := mcptest.Moved(before.Accounts, after.Accounts); moved != 0 || len(after.Log) != len(before.Log) {
		t.Errorf("the changed get_balances reached the bank: moved %d cents, log %v", moved, after.Log[len(before.Log):])
	}
	checkListed(t, ctx, s, []string{"get_transactions", "list_accounts"})
}

// TestE2EServerDies: the bank exits with a call in flight. The call gets
// a clear error, not a hang, and the proxy exits with status 1 saying why.
func TestE2EServerDies(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ctx := testContext(t, time.Minute)
	s, err := mcptest.Start(ctx, w.proxy(w.fixture("BANK_FIXTURE_CRASH_AFTER=1")).Command(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Client().CallTool(ctx, &mcp.CallToolParams{Name: "list_accounts"}); err != nil {
		t.Fatalf("first call: %v", err)
	}
	callCtx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	_, err = s.Client().CallTool(callCtx, &mcp.CallToolParams{Name: "get_balances"})
	var we *jsonrpc.Error
	switch {
	case err == nil:
		t.Error("the call the bank died on got a result")
	case callCtx.Err() != nil:
		t.Errorf("the call the bank died on hung: %v", err)
	case !errors.As(err, &we) || we.Code != -32002 || !strings.Contains(we.Message, "bank server"):
		t.Errorf("the call the bank died on: %v; want error -32002 saying the bank server is gone", err)
	}
	code, err := s.Wait(ctx)
	if err != nil || code != 1 {
		t.Errorf("proxy exit status %d (%v), want 1", code, err)
	}
	if !hasLine(s.Stderr(), "bankdoor", "exit status 3") {
		t.Errorf("proxy stderr does not name the bank's exit (status 3):\n%s", s.Stderr())
	}
}

// hasLine reports whether a line of text starts with prefix and contains sub.
func hasLine(text, prefix, sub string) bool {
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, prefix) && strings.Contains(line, sub) {
			return true
		}
	}
	return false
}

// TestE2EMalformedContinues: after each malformed line the same session
// still serves an allowed read, over the SDK and as a raw frame.
func TestE2EMalformedContinues(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ctx := testContext(t, 2*time.Minute)
	s := start(t, w.proxy(w.fixture()).Command(), nil)
	for _, bad := range []struct{ line, rule string }{
		{`{"jsonrpc":`, "frame.parse"},
		{`}{`, "frame.parse"},
		{"\xff\xfe", "frame.parse"},
		{`[]`, "frame.invalid"},
		{`"just a string"`, "frame.invalid"},
		{`{"jsonrpc":"2.0","id":` + s.NextID() + `,"method":"tools/list","method":"tools/call"}`, "frame.invalid"},
		{`{"jsonrpc":"2.0","id":` + s.NextID() + `,"method":"tools/call","params":{"name":"get_balances","arguments":{"account_id":"a","account_id":"b"}}}`, "args.duplicate"},
		{`{"jsonrpc":"2.0","id":"x","method":"tools/list",` + strings.Repeat(" ", 4<<20) + `}`, "frame.too_large"},
	} {
		resp, err := s.Raw(ctx, []byte(bad.line))
		if err != nil {
			t.Fatalf("%.40q: %v", bad.line, err)
		}
		var msg struct {
			Error *jsonrpc.Error `json:"error"`
		}
		var data struct{ Rule string }
		if json.Unmarshal(resp, &msg) != nil || msg.Error == nil || json.Unmarshal(msg.Error.Data, &data) != nil || data.Rule != bad.rule {
			t.Errorf("%.40q: answer %.300s, want an error with rule %s", bad.line, resp, bad.rule)
		}
		if res, err := s.Client().CallTool(ctx, &mcp.CallToolParams{Name: "list_accounts"}); err != nil || res.IsError {
			t.Fatalf("after %.40q the session no longer serves list_accounts: %v %v\nstderr:\n%s", bad.line, res, err, s.Stderr())
		}
		if page := rawToolsList(t, ctx, s); len(page.Tools) != len(allowedTools) {
			t.Errorf("after %.40q raw tools/list shows %d tools", bad.line, len(page.Tools))
		}
	}
}

// denials makes n receipts by sending denied calls through a proxy.
func (w *world) denials(n int) []string {
	w.t.Helper()
	ctx := testContext(w.t, time.Minute)
	s := start(w.t, w.proxy(w.fixture()).Command(), nil)
	for i := range n {
		_, err := s.Client().CallTool(ctx, &mcp.CallToolParams{Name: fmt.Sprintf("transfer%d", i)})
		deniedWith(w.t, w, err, "name.write_word")
	}
	if err := s.Close(); err != nil {
		w.t.Fatal(err)
	}
	names, err := mcptest.Receipts(w.receipts)
	if err != nil || len(names) != n {
		w.t.Fatalf("%d receipts (%v), want %d", len(names), err, n)
	}
	return names
}

// TestE2EReceiptsTamper drives bankdoor verify against receipts the proxy
// wrote, intact and then changed in every way an insider might try.
func TestE2EReceiptsTamper(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	names := w.denials(5)
	if code, out := w.verify(w.receipts, "--policy", w.policy); code != 0 {
		t.Fatalf("intact receipts: exit status %d, want 0\n%s", code, out)
	}
	other := newWorld(t) // another agent key, same policy
	other.denials(5)

	middle := names[2]
	orig, err := os.ReadFile(filepath.Join(w.receipts, middle))
	if err != nil {
		t.Fatal(err)
	}
	type tamper struct {
		name  string
		apply func(dir string) error
	}
	write := func(name string, b []byte) func(string) error {
		return func(dir string) error { return os.WriteFile(filepath.Join(dir, name), b, 0o644) }
	}
	// A flipped byte at eight places spread over the file, through the
	// command; ledger/receipt's TestTamperEveryByte changes every byte of
	// a receipt in several ways, in-process.
	var cases []tamper
	for i := 0; i < len(orig); i += max(1, len(orig)/8) {
		b := bytes.Clone(orig)
		b[i] ^= 0x01
		cases = append(cases, tamper{fmt.Sprintf("flip byte %d of %s", i, middle), write(middle, b)})
	}
	last := bytes.Clone(orig)
	last[len(last)-1] ^= 0x01
	cases = append(cases,
		tamper{"flip the last byte of " + middle, write(middle, last)},
		tamper{"truncate " + middle, write(middle, orig[:len(orig)-1])},
		tamper{"append a newline to " + middle, write(middle, append(bytes.Clone(orig), '\n'))},
		tamper{"delete " + middle, func(dir string) error { return os.Remove(filepath.Join(dir, middle)) }},
		tamper{"swap " + names[1] + " and " + names[2], func(dir string) error {
			a, b := filepath.Join(dir, names[1]), filepath.Join(dir, names[2])
			ab, _ := os.ReadFile(a)
			bb, _ := os.ReadFile(b)
			return errors.Join(os.WriteFile(a, bb, 0o644), os.WriteFile(b, ab, 0o644))
		}},
		tamper{"replace " + middle + " with another key's receipt of the same seq", func(dir string) error {
			b, err := os.ReadFile(filepath.Join(other.receipts, middle))
			if err != nil {
				return err
			}
			return write(middle, b)(dir)
		}},
		tamper{"rename the last receipt to leave a gap", func(dir string) error {
			return os.Rename(filepath.Join(dir, names[4]), filepath.Join(dir, "000007.json"))
		}},
	)
	for _, c := range cases {
		dir := t.TempDir()
		if err := errors.Join(mcptest.CopyReceipts(w.receipts, dir), c.apply(dir)); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if code, out := w.verify(dir); code != 1 {
			t.Errorf("%s: bankdoor verify exit status %d, want 1\n%s", c.name, code, out)
		}
	}
	t.Logf("%d tampered copies, each refused", len(cases))

	if code, out := runBankdoor(t, w.home, "verify", w.receipts, "--pub", other.pub); code != 1 {
		t.Errorf("verify with another agent's key: exit status %d, want 1\n%s", code, out)
	}
	otherPolicy := filepath.Join(t.TempDir(), "other.yaml")
	b, err := os.ReadFile(w.policy)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(otherPolicy, append(b, "# changed\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out := w.verify(w.receipts, "--policy", otherPolicy); code != 1 {
		t.Errorf("verify against a different policy file: exit status %d, want 1\n%s", code, out)
	}
}
