package proxy

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// oddResult is an initialize result as a server might write it: spacing,
// member order and escapes that any re-encoding would change.
const oddResult = `{ "protocolVersion" : "2025-06-18","capabilities":{"tools":{"listChanged":true}} ,"serverInfo":{"name":"b\u0061nk","version":"1"}, "z":1.50 }`

// rawServer is a streamable HTTP MCP endpoint written by hand, so that the
// bytes on the wire are the test's: it answers initialize with oddResult,
// accepts notifications, and serves the notification stream with one
// tools/list_changed event, then ends it.
type rawServer struct {
	t       *testing.T
	headers chan http.Header // every request's headers
}

func (s *rawServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	select {
	case s.headers <- r.Header.Clone():
	default:
	}
	switch r.Method {
	case http.MethodGet:
		if r.Header.Get("Mcp-Session-Id") != "sess-1" || r.Header.Get("Mcp-Protocol-Version") != "2025-06-18" {
			http.Error(w, "bad session or version", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, ": a comment\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\n")
		fmt.Fprint(w, "data: \"method\":\"notifications/tools/list_changed\"}\n\n")
		return // the stream ends
	case http.MethodPost:
		body, _ := io.ReadAll(r.Body)
		msg, err := jsonrpc.DecodeMessage(body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		req := msg.(*jsonrpc.Request)
		if !req.IsCall() {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Mcp-Session-Id", "sess-1")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%d,"result":%s}`, req.ID.Raw(), oddResult)
	case http.MethodDelete:
		w.WriteHeader(http.StatusNoContent)
	}
}

func newRawServer(t *testing.T) *rawServer {
	return &rawServer{t: t, headers: make(chan http.Header, 16)}
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func initialize(ctx context.Context, c mcp.Connection) error {
	id, _ := jsonrpc.MakeID(float64(1))
	return c.Write(ctx, &jsonrpc.Request{ID: id, Method: "initialize", Params: []byte(`{"protocolVersion":"2025-06-18"}`)})
}

// TestHTTPRawResultAndNotifications: the result reaches the relay as the
// server's bytes (pins hash them), the notification stream is opened after
// notifications/initialized with the session id and protocol version, its
// message is relayed, and its end ends the session.
func TestHTTPRawResultAndNotifications(t *testing.T) {
	ctx := testCtx(t)
	ts := httptest.NewServer(newRawServer(t))
	defer ts.Close()
	c, err := DialHTTP(ctx, &HTTPServer{URL: ts.URL})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := initialize(ctx, c); err != nil {
		t.Fatal(err)
	}
	msg, err := c.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(msg.(*jsonrpc.Response).Result); got != oddResult {
		t.Errorf("result relayed as %s\nwant the server's bytes %s", got, oddResult)
	}
	if err := c.Write(ctx, &jsonrpc.Request{Method: "notifications/initialized"}); err != nil {
		t.Fatalf("notifications/initialized (opens the notification stream): %v", err)
	}
	msg, err = c.Read(ctx)
	if req, ok := msg.(*jsonrpc.Request); err != nil || !ok || req.Method != "notifications/tools/list_changed" {
		t.Fatalf("read %v, %v; want notifications/tools/list_changed from the notification stream", msg, err)
	}
	_, err = c.Read(ctx)
	if err == nil || !strings.Contains(err.Error(), "notification stream") || !errors.Is(err, io.EOF) {
		t.Errorf("after the notification stream ended, Read: %v; want an error naming the stream", err)
	}
}

// TestHTTPHeaders: configured headers reach the server on every request.
func TestHTTPHeaders(t *testing.T) {
	ctx := testCtx(t)
	rs := newRawServer(t)
	ts := httptest.NewServer(rs)
	defer ts.Close()
	c, err := DialHTTP(ctx, &HTTPServer{URL: ts.URL, Header: http.Header{"Authorization": {"Bearer k"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := initialize(ctx, c); err != nil {
		t.Fatal(err)
	}
	if got := (<-rs.headers).Get("Authorization"); got != "Bearer k" {
		t.Errorf("Authorization at the server: %q, want the configured header", got)
	}
}

// TestHTTPRedirectRefused: a redirect is never followed, so neither the
// credentials nor the call go to another origin.
func TestHTTPRedirectRefused(t *testing.T) {
	ctx := testCtx(t)
	other := newRawServer(t)
	elsewhere := httptest.NewServer(other)
	defer elsewhere.Close()
	ts := httptest.NewServer(http.RedirectHandler(elsewhere.URL, http.StatusTemporaryRedirect))
	defer ts.Close()
	c, err := DialHTTP(ctx, &HTTPServer{URL: ts.URL, Header: http.Header{"Authorization": {"Bearer k"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	err = initialize(ctx, c)
	if err == nil || !strings.Contains(err.Error(), "redirect") {
		t.Errorf("initialize to a redirecting server: %v, want the redirect refused", err)
	}
	select {
	case h := <-other.headers:
		t.Errorf("the redirect was followed; the target got %v", h)
	default:
	}
}

// TestHTTPTLS: a certificate the roots do not vouch for is refused; the
// private CA given as RootCAs makes it work.
func TestHTTPTLS(t *testing.T) {
	ctx := testCtx(t)
	ts := httptest.NewTLSServer(newRawServer(t))
	defer ts.Close()
	c, err := DialHTTP(ctx, &HTTPServer{URL: ts.URL})
	if err != nil {
		t.Fatal(err)
	}
	err = initialize(ctx, c)
	c.Close()
	var uerr x509.UnknownAuthorityError
	if !errors.As(err, &uerr) {
		t.Errorf("initialize to an unknown CA: %v, want x509.UnknownAuthorityError", err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ts.Certificate())
	c, err = DialHTTP(ctx, &HTTPServer{URL: ts.URL, RootCAs: pool})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := initialize(ctx, c); err != nil {
		t.Errorf("initialize with the private CA: %v", err)
	}
}

func TestCheckURL(t *testing.T) {
	for _, u := range []string{"https://bank.example/mcp", "http://127.0.0.1:8080/mcp", "http://[::1]/mcp", "http://localhost/mcp"} {
		if _, err := CheckURL(u); err != nil {
			t.Errorf("CheckURL(%q): %v", u, err)
		}
	}
	for _, u := range []string{"http://bank.example/mcp", "http://10.0.0.1/mcp", "https://u:p@bank.example/mcp", "ftp://bank.example/", "/mcp", "http://127.0.0.1.evil.example/mcp"} {
		if _, err := CheckURL(u); err == nil {
			t.Errorf("CheckURL(%q) = nil, want an error", u)
		}
	}
}

func TestCheckHeader(t *testing.T) {
	if err := CheckHeader("X-Api-Key", "v 1"); err != nil {
		t.Error(err)
	}
	for _, h := range [][2]string{{"Bad Name", "v"}, {"mcp-session-id", "v"}, {"Host", "v"}, {"X-K", "a\r\nX-Evil: 1"}, {"", "v"}} {
		if err := CheckHeader(h[0], h[1]); err == nil {
			t.Errorf("CheckHeader(%q, %q) = nil, want an error", h[0], h[1])
		}
	}
}
