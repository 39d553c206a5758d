package attacks

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bankdoor/bankdoor/internal/mcptest"
	"github.com/bankdoor/bankdoor/proxy/gate"
	"github.com/bankdoor/bankdoor/proxy/policy"
	"github.com/bankdoor/bankdoor/proxy/words"
)

func TestAcknowledgementsCatalogue(t *testing.T) {
	ids := map[string]bool{}
	for _, a := range Catalogue() {
		ids[a.ID] = true
	}
	acks := Acknowledgements()
	if len(acks) < 10 {
		t.Errorf("%d acknowledgement attacks, want at least 10", len(acks))
	}
	for _, a := range acks {
		if ids[a.ID] || !strings.HasPrefix(a.ID, "ack.") {
			t.Errorf("%s: id taken, or not ack.*", a.ID)
		}
		ids[a.ID] = true
		if !slices.Contains(knownRules, a.Rule) || a.Description == "" || a.Raw() {
			t.Errorf("%s: rule %q, description %q, raw %v", a.ID, a.Rule, a.Description, a.Raw())
		}
	}
	if got := Variants(acks); !slices.Equal(got, []string{"", "transfers", "transferschange"}) || len(ForVariant(acks, "")) != 0 {
		t.Errorf("Variants = %q; the acknowledgement attacks need the transfers variants only", got)
	}
}

// pinnedForGate returns p with every tool pinned to a made-up digest, and
// the listing in which every pin matches: the most the server can do to
// help a name past the gate.
func pinnedForGate(p *policy.Policy, server string) map[string]string {
	live := map[string]string{}
	for name, tool := range p.Servers[server].Tools {
		if tool.SchemaSHA256 == "" {
			tool.SchemaSHA256 = strings.Repeat("5", 64)
		}
		tool.DefinitionSHA256 = ""
		live[name] = tool.SchemaSHA256
	}
	return live
}

// TestWriteWordsDenyUnderShippedPolicies: every attack of the catalogue and
// of the acknowledgement attacks that the words must deny is denied by
// check 3 under each shipped policy (policies/*.yaml, with the presets of
// real servers and their acknowledgements) and under AcknowledgePolicy, on
// every server, even when the server lists every allowed tool as pinned.
func TestWriteWordsDenyUnderShippedPolicies(t *testing.T) {
	paths, err := filepath.Glob("../../policies/*.yaml")
	if err != nil || len(paths) < 2 {
		t.Fatalf("shipped policies: %q, %v", paths, err)
	}
	sources := map[string][]byte{"AcknowledgePolicy": []byte(AcknowledgePolicy)}
	for _, path := range paths {
		if sources[path], err = os.ReadFile(path); err != nil {
			t.Fatal(err)
		}
	}
	var wordAttacks []Attack
	for _, a := range append(Catalogue(), Acknowledgements()...) {
		if a.Rule == "name.write_word" && !a.Raw() {
			wordAttacks = append(wordAttacks, a)
		}
	}
	if len(wordAttacks) < 20 {
		t.Fatalf("only %d write-word attacks", len(wordAttacks))
	}
	for name, src := range sources {
		p, err := policy.Parse(name, src)
		if err != nil {
			t.Fatal(err)
		}
		for server := range p.Servers {
			live := pinnedForGate(p, server)
			g := gate.New(p)
			for _, a := range wordAttacks {
				d := g.Decide(gate.Call{Server: server, Tool: a.Tool, Live: live})
				if _, ok := words.Find(a.Tool, p.NeverAllow); !ok {
					// A word only another policy adds (never_allow): the
					// allowlist stops it here.
					if d.Allow {
						t.Errorf("%s, server %s: %s (%q) allowed", name, server, a.ID, a.Tool)
					}
					continue
				}
				if d.Rule != "name.write_word" || d.Check != 3 {
					t.Errorf("%s, server %s: %s (%q) decided %s (%s), want name.write_word", name, server, a.ID, a.Tool, d.Rule, d.Reason)
				}
			}
			// What the agent is shown: a tool whose name has a write word
			// only if the policy acknowledges its words.
			for tool, sum := range live {
				_, hasWord := words.Find(tool, p.NeverAllow)
				if d := g.Listable(server, tool, sum, ""); d.Allow && hasWord && len(p.Servers[server].Tools[tool].Acknowledge) == 0 {
					t.Errorf("%s, server %s: %s is listed", name, server, tool)
				}
			}
		}
	}
}

