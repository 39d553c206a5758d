package main_test

// bankdoor init against live servers: the fixture bank, whose draft is the
// shipped policy's allowlist, and the real @stripe/mcp package.

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bankdoor/bankdoor/internal/mcptest"
	"github.com/bankdoor/bankdoor/proxy/policy"
)

// initPolicy runs bankdoor init with args and parses what it prints.
func initPolicy(t *testing.T, env []string, args ...string) (*policy.Policy, string) {
	t.Helper()
	code, stdout, stderr := runBankdoorSplit(t, mcptest.Env(env...), append([]string{"init"}, args...)...)
	if code != 0 {
		t.Fatalf("bankdoor init: exit status %d\n%s", code, stderr)
	}
	p, err := policy.Parse("init.yaml", []byte(stdout))
	if err != nil {
		t.Fatalf("bankdoor init printed a policy that does not parse: %v\n%s", err, stdout)
	}
	return p, stdout
}

// toolsDiff compares two servers' allowlists: names, pins, acknowledgements
// and argument specs, not positions.
func toolsDiff(want, got map[string]*policy.Tool) string {
	return cmp.Diff(want, got, cmpopts.IgnoreFields(policy.Tool{}, "Line", "Column"),
		cmpopts.IgnoreFields(policy.Arg{}, "Re", "Line", "Column"))
}

// TestE2EInitFixture: init against the fixture bank writes, up to comments,
// formatting and never_allow, the shipped read-only policy: the same three
// reads with the same pins and argument specs, and the two writes as
// comments naming their rule. The draft passes lint.
func TestE2EInitFixture(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	f := w.fixture()
	p, out := initPolicy(t, f.Environ(), "--id", "bankdoor-fixture-readonly", "--", f.Bin)
	shipped, err := policy.Load("../../policies/bankdoor.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if d := toolsDiff(shipped.Servers["bank"].Tools, p.Servers["bank"].Tools); d != "" {
		t.Errorf("init's allowlist is not policies/bankdoor.yaml's (-shipped +init):\n%s\n%s", d, out)
	}
	for _, want := range []string{"      # pay_bill: denied (name.write_word): ", "      # transfer: denied (name.write_word): "} {
		if !strings.Contains(out, want) {
			t.Errorf("the draft lacks %q:\n%s", want, out)
		}
	}
	path := filepath.Join(t.TempDir(), "init.yaml")
	if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	w.bankdoor(0, "lint", "--policy", path)
}

// TestE2EInitStripe: init against the real @stripe/mcp lists every one of
// its 22 tools: the reads the shipped preset allows are in the draft with
// the same pins, allowed or (list_payment_intents) commented out with the
// acknowledgement the preset makes; every tool the draft allows is one the
// preset allows; the writes are comments. The draft passes lint: a
// free-text argument the schema leaves unbounded gets a max_length.
func TestE2EInitStripe(t *testing.T) {
	t.Parallel()
	srv := installStripe(t)
	p, out := initPolicy(t, nil, append([]string{"--server", "stripe", "--"}, srv.Argv()...)...)
	preset, err := policy.Load(stripePolicy)
	if err != nil {
		t.Fatal(err)
	}
	allowed, drafted := preset.Servers["stripe"].Tools, p.Servers["stripe"].Tools
	for name, dt := range drafted {
		pt := allowed[name]
		if pt == nil {
			t.Errorf("the draft allows %s, which the preset does not", name)
			continue
		}
		if dt.SchemaSHA256 != pt.SchemaSHA256 || dt.DefinitionSHA256 != pt.DefinitionSHA256 {
			t.Errorf("%s: the draft's pins differ from the preset's", name)
		}
	}
	for name, pt := range allowed {
		if drafted[name] != nil {
			continue
		}
		commented := "      # " + name + ":\n      #   schema_sha256: " + pt.SchemaSHA256 + "\n"
		if !strings.Contains(out, commented) || !strings.Contains(out, "#   acknowledge: ["+strings.Join(pt.Acknowledge, ", ")+"]") {
			t.Errorf("the preset allows %s, but the draft neither allows it nor offers it commented out with acknowledge: %v:\n%s", name, pt.Acknowledge, out)
		}
	}
	if n := strings.Count(out, ": denied ("); n+len(allowed) != 22 {
		t.Errorf("the draft names %d denied tools and the preset allows %d; @stripe/mcp 0.2.5 has 22:\n%s", n, len(allowed), out)
	}
	path := filepath.Join(t.TempDir(), "init.yaml")
	if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, lint := runBankdoor(t, t.TempDir(), "lint", "--policy", path); code != 0 || !strings.Contains(lint, path+": ok (policy stripe-readonly, ") {
		t.Errorf("lint of the draft: exit status %d\n%s", code, lint)
	}
}

