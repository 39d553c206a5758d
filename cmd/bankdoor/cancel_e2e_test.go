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
		cancelThenRead(t, s.Client(), f)
	})
	t.Run("listen", func(t *testing.T) {
		tokens, toks := agentTokens(t)
		p := startListening(t, w, f, "--agent-tokens", tokens)
		s, err := mcptest.DialHTTP(testContext(t, time.Minute), p.URL, toks["alice"])
		if err != nil {
			t.Fatalf("%v\n%s", err, p.Stderr())
		}
		cancelThenRead(t, s.Client(), f)
		if err := s.Close(); err != nil {
			t.Error(err)
		}
		stopListening(t, p)
	})
}

// cancelThenRead calls get_balances and gives up on it once it has reached
// the bank (the SDK sends notifications/cancelled), then calls it again,
// which must be answered.
func cancelThenRead(t *testing.T, cs *mcp.ClientSession, f mcptest.Fixture) {
	t.Helper()
	params := &mcp.CallToolParams{Name: "get_balances", Arguments: map[string]any{"account_id": "acc_checking"}}
	before := logLength(t, f)
	short, cancel := context.WithCancel(testContext(t, 30*time.Second))
	go func() {
		defer cancel()
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for logLength(t, f) == before {
			select {
			case <-short.Done():
				return
			case <-tick.C:
			}
		}
	}()
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

// logLength is the number of entries in the fixture bank's log.
func logLength(t *testing.T, f mcptest.Fixture) int {
	st, err := mcptest.ReadState(f.State)
	if err != nil {
		t.Error(err)
		return 0
	}
	return len(st.Log)
}
