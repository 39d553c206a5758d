package httpserve

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bankdoor/bankdoor/internal/jsonobj"
	"github.com/bankdoor/bankdoor/proxy"
)

const (
	tokenA = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	tokenB = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
)

// echo is a Start that stands in for a relay: it records every frame per
// agent and answers each request with an empty result.
type echo struct {
	mu     sync.Mutex
	frames map[string][]string
}

func (e *echo) start(ctx context.Context, agent string, side proxy.AgentSide) error {
	for {
		msg, err := side.ReadFrame()
		if err == io.EOF {
			return nil
		}
		e.mu.Lock()
		e.frames[agent] = append(e.frames[agent], string(msg))
		e.mu.Unlock()
		obj, _ := jsonobj.ParseLenient(msg)
		if id := obj.Get("id"); id != nil && obj.Get("method") != nil {
			side.WriteFrame([]byte(`{"jsonrpc":"2.0","id":` + string(id) + `,"result":{}}`))
		}
		if m, _ := jsonobj.String(obj.Get("method")); m == "ping/notify" {
			side.WriteFrame([]byte("{\"jsonrpc\":\"2.0\",\n\"method\":\"notifications/tools/list_changed\"}"))
		}
	}
}

func (e *echo) count() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	for _, f := range e.frames {
		n += len(f)
	}
	return n
}

func newTestServer(t *testing.T, idle time.Duration) (*httptest.Server, *echo) {
	t.Helper()
	e := &echo{frames: map[string][]string{}}
	s := New(Config{Tokens: testTokens(t), Origins: []string{"http://127.0.0.1"}, MaxBody: 1024, IdleTimeout: idle, Start: e.start})
	ts := httptest.NewServer(s)
	t.Cleanup(func() { ts.Close(); s.Close() })
	return ts, e
}

// testTokens gives tokenA to alice and tokenB to bob.
func testTokens(t *testing.T) Tokens {
	t.Helper()
	tokens, err := ParseTokens("test", []byte("alice "+tokenA+"\nbob "+tokenB+"\n"))
	if err != nil {
		t.Fatal(err)
	}
	return tokens
}

// req is a request to send; authz, if set, is the Authorization header
// instead of "Bearer " + token.
type req struct {
	method, token, authz, session, ctype, origin, accept, body string
}

func do(t *testing.T, ts *httptest.Server, r req) (*http.Response, string) {
	t.Helper()
	resp, body, err := doWith(ts.Client(), ts.URL, r)
	if err != nil {
		t.Fatal(err)
	}
	return resp, body
}