// schemaCalls are calls to the schemas variant's tools (see
// fixtures/bank-server) that the tool's own definition forbids, or that
// write: straight to the bank each reaches it and, where moves is set,
// moves money. rule is the deny through a proxy with init's draft.
var schemaCalls = []struct {
	tool, args string // args: JSON
	rule       string
	moves      bool
}{
	{"get_statement", `{"account_id":"../../../etc/passwd"}`, "tool.not_allowed", false},
	{"get_history", `{"account_id":"acc_checking\rTRANSFER acc_checking acc_mallory 10000"}`, "args.pattern", true},
	{"get_history", `{"account_id":"acc_checking\u2028TRANSFER acc_checking acc_mallory 10000"}`, "args.pattern", true},
	{"wiretransfer", `{"from_account":"acc_checking","to_account":"acc_mallory","amount_cents":10000}`, "tool.not_allowed", true},
	{"sendmoney", `{"from_account":"acc_checking","to_account":"acc_mallory","amount_cents":10000}`, "tool.not_allowed", true},
	{"instantpayout", `{"from_account":"acc_checking","to_account":"acc_mallory","amount_cents":10000}`, "tool.not_allowed", true},
	{"get_cash", `{"account_id":"acc_checking","amount_cents":10000}`, "tool.not_allowed", true},
	{"unsplit_transaction", `{"account_id":"acc_checking","transaction_id":"acc_checking_t03"}`, "tool.not_allowed", false},
}

// TestE2EInitSchemas: init's draft for the schemas bank passes lint, and
// a proxy with it in front of that bank forwards a read and denies each
// of schemaCalls before the bank (its log does not grow, no money moves),
// with receipts that verify. The control run sends the same calls
// straight to the bank: each arrives as sent, and money moves.
func TestE2EInitSchemas(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ctx := testContext(t, 2*time.Minute)
	f := w.fixture(variantEnv("schemas")...)
	_, out := initPolicy(t, f.Environ(), "--", f.Bin)
	w.policy = filepath.Join(t.TempDir(), "init.yaml")
	if err := os.WriteFile(w.policy, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	w.bankdoor(0, "lint", "--policy", w.policy)

	s := start(t, w.proxy(f).Command(), nil)
	read := &mcp.CallToolParams{Name: "get_history", Arguments: map[string]any{"account_id": "acc_checking"}}
	if res, err := s.Client().CallTool(ctx, read); err != nil || res.IsError {
		t.Fatalf("get_history of acc_checking through the proxy: %v %v\n%s", res, err, out)
	}
	for _, c := range schemaCalls {
		before := mustReadState(t, f.State)
		_, err := s.Client().CallTool(ctx, &mcp.CallToolParams{Name: c.tool, Arguments: json.RawMessage(c.args)})
		deniedWith(t, w, err, c.rule)
		after := mustReadState(t, f.State)
		if moved := mcptest.Moved(before.Accounts, after.Accounts); moved != 0 || len(after.Log) != len(before.Log) {
			t.Errorf("%s %s through the proxy reached the bank: moved %d cents, log %v", c.tool, c.args, moved, after.Log[len(before.Log):])
		}
	}
	if code, vout := w.verify(w.receipts, "--policy", w.policy); code != 0 {
		t.Errorf("bankdoor verify: exit status %d\n%s", code, vout)
	}

	g := w.fixture(variantEnv("schemas")...)
	direct := start(t, g.Command(), nil)
	for _, c := range schemaCalls {
		before := mustReadState(t, g.State)
		res, err := direct.Client().CallTool(ctx, &mcp.CallToolParams{Name: c.tool, Arguments: json.RawMessage(c.args)})
		after := mustReadState(t, g.State)
		moved := mcptest.Moved(before.Accounts, after.Accounts)
		switch {
		case err != nil || res.IsError:
			t.Errorf("control: %s %s straight to the bank: %v %v", c.tool, c.args, res, err)
		case len(after.Log) != len(before.Log)+1 || !loggedAs(after.Log[len(before.Log)], c.tool, c.args):
			t.Errorf("control: %s %s did not reach the bank as sent: log %v", c.tool, c.args, after.Log[len(before.Log):])
		case c.moves != (moved > 0):
			t.Errorf("control: %s %s straight to the bank moved %d cents", c.tool, c.args, moved)
		}
	}
}

func mustReadState(t *testing.T, path string) *mcptest.State {
	t.Helper()
	st, err := mcptest.ReadState(path)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// loggedAs reports whether the bank's log entry e is a call of tool with
// args, compared as JSON values.
func loggedAs(e mcptest.LogEntry, tool, args string) bool {
	var got, want any
	return e.Tool != nil && *e.Tool == tool && json.Unmarshal(e.Arguments, &got) == nil &&
		json.Unmarshal([]byte(args), &want) == nil && cmp.Equal(want, got)
}

// runBankdoorSplit runs the bankdoor binary with env and returns its exit
// status, stdout and stderr.
func runBankdoorSplit(t *testing.T, env []string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(built.bankdoor, args...)
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if _, isExit := err.(*exec.ExitError); err != nil && !isExit {
		t.Fatalf("running bankdoor %s: %v", strings.Join(args, " "), err)
	}
	return cmd.ProcessState.ExitCode(), stdout.String(), stderr.String()
}