// TestAcknowledgedE2E sends the acknowledgement attacks through the proxy
// with AcknowledgePolicy, pinned against the transfers variant by bankdoor
// pin --write: each is denied with its rule and a receipt, reaches nothing
// and moves nothing; list_transfers is listed and answered while its
// definition matches, and neither once it changed. The unsafe ones, sent
// straight to the fixture, move money.
func TestAcknowledgedE2E(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	dir := t.TempDir()
	bankdoor, bankServer, err := mcptest.Build(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	home, receipts, policyPath := filepath.Join(dir, "home"), filepath.Join(dir, "receipts"), filepath.Join(dir, "acknowledge.yaml")
	if err := os.WriteFile(policyPath, []byte(AcknowledgePolicy), 0o644); err != nil {
		t.Fatal(err)
	}
	fixture := func(variant string) mcptest.Fixture {
		return mcptest.Fixture{Bin: bankServer, State: filepath.Join(t.TempDir(), "state.json"), Env: []string{"BANK_FIXTURE_VARIANT=" + variant}}
	}
	run := func(want int, env []string, args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(ctx, bankdoor, args...)
		cmd.Env = mcptest.Env(append([]string{"BANKDOOR_HOME=" + home}, env...)...)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != want {
			t.Fatalf("bankdoor %s: %v, want exit status %d\n%s", strings.Join(args, " "), err, want, out.Bytes())
		}
		return out.String()
	}
	run(0, nil, "keygen", "--dir", home)
	run(0, fixture("transfers").Environ(), "pin", "--policy", policyPath, "--server", "bank", "--write", "--", bankServer)
	lint := run(1, nil, "lint", "--policy", policyPath)
	for _, want := range []string{`name.acknowledged: tool "list_transfers" of server "bank" acknowledges the write word(s) "transfers"`,
		`name.write_word: tool "list_transfers_refunds" of server "bank" contains the write word "refunds"`} {
		if !strings.Contains(lint, want) {
			t.Errorf("lint output lacks %q:\n%s", want, lint)
		}
	}

	all := Acknowledgements()
	var results []Result
	for _, v := range Variants(all)[1:] {
		f := fixture(v)
		s, err := mcptest.Start(ctx, mcptest.Proxy{Bin: bankdoor, Policy: policyPath, Server: "bank", Receipts: receipts, Home: home, Fixture: f}.Command(), nil)
		if err != nil {
			t.Fatal(err)
		}
		results = append(results, Run(ctx, Target{Session: s, State: f.State, Receipts: receipts}, ForVariant(all, v))...)
		checkTransfersRead(t, ctx, s, f.State, v == "transfers")
		if err := s.Close(); err != nil {
			t.Errorf("proxy (variant %s): %v\n%s", v, err, s.Stderr())
		}
	}
	t.Logf("acknowledgement attacks through the proxy:\n%s", Table(results))
	for _, r := range results {
		p := r.Problems()
		if r.Receipt != "" {
			if b, err := os.ReadFile(filepath.Join(receipts, r.Receipt)); err != nil {
				p = append(p, err.Error())
			} else if leaks := Leaks(r.Attack, b); len(leaks) > 0 {
				p = append(p, "its receipt holds argument values")
			}
		}
		if len(p) > 0 {
			t.Errorf("%s (%s): %s", r.Attack.ID, r.Attack.Description, strings.Join(p, "; "))
		}
	}

	unsafe := 0
	for _, a := range all {
		if !a.Unsafe {
			continue
		}
		unsafe++
		f := fixture(a.Variant)
		s, err := mcptest.Start(ctx, f.Command(), nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range Control(ctx, Target{Session: s, State: f.State}, []Attack{a}) {
			if r.Moved == 0 || r.Err != nil {
				t.Errorf("control %s: moved %d cents (%v); the attack proves nothing about the gate", a.ID, r.Moved, r.Err)
			}
		}
		if err := s.Close(); err != nil {
			t.Errorf("fixture after %s: %v", a.ID, err)
		}
	}
	if unsafe == 0 {
		t.Error("no acknowledgement attack moves money without the gate")
	}
}

// checkTransfersRead checks what the agent sees of list_transfers through
// the proxy: listed and answered, reaching the bank and moving nothing,
// while the acknowledged definition holds (allowed); absent from the
// listing otherwise.
func checkTransfersRead(t *testing.T, ctx context.Context, s *mcptest.Session, state string, allowed bool) {
	t.Helper()
	var listed []string
	for tool, err := range s.Client().Tools(ctx, nil) {
		if err != nil {
			t.Fatalf("tools/list: %v", err)
		}
		listed = append(listed, tool.Name)
	}
	want := []string{"list_accounts", "get_balances", "get_transactions"}
	if allowed {
		want = append(want, "list_transfers")
	}
	slices.Sort(listed)
	slices.Sort(want)
	if !slices.Equal(listed, want) {
		t.Errorf("tools/list through the proxy = %q, want %q", listed, want)
	}
	if !allowed {
		return
	}
	before, err := mcptest.ReadState(state)
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Client().CallTool(ctx, &mcp.CallToolParams{Name: "list_transfers", Arguments: map[string]any{"account_id": "acc_checking", "limit": 5}})
	if err != nil || res.IsError {
		t.Fatalf("list_transfers through the proxy: %v %+v", err, res)
	}
	after, err := mcptest.ReadState(state)
	if err != nil {
		t.Fatal(err)
	}
	if len(after.Log) != len(before.Log)+1 || mcptest.Moved(before.Accounts, after.Accounts) != 0 {
		t.Errorf("the allowed list_transfers: %d log entries added, %d cents moved; want 1 and 0",
			len(after.Log)-len(before.Log), mcptest.Moved(before.Accounts, after.Accounts))
	}
}
