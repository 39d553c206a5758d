package main_test

import (
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bankdoor/bankdoor/internal/attacks"
	"github.com/bankdoor/bankdoor/internal/mcptest"
)

// TestRugPullMatrix runs the rug-pull matrix of internal/attacks through
// the built proxy: the fixture bank changes get_balances (and starts
// sweeping money) before answering each call and between the pages of
// the proxy's listings, notifying or not; raw agents of every protocol
// version call it, sequentially and pipelined, over stdio, --url and
// --listen. No changed tool is ever called (the bank's log), no money
// moves, and every refusal is pin.mismatch with a receipt that verifies.
func TestRugPullMatrix(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	tokens, toks := agentTokens(t)
	env := attacks.RugPullEnv{Bankdoor: built.bankdoor, BankServer: built.bankServer, Policy: w.policy, Home: w.home,
		Tokens: tokens, Agent: "alice", Token: toks["alice"]}
	run := func(t *testing.T, c attacks.RugPullCase) {
		ctx := testContext(t, 2*time.Minute)
		res := attacks.RunRugPull(ctx, env, c, t.TempDir())
		for _, p := range res.Problems {
			t.Error(p)
		}
		if t.Failed() {
			t.Logf("stderr:\n%s", res.Stderr)
		}
	}
	cases := attacks.RugPullCases()
	// The first --listen session creates the keys the others share (the
	// embedded ledger's log key, alice's signing key): two proxies that
	// both find them missing would race to create them.
	first := slices.IndexFunc(cases, func(c attacks.RugPullCase) bool { return c.Transport == "listen" })
	t.Run(cases[first].Name(), func(t *testing.T) { run(t, cases[first]) })
	sem := make(chan struct{}, 6) // sessions at once: each is one or two processes, mostly waiting
	var wg sync.WaitGroup
	for _, c := range slices.Delete(cases, first, first+1) {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			t.Run(c.Name(), func(t *testing.T) { run(t, c) })
		})
	}
	wg.Wait()
}

// TestE2EURLStreamOpensAtInitialize: over --url the notification stream is
// the proxy's business, open once initialize is answered: an agent that
// never sends notifications/initialized still hears of a list change.
func TestE2EURLStreamOpensAtInitialize(t *testing.T) {
	t.Parallel()
	w := newHTTPWorld(t)
	ctx := testContext(t, time.Minute)
	a, err := mcptest.StartStdioAgent(w.proxy(w.fixture("BANK_FIXTURE_VARIANT=listchange")).Command())
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	init := `{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	if ans, err := mcptest.Request(ctx, a, "init", []byte(init)); err != nil || !strings.Contains(string(ans), `"result"`) {
		t.Fatalf("initialize: %s %v", ans, err)
	}
	call := `{"jsonrpc":"2.0","id":"c1","method":"tools/call","params":{"name":"list_accounts","arguments":{}}}`
	if ans, err := mcptest.Request(ctx, a, "c1", []byte(call)); err != nil || !strings.Contains(string(ans), `"result"`) {
		t.Fatalf("list_accounts: %s %v", ans, err)
	}
	select {
	case m := <-a.Notes:
		if m != "notifications/tools/list_changed" {
			t.Errorf("the agent got %s, want notifications/tools/list_changed", m)
		}
	case <-ctx.Done():
		t.Fatalf("no notification reached the agent; stderr:\n%s", a.Stderr())
	}
}
