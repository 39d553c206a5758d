package httpserve

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bankdoor/bankdoor/proxy"
	"github.com/bankdoor/bankdoor/proxy/gate"
	"github.com/bankdoor/bankdoor/proxy/policy"
)

// memRecorder keeps the relay's events and names them as the receipt
// recorder does.
type memRecorder struct {
	mu     sync.Mutex
	events []proxy.Event
}

func (m *memRecorder) Record(ev proxy.Event) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.events = append(m.events, ev)
	return fmt.Sprintf("%06d.json", len(m.events)), nil
}

func (m *memRecorder) rules() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var rs []string
	for _, ev := range m.events {
		rs = append(rs, ev.Decision+" "+ev.Rule)
	}
	return rs
}

// bankServer is an MCP server with a transfer tool that logs every message
// it receives.
type bankServer struct {
	srv     *mcp.Server
	mu      sync.Mutex
	methods []string
}

func newBankServer() *bankServer {
	b := &bankServer{srv: mcp.NewServer(&mcp.Implementation{Name: "bank", Version: "1"}, nil)}
	mcp.AddTool(b.srv, &mcp.Tool{Name: "transfer", Description: "Moves money."},
		func(context.Context, *mcp.CallToolRequest, map[string]any) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "moved"}}}, nil, nil
		})
	b.srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			b.mu.Lock()
			b.methods = append(b.methods, method)
			b.mu.Unlock()
			return next(ctx, method, req)
		}
	})
	return b
}

func (b *bankServer) received() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.methods)
}

// newRelayServer serves agents with real relays (default-deny policy,
// the gate, rec) in front of bank, over in-memory bank sessions.
func newRelayServer(t *testing.T, bank *bankServer, rec proxy.Recorder, maxBody int64) *httptest.Server {
	t.Helper()
	return newPolicyServer(t, bank.srv, "version: 1\nid: httpserve-test\ndefault: deny\nservers:\n  bank:\n    tools: {}\n", rec, maxBody)
}

// newPolicyServer serves agents with real relays (policy y, the gate,
// rec) in front of bank, over in-memory bank sessions.
func newPolicyServer(t *testing.T, bank *mcp.Server, y string, rec proxy.Recorder, maxBody int64) *httptest.Server {
	t.Helper()
	pol, err := policy.Parse("httpserve-test.yaml", []byte(y))
	if err != nil {
		t.Fatal(err)
	}
	tokens, err := ParseTokens("test", []byte("alice "+tokenA))
	if err != nil {
		t.Fatal(err)
	}
	s := New(Config{Tokens: tokens, MaxBody: maxBody, MaxRequests: 64 /* TestUnreadableBodies sends 21 at once */, Start: func(ctx context.Context, agent string, side proxy.AgentSide) error {
		ct, st := mcp.NewInMemoryTransports()
		if _, err := bank.Connect(ctx, st, nil); err != nil {
			return err
		}
		down, err := ct.Connect(ctx)
		if err != nil {
			return err
		}
		r := proxy.New(proxy.Config{Policy: pol, Server: "bank", Gate: gate.New(pol), Recorder: rec}, down)
		return r.RunAgent(ctx, side)
	}})
	ts := httptest.NewServer(s)
	t.Cleanup(func() { ts.Close(); s.Close() })
	return ts
}

