package main_test

import (
	"context"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bankdoor/bankdoor/internal/mcptest"
)

// TestE2ECancelledCall: through bankdoor proxy, over stdio and --listen,
// the Go SDK client gives up on a get_balances that the fixture (variant
// stall) never answers, and its next call in the session is answered.
// Without the relay ending a cancelled call, the next one waits for ever.
func TestE2ECancelledCall(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	f := w.fixture("BANK_FIXTURE_VARIANT=stall")
	t.Run("stdio", func(t *testing.T) {
		s := start(t, w.proxy(f).Command(), nil)
		cancelThenRead(t, s.Client())
	})
	t.Run("listen", func(t *testing.T) {
		tokens, toks := agentTokens(t)
		p := startListening(t, w, f, "--agent-tokens", tokens)
		s, err := mcptest.DialHTTP(testContext(t, time.Minute), p.URL, toks["alice"])
		if err != nil {
			t.Fatalf("%v\n%s", err, p.Stderr())
		}
		cancelThenRead(t, s.Client())
		if err := s.Close(); err != nil {
			t.Error(err)
		}
		stopListening(t, p)
	})
}

// cancelThenRead calls get_balances with a context that ends first (the
// SDK sends notifications/cancelled), then again, which must be answered.
func cancelThenRead(t *testing.T, cs *mcp.ClientSession) {
	t.Helper()
	params := &mcp.CallToolParams{Name: "get_balances", Arguments: map[string]any{"account_id": "acc_checking"}}
	short, cancel := context.WithTimeout(context.Background(), time.Second)
	_, err := cs.CallTool(short, params)
	cancel()
	if err == nil {
		t.Fatal("the first get_balances was answered; the stall variant never answers it")
	}
	ctx := testContext(t, 30*time.Second)
	res, err := cs.CallTool(ctx, params)
	if err != nil || res.IsError {
		t.Fatalf("get_balances after a cancelled one: %v %v, want an answer", res, err)
	}
}