// doWith sends r to url with client; the body of a response that opens
// a stream is left to the caller.
func doWith(client *http.Client, url string, r req) (*http.Response, string, error) {
	hr, err := http.NewRequest(r.method, url, strings.NewReader(r.body))
	if err != nil {
		return nil, "", err
	}
	set := func(k, v string) {
		if v != "" {
			hr.Header.Set(k, v)
		}
	}
	if r.token != "" {
		set("Authorization", "Bearer "+r.token)
	}
	set("Authorization", r.authz)
	set("Mcp-Session-Id", r.session)
	set("Content-Type", r.ctype)
	set("Origin", r.origin)
	set("Accept", r.accept)
	resp, err := client.Do(hr)
	if err != nil {
		return nil, "", err
	}
	if r.accept == "text/event-stream" && resp.StatusCode == http.StatusOK {
		return resp, "", nil
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(b), err
}

const initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`

func initialize(t *testing.T, ts *httptest.Server, token string) string {
	t.Helper()
	resp, body := do(t, ts, req{method: "POST", token: token, ctype: "application/json", body: initBody})
	sid := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != 200 || sid == "" || body != `{"jsonrpc":"2.0","id":1,"result":{}}` {
		t.Fatalf("initialize: %s %q session %q", resp.Status, body, sid)
	}
	return sid
}

// TestRefusals: each kind of bad request gets its status and a message
// saying what was wrong, and no frame reaches the relay.
func TestRefusals(t *testing.T) {
	ts, e := newTestServer(t, time.Minute)
	sidA := initialize(t, ts, tokenA)
	call := `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
	for _, tt := range []struct {
		name   string
		r      req
		status int
		msg    string
	}{
		{"wrong Origin", req{method: "POST", token: tokenA, session: sidA, ctype: "application/json", origin: "http://evil.example", body: call}, 403, `Origin "http://evil.example" is not allowed`},
		{"no token", req{method: "POST", session: sidA, ctype: "application/json", body: call}, 401, "missing bearer token"},
		{"bad token", req{method: "POST", token: "nope", session: sidA, ctype: "application/json", body: call}, 401, "unknown bearer token"},
		{"wrong content type", req{method: "POST", token: tokenA, session: sidA, ctype: "text/plain", body: call}, 415, `Content-Type "text/plain" is not application/json`},
		// Within a session these three go to the relay (TestUnreadableBodies).
		{"oversized body, no session", req{method: "POST", token: tokenA, ctype: "application/json", body: `{"x":"` + strings.Repeat("a", 2000) + `"}`}, 413, "body is longer than 1024 bytes"},
		{"not JSON, unknown session", req{method: "POST", token: tokenA, session: "feed", ctype: "application/json", body: `{"jsonrpc":`}, 400, "not one JSON-RPC message"},
		{"batch, another agent's session", req{method: "POST", token: tokenB, session: sidA, ctype: "application/json", body: "[" + call + "]"}, 400, "JSON-RPC batches are not relayed"},
		{"missing session id", req{method: "POST", token: tokenA, ctype: "application/json", body: call}, 400, "missing Mcp-Session-Id header"},
		{"unknown session id", req{method: "POST", token: tokenA, session: "feed", ctype: "application/json", body: call}, 404, "unknown session id"},
		{"another agent's session", req{method: "POST", token: tokenB, session: sidA, ctype: "application/json", body: call}, 404, "unknown session id"},
		{"initialize twice", req{method: "POST", token: tokenA, session: sidA, ctype: "application/json", body: initBody}, 400, "already initialized"},
		{"PUT", req{method: "PUT", token: tokenA, session: sidA}, 405, "method PUT is not served"},
		{"GET without Accept", req{method: "GET", token: tokenA, session: sidA}, 406, "Accept: text/event-stream"},
	} {
		resp, body := do(t, ts, tt.r)
		if resp.StatusCode != tt.status || !strings.HasPrefix(body, "bankdoor: ") || !strings.Contains(body, tt.msg) {
			t.Errorf("%s: %s %q; want %d and a message with %q", tt.name, resp.Status, body, tt.status, tt.msg)
		}
	}
	if n := e.count(); n != 1 {
		t.Errorf("%d frames reached the relay, want only the initialize: %v", n, e.frames)
	}
}