// TestUnreadableBodies: within a session, a body the relay cannot read as
// one message, or one too large, reaches the session's relay, whose frame
// checks deny it with a receipt; the refusal (400, 413) carries the
// relay's JSON-RPC error with id null, naming the rule and the receipt.
// Sent all at once, each answer reaches the request that sent its body.
// Nothing reaches the bank. Without a session the refusal is text and no
// receipt is written.
func TestUnreadableBodies(t *testing.T) {
	bank := newBankServer()
	rec := &memRecorder{}
	ts := newRelayServer(t, bank, rec, 4096)
	transfer := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"transfer","arguments":{"amount_cents":100000}}}`
	resp, body := do(t, ts, req{method: "POST", token: tokenA, ctype: "application/json",
		body: `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`})
	sid := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != 200 || sid == "" {
		t.Fatalf("initialize: %s %q", resp.Status, body)
	}
	if resp, body := do(t, ts, req{method: "POST", token: tokenA, session: sid, ctype: "application/json", body: `{"jsonrpc":"2.0","method":"notifications/initialized"}`}); resp.StatusCode != 202 {
		t.Fatalf("notifications/initialized: %s %q", resp.Status, body)
	}
	cases := []struct {
		name, body string
		status     int
		rule, why  string // the rule and a word of the reason, which tell the answers apart
	}{
		{"not JSON", `{"jsonrpc":`, 400, "frame.parse", "not valid JSON"},
		{"trailing garbage", transfer + ` x`, 400, "frame.parse", "not valid JSON"},
		{"batch", "[" + transfer + "]", 400, "frame.invalid", "batches"},
		{"duplicate method", `{"jsonrpc":"2.0","id":8,"method":"tools/list","method":"tools/call","params":{"name":"transfer"}}`, 400, "frame.invalid", `"method" twice`},
		{"jsonrpc 1.0", `{"jsonrpc":"1.0","id":9,"method":"tools/call","params":{"name":"transfer"}}`, 400, "frame.invalid", `"jsonrpc" must be`},
		{"id null", `{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"transfer"}}`, 400, "frame.invalid", `"id" must be`},
		{"too large", `{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"transfer","arguments":{"memo":"` + strings.Repeat("A", 5000) + `"}}}`, 413, "frame.too_large", "longer than 4096"},
	}
	const rounds = 3
	var wg sync.WaitGroup
	receipts := make(chan string, rounds*len(cases))
	for range rounds {
		for _, c := range cases {
			wg.Go(func() {
				resp, body := do(t, ts, req{method: "POST", token: tokenA, session: sid, ctype: "application/json", body: c.body})
				var answer struct {
					ID    json.RawMessage `json:"id"`
					Error struct {
						Code int `json:"code"`
						Data struct{ Rule, Reason, Receipt string }
					} `json:"error"`
				}
				err := json.Unmarshal([]byte(body), &answer)
				d := answer.Error.Data
				if resp.StatusCode != c.status || resp.Header.Get("Content-Type") != "application/json" || err != nil ||
					string(answer.ID) != "null" || d.Rule != c.rule || !strings.Contains(d.Reason, c.why) || d.Receipt == "" {
					t.Errorf("%s: %s %s %q; want %d with a JSON-RPC error, id null, rule %s, a reason with %q, a receipt",
						c.name, resp.Status, resp.Header.Get("Content-Type"), body, c.status, c.rule, c.why)
				}
				receipts <- d.Receipt
			})
		}
	}
	wg.Wait()
	close(receipts)
	seen := map[string]bool{}
	for r := range receipts {
		if seen[r] {
			t.Errorf("receipt %s was named in two answers", r)
		}
		seen[r] = true
	}
	if got := rec.rules(); len(got) != rounds*len(cases) || slices.ContainsFunc(got, func(r string) bool { return !strings.HasPrefix(r, "deny frame.") }) {
		t.Errorf("receipts %q; want %d frame denials", got, rounds*len(cases))
	}
	for _, c := range cases[:3] {
		resp, body := do(t, ts, req{method: "POST", token: tokenA, ctype: "application/json", body: c.body})
		if resp.StatusCode != c.status || !strings.HasPrefix(body, "bankdoor: ") {
			t.Errorf("%s without a session: %s %q; want %d and a text refusal", c.name, resp.Status, body, c.status)
		}
	}
	if n := len(rec.rules()); n != rounds*len(cases) {
		t.Errorf("%d receipts after the bodies without a session, want still %d", n, rounds*len(cases))
	}
	// A ping goes through after everything above: a body that slipped
	// through would have reached the bank before it.
	if resp, body := do(t, ts, req{method: "POST", token: tokenA, session: sid, ctype: "application/json", body: `{"jsonrpc":"2.0","id":"p","method":"ping"}`}); resp.StatusCode != 200 {
		t.Fatalf("ping: %s %q", resp.Status, body)
	}
	if got := bank.received(); !slices.Equal(got, []string{"initialize", "notifications/initialized", "ping"}) {
		t.Errorf("the bank received %q; want the handshake and the ping only", got)
	}
}
