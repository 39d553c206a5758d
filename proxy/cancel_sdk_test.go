package proxy_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bankdoor/bankdoor/proxy"
	"github.com/bankdoor/bankdoor/proxy/gate"
	"github.com/bankdoor/bankdoor/proxy/httpserve"
)

// stuckBank is a bank whose first get_balances is never answered (its
// handler waits, whatever its context says, until the test ends), as a
// server may do with a request its client cancelled; the later ones are.
func stuckBank(t *testing.T) *mcp.Server {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	var calls atomic.Int64
	s := mcp.NewServer(&mcp.Implementation{Name: "bank", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "get_balances", Description: "Balances of an account."},
		func(ctx context.Context, req *mcp.CallToolRequest, in struct {
			Account string `json:"account,omitempty"`
		}) (*mcp.CallToolResult, any, error) {
			if calls.Add(1) == 1 {
				<-release
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "42.00"}}}, nil, nil
		})
	return s
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
// never answers (its context ends: the SDK sends notifications/cancelled),
// then call it again, which must be answered within ctx.
func cancelThenCall(t *testing.T, ctx context.Context, cs *mcp.ClientSession) {
	t.Helper()
	params := &mcp.CallToolParams{Name: "get_balances", Arguments: map[string]any{"account": "acc_1"}}
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
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
	r := relayTo(t, ctx, stuckBank(t))
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx, inR, outW); outW.Close() }()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil).Connect(ctx, &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		t.Fatal(err)
	}
	cancelThenCall(t, ctx, cs)
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
	bank := stuckBank(t)
	tokens, err := httpserve.ParseTokens("cancel", []byte("agent "+loadToken))
	if err != nil {
		t.Fatal(err)
	}
	srv := httpserve.New(httpserve.Config{Tokens: tokens, Start: func(ctx context.Context, agent string, side proxy.AgentSide) error {
		return relayTo(t, ctx, bank).RunAgent(ctx, side)
	}})
	defer srv.Close()
	ts := httptest.NewServer(srv)
	defer ts.Close()
	hs := &proxy.HTTPServer{URL: ts.URL, Header: http.Header{"Authorization": {"Bearer " + loadToken}}}
	client := hs.Client()
	defer client.CloseIdleConnections()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: ts.URL, HTTPClient: client, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	cancelThenCall(t, ctx, cs)
}