// TestSession: requests are answered on their POST, notifications get
// 202, server messages go to the GET stream (multi-line messages as
// several data lines), and DELETE ends the session.
func TestSession(t *testing.T) {
	ts, e := newTestServer(t, time.Minute)
	sid := initialize(t, ts, tokenA)
	post := func(body string) (*http.Response, string) {
		return do(t, ts, req{method: "POST", token: tokenA, session: sid, ctype: "application/json; charset=utf-8", origin: "http://127.0.0.1", body: body})
	}
	if resp, body := post(`{"jsonrpc":"2.0","id":"x","method":"tools/list"}`); resp.StatusCode != 200 || body != `{"jsonrpc":"2.0","id":"x","result":{}}` {
		t.Errorf("tools/list: %s %q", resp.Status, body)
	}
	stream, _ := do(t, ts, req{method: "GET", token: tokenA, session: sid, accept: "text/event-stream"})
	defer stream.Body.Close()
	if resp, _ := do(t, ts, req{method: "GET", token: tokenA, session: sid, accept: "text/event-stream"}); resp.StatusCode != 409 {
		t.Errorf("a second stream: %s, want 409", resp.Status)
	}
	if resp, body := post(`{"jsonrpc":"2.0","method":"ping/notify"}`); resp.StatusCode != 202 || body != "" {
		t.Errorf("a notification: %s %q, want 202 and no body", resp.Status, body)
	}
	sc := bufio.NewScanner(stream.Body)
	var event []string
	for sc.Scan() && sc.Text() != "" {
		event = append(event, sc.Text())
	}
	// The raw LF between the message's tokens is written as a space: an
	// event's data is one line (proxy.OneLine).
	want := []string{"event: message", `data: {"jsonrpc":"2.0", "method":"notifications/tools/list_changed"}`}
	if fmt.Sprint(event) != fmt.Sprint(want) {
		t.Errorf("stream event %q, want %q", event, want)
	}
	if resp, _ := do(t, ts, req{method: "DELETE", token: tokenA, session: sid}); resp.StatusCode != 204 {
		t.Errorf("DELETE: %s, want 204", resp.Status)
	}
	if resp, _ := post(`{"jsonrpc":"2.0","id":3,"method":"tools/list"}`); resp.StatusCode != 404 {
		t.Errorf("after DELETE: %s, want 404", resp.Status)
	}
	if n := e.count(); n != 3 {
		t.Errorf("%d frames reached the relay, want 3", n)
	}
}

// TestIdleSession: a session idle for the idle timeout is closed, and
// its id is unknown after; a session with its GET stream open is not idle,
// and outlives a later one that idles out.
func TestIdleSession(t *testing.T) {
	ts, s, _ := newLimitServer(t, Config{IdleTimeout: 20 * time.Millisecond})
	streaming := initialize(t, ts, tokenA)
	openStream(t, ts, tokenA, streaming)
	quiet := initialize(t, ts, tokenA)
	deadline := time.Now().Add(5 * time.Second)
	for s.isOpen(quiet) {
		if time.Now().After(deadline) {
			t.Fatalf("the idle session is still open after 5s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if resp, body := do(t, ts, req{method: "DELETE", token: tokenA, session: quiet}); resp.StatusCode != 404 || !strings.Contains(body, "idle too long") {
		t.Errorf("the idled-out session: %s %q, want 404 naming idling", resp.Status, body)
	}
	if st := ping(t, ts, tokenA, streaming); st != 200 {
		t.Errorf("the session with a stream open, after a later one idled out: %d, want 200", st)
	}
}

// isOpen reports whether session id is in the table and not closing; it
// does not touch the session.
func (s *Server) isOpen(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	ss := s.sessions[id]
	return ss != nil && !ss.isClosing()
}

func TestLoadTokens(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good", "# c\nalice "+tokenA+"\n\nbob "+tokenB+"\n", 0o600)
	tk, err := LoadTokens(good)
	if err != nil {
		t.Fatal(err)
	}
	if a, ok := tk.Agent(tokenB); !ok || a != "bob" {
		t.Errorf("Agent(tokenB) = %q, %v", a, ok)
	}
	if _, ok := tk.Agent(tokenA[1:]); ok {
		t.Errorf("a prefix of a token authenticates")
	}
	for _, tt := range []struct{ name, text, want string }{
		{"short", "alice short\n", "at least 32"},
		{"dup", "alice " + tokenA + "\nbob " + tokenA + "\n", "already given"},
		{"name", "Alice/.. " + tokenA + "\n", "name \"Alice/..\""},
		{"fields", "alice\n", "want \"NAME TOKEN\""},
		{"quote", "alice " + tokenA + "\"\n", "token holds '\"'"},
		{"empty", "# none\n", "no tokens"},
	} {
		_, err := LoadTokens(write(tt.name, tt.text, 0o600))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want an error with %q", tt.name, err, tt.want)
		}
	}
	if _, err := LoadTokens(write("open", "alice "+tokenA+"\n", 0o644)); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Errorf("mode 0644: %v, want refused", err)
	}
}
