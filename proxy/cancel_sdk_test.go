package proxy_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bankdoor/bankdoor/proxy"
	"github.com/bankdoor/bankdoor/proxy/gate"
	"github.com/bankdoor/bankdoor/proxy/httpserve"
)

// stuckBankEntered is a bank whose first get_balances is never answered
// (its handler waits, whatever its context says, until the test ends), as
// a server may do with a request its client cancelled; the later ones
// are. The channel is closed when that first call has arrived.
func stuckBankEntered(t *testing.T) (*mcp.Server, <-chan struct{}) {
	release, entered := make(chan struct{}), make(chan struct{})
	t.Cleanup(func() { close(release) })
	var calls atomic.Int64
	s := mcp.NewServer(&mcp.Implementation{Name: "bank", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "get_balances", Description: "Balances of an account."},
		func(ctx context.Context, req *mcp.CallToolRequest, in struct {
			Account string `json:"account,omitempty"`
		}) (*mcp.CallToolResult, any, error) {
			if calls.Add(1) == 1 {
				close(entered)
				<-release
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "42.00"}}}, nil, nil
		})
	return s, entered
}

// relayTo returns a relay of the policy pinning bank's get_balances, to a
// new session of bank.
func relayTo(t *testing.T, ctx context.Context, bank *mcp.Server) *proxy.Relay {
	pol := proxy.BankPolicy(t, ctx, bank)
	ct, st := mcp.NewInMemoryTransports()
	if _, err := bank.Connect(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
	down, err := ct.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return proxy.New(proxy.Config{Policy: pol, Server: "bank", Gate: gate.New(pol), Recorder: &proxy.SliceRecorder{}}, down)
}

// cancelThenCall has the SDK client give up on a get_balances the bank
// never answers, once it has reached the bank (entered; its context ends:
// the SDK sends notifications/cancelled), then call it again, which must
// be answered within ctx.
func cancelThenCall(t *testing.T, ctx context.Context, cs *mcp.ClientSession, entered <-chan struct{}) {
	t.Helper()
	params := &mcp.CallToolParams{Name: "get_balances", Arguments: map[string]any{"account": "acc_1"}}
	short, cancel := context.WithCancel(ctx)
	go func() {
		defer cancel()
		select {
		case <-entered:
		case <-short.Done():
		}
	}()
	_, err := cs.CallTool(short, params)
	cancel()
	if err == nil {
		t.Fatal("the first get_balances was answered; the bank should never answer it")
	}
	res, err := cs.CallTool(ctx, params)
	if err != nil || res.IsError {
		t.Fatalf("get_balances after a cancelled one: %v %v, want an answer", res, err)
	}
}

// TestSDKCancelOverStdio: through the relay over stdio, a call the Go SDK
// client cancels does not block the next.
func TestSDKCancelOverStdio(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	bank, entered := stuckBankEntered(t)
	r := relayTo(t, ctx, bank)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx, inR, outW); outW.Close() }()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil).Connect(ctx, &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		t.Fatal(err)
	}
	cancelThenCall(t, ctx, cs, entered)
	cs.Close()
	if err := <-done; err != nil {
		t.Errorf("Run: %v", err)
	}
}

// TestSDKCancelOverHTTP is TestSDKCancelOverStdio through the gateway
// (httpserve), with the SDK's streamable HTTP client.
func TestSDKCancelOverHTTP(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	bank, entered := stuckBankEntered(t)
	cs, _ := gatewaySession(t, ctx, bank)
	cancelThenCall(t, ctx, cs, entered)
}

// TestAbortedPOSTCancels: over the gateway, a POST of a tools/call whose
// client goes away before the answer (no notifications/cancelled) cancels
// the call, so the session's next call is not blocked.
func TestAbortedPOSTCancels(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	bank, entered := stuckBankEntered(t)
	cs, url := gatewaySession(t, ctx, bank)
	post, abort := context.WithCancel(ctx)
	body := `{"jsonrpc":"2.0","id":"raw-1","method":"tools/call","params":{"name":"get_balances","arguments":{"account":"acc_1"}}}`
	req, err := http.NewRequestWithContext(post, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = http.Header{"Authorization": {"Bearer " + loadToken}, "Content-Type": {"application/json"},
		"Accept": {"application/json, text/event-stream"}, "Mcp-Session-Id": {cs.ID()}, "Mcp-Protocol-Version": {"2025-11-25"}}
	done := make(chan error, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	select {
	case <-entered:
	case <-ctx.Done():
		t.Fatal("the raw tools/call never reached the bank")
	}
	abort()
	<-done
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "get_balances", Arguments: map[string]any{"account": "acc_1"}})
	if err != nil || res.IsError {
		t.Fatalf("get_balances after an aborted POST: %v %v, want an answer", res, err)
	}
}

// gatewaySession serves relays to bank through the gateway (httpserve)
// and returns an SDK client's session with it, and its URL.
func gatewaySession(t *testing.T, ctx context.Context, bank *mcp.Server) (*mcp.ClientSession, string) {
	tokens, err := httpserve.ParseTokens("cancel", []byte("agent "+loadToken))
	if err != nil {
		t.Fatal(err)
	}
	srv := httpserve.New(httpserve.Config{Tokens: tokens, Start: func(ctx context.Context, agent string, side proxy.AgentSide) error {
		return relayTo(t, ctx, bank).RunAgent(ctx, side)
	}})
	ts := httptest.NewServer(srv)
	hs := &proxy.HTTPServer{URL: ts.URL, Header: http.Header{"Authorization": {"Bearer " + loadToken}}}
	client := hs.Client()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: ts.URL, HTTPClient: client, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cs.Close()
		client.CloseIdleConnections()
		ts.Close()
		srv.Close()
	})
	return cs, ts.URL
}
