package httpserve

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/bankdoor/bankdoor/internal/jsonobj"
	"github.com/bankdoor/bankdoor/proxy"
)

// newLimitServer is newTestServer with cfg's limits (and its Start, if
// set, else the echo's).
func newLimitServer(t *testing.T, cfg Config) (*httptest.Server, *Server, *echo) {
	t.Helper()
	e := &echo{frames: map[string][]string{}}
	cfg.Tokens = testTokens(t)
	cfg.MaxBody = 1024
	if cfg.Start == nil {
		cfg.Start = e.start
	}
	s := New(cfg)
	ts := httptest.NewServer(s)
	t.Cleanup(func() { ts.Close(); s.Close() })
	return ts, s, e
}

// openStream opens sid's GET stream, which keeps the session busy until
// the test ends.
func openStream(t *testing.T, ts *httptest.Server, token, sid string) {
	t.Helper()
	resp, _ := do(t, ts, req{method: "GET", token: token, session: sid, accept: "text/event-stream"})
	if resp.StatusCode != 200 {
		t.Fatalf("GET stream of %s: %s", sid, resp.Status)
	}
	t.Cleanup(func() { resp.Body.Close() })
}

// settled initializes a session and waits until its initialize has been
// released (its answer may reach the client first), so that the order of
// the sessions' last use is the order of the test's requests.
func settled(t *testing.T, ts *httptest.Server, s *Server, token string) string {
	t.Helper()
	sid := initialize(t, ts, token)
	s.mu.Lock()
	ss := s.sessions[sid]
	s.mu.Unlock()
	deadline := time.Now().Add(5 * time.Second)
	for _, idle := ss.idle(); !idle; _, idle = ss.idle() {
		if time.Now().After(deadline) {
			t.Fatalf("session %s is still busy 5s after its initialize", sid)
		}
		time.Sleep(time.Millisecond)
	}
	return sid
}

func ping(t *testing.T, ts *httptest.Server, token, sid string) int {
	t.Helper()
	resp, _ := do(t, ts, req{method: "POST", token: token, session: sid, ctype: "application/json", body: `{"jsonrpc":"2.0","id":"p","method":"ping"}`})
	return resp.StatusCode
}

// TestEvictLRU: an agent at its session limit that opens another gets it,
// and the least recently used idle session (not the oldest, which has a
// stream open) is closed for it; when every session is busy the new one
// is refused with 429.
func TestEvictLRU(t *testing.T) {
	ts, s, _ := newLimitServer(t, Config{MaxSessions: 3})
	s1, s2, s3 := settled(t, ts, s, tokenA), settled(t, ts, s, tokenA), settled(t, ts, s, tokenA)
	openStream(t, ts, tokenA, s1) // the oldest, but busy
	if st := ping(t, ts, tokenA, s2); st != 200 {
		t.Fatalf("ping s2: %d", st)
	}
	s4 := initialize(t, ts, tokenA) // s3 is the least recently used idle one
	for sid, want := range map[string]int{s1: 200, s2: 200, s3: 404, s4: 200} {
		if st := ping(t, ts, tokenA, sid); st != want {
			t.Errorf("session %s after the eviction: %d, want %d", sid, st, want)
		}
	}
	initialize(t, ts, tokenB) // another agent's sessions are its own
	openStream(t, ts, tokenA, s2)
	openStream(t, ts, tokenA, s4)
	resp, body := do(t, ts, req{method: "POST", token: tokenA, ctype: "application/json", body: initBody})
	if resp.StatusCode != 429 || !strings.Contains(body, "agent alice has 3 open sessions") || !strings.Contains(body, "each has a request in flight or a stream open") {
		t.Errorf("every session busy: %s %q, want 429 saying so", resp.Status, body)
	}
	if n := s.tableSize(); n != 4 {
		t.Errorf("%d sessions in the table, want alice's 3 and bob's 1", n)
	}
}

// tableSize counts the sessions in the table.
func (s *Server) tableSize() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.sessions)
}

// TestMaxBankSessions: past the gateway's limit, a new session of any
// agent closes the least recently used idle session of all; with every
// session busy it is refused with 503.
func TestMaxBankSessions(t *testing.T) {
	ts, s, _ := newLimitServer(t, Config{MaxSessions: 2, MaxBankSessions: 3})
	a1, a2 := settled(t, ts, s, tokenA), settled(t, ts, s, tokenA)
	b1 := settled(t, ts, s, tokenB)
	b2 := initialize(t, ts, tokenB) // a1 goes
	for sid, want := range map[string]struct {
		token  string
		status int
	}{a1: {tokenA, 404}, a2: {tokenA, 200}, b1: {tokenB, 200}, b2: {tokenB, 200}} {
		if st := ping(t, ts, want.token, sid); st != want.status {
			t.Errorf("session %s: %d, want %d", sid, st, want.status)
		}
	}
	openStream(t, ts, tokenA, a2)
	openStream(t, ts, tokenB, b1)
	openStream(t, ts, tokenB, b2)
	resp, body := do(t, ts, req{method: "POST", token: tokenA, ctype: "application/json", body: initBody})
	if resp.StatusCode != 503 || !strings.Contains(body, "the gateway has 3 open sessions") {
		t.Errorf("every session busy: %s %q, want 503 saying so", resp.Status, body)
	}
	if n := s.tableSize(); n != 3 {
		t.Errorf("%d sessions in the table, want 3", n)
	}
}

// blocker is a Start that answers each request after a value on release,
// and says on got that it holds one.
type blocker struct{ got, release chan struct{} }

func (b *blocker) start(ctx context.Context, agent string, side proxy.AgentSide) error {
	for first := true; ; first = false {
		msg, err := side.ReadFrame()
		if err == io.EOF {
			return nil
		}
		obj, _ := jsonobj.ParseLenient(msg)
		if obj.Get("id") == nil {
			continue
		}
		if !first {
			b.got <- struct{}{}
			<-b.release
		}
		side.WriteFrame([]byte(`{"jsonrpc":"2.0","id":` + string(obj.Get("id")) + `,"result":{}}`))
	}
}

// TestMaxRequests: an agent with MaxRequests POSTs in flight (two
// sessions, a call waiting in each) is refused another with 429; another
// agent is not; once they are answered, the agent is served again.
func TestMaxRequests(t *testing.T) {
	b := &blocker{got: make(chan struct{}), release: make(chan struct{})}
	ts, _, _ := newLimitServer(t, Config{MaxRequests: 2, Start: b.start})
	s1, s2 := initialize(t, ts, tokenA), initialize(t, ts, tokenA)
	done := make(chan int, 2)
	for _, sid := range []string{s1, s2} {
		go func() {
			resp, _, err := doWith(ts.Client(), ts.URL, req{method: "POST", token: tokenA, session: sid, ctype: "application/json", body: `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`})
			if err != nil {
				done <- 0
				return
			}
			done <- resp.StatusCode
		}()
	}
	<-b.got
	<-b.got
	resp, body := do(t, ts, req{method: "POST", token: tokenA, session: s1, ctype: "application/json", body: `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`})
	if resp.StatusCode != 429 || !strings.Contains(body, "agent alice has 2 requests in flight") {
		t.Errorf("a third request: %s %q, want 429 naming the limit", resp.Status, body)
	}
	initialize(t, ts, tokenB)
	b.release <- struct{}{}
	b.release <- struct{}{}
	for range 2 {
		if st := <-done; st != 200 {
			t.Errorf("a held request: %d, want 200", st)
		}
	}
	go func() { <-b.got; b.release <- struct{}{} }()
	if st := ping(t, ts, tokenA, s1); st != 200 {
		t.Errorf("after the answers: %d, want 200", st)
	}
}

// TestSlowBody: a client that sends the headers and then trickles the
// body is refused with 408 at Config.BodyTimeout (the deadline is for the
// whole body, not between bytes); the request is no longer counted in
// flight, and nothing reaches the relay.
func TestSlowBody(t *testing.T) {
	const timeout = 300 * time.Millisecond
	ts, s, e := newLimitServer(t, Config{BodyTimeout: timeout})
	sid := initialize(t, ts, tokenA)
	pr, pw := io.Pipe()
	stop := make(chan struct{})
	go func() { // a byte every 10ms, until the answer
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		pw.Write([]byte(`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"x":"`))
		for {
			select {
			case <-stop:
				pw.Close()
				return
			case <-tick.C:
				pw.Write([]byte("a"))
			}
		}
	}()
	hr, _ := http.NewRequest("POST", ts.URL, pr)
	hr.Header.Set("Authorization", "Bearer "+tokenA)
	hr.Header.Set("Mcp-Session-Id", sid)
	hr.Header.Set("Content-Type", "application/json")
	hr.ContentLength = 1000 // less than MaxBody: only the deadline stops it
	start := time.Now()
	resp, err := ts.Client().Do(hr)
	took := time.Since(start)
	close(stop)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 408 || !strings.Contains(string(body), "did not arrive within 300ms") || took < timeout {
		t.Errorf("a trickled body: %s %q after %v, want 408 naming the deadline after at least %v", resp.Status, body, took, timeout)
	}
	s.mu.Lock()
	n := s.requests["alice"]
	s.mu.Unlock()
	if n != 0 {
		t.Errorf("%d requests of alice still counted in flight after the 408", n)
	}
	if n := e.count(); n != 1 {
		t.Errorf("%d frames reached the relay, want only the initialize", n)
	}
}

// TestRefusalOutsideSession: an authenticated agent's request without a
// session id, or with one that is not its own open session, is refused
// and leaves a receipt with its rule in that agent's chain, named in the
// refusal, also when its body is unreadable or too large; a request
// refused before authentication leaves none.
func TestRefusalOutsideSession(t *testing.T) {
	recs := map[string]*memRecorder{"alice": {}, "bob": {}}
	ts, _, _ := newLimitServer(t, Config{MaxBody: 1024, Recorder: func(agent string) (proxy.Recorder, error) { return recs[agent], nil }})
	sidA := initialize(t, ts, tokenA)
	call := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"transfer"}}`
	for _, tt := range []struct {
		r            req
		status       int
		agent, rule  string
		receiptInMsg string
	}{
		{req{method: "POST", token: tokenA, ctype: "application/json", body: call}, 400, "alice", RuleSessionMissing, "receipt 000001.json"},
		{req{method: "POST", token: tokenB, session: sidA, ctype: "application/json", body: call}, 404, "bob", RuleSessionUnknown, "receipt 000001.json"},
		{req{method: "GET", token: tokenA, session: "feed", accept: "text/event-stream"}, 404, "alice", RuleSessionUnknown, "receipt 000002.json"},
		// A body that is not one message, or too large, outside a session.
		{req{method: "POST", token: tokenA, ctype: "application/json", body: `[1,2]`}, 400, "alice", RuleSessionMissing, "receipt 000003.json"},
		{req{method: "POST", token: tokenB, session: "feed", ctype: "application/json", body: strings.Repeat(" ", 2000)}, 413, "bob", RuleSessionUnknown, "receipt 000002.json"},
	} {
		resp, body := do(t, ts, tt.r)
		if resp.StatusCode != tt.status || !strings.Contains(body, "bankdoor: "+tt.rule+": ") || !strings.Contains(body, tt.receiptInMsg) {
			t.Errorf("%s by %s: %s %q, want %d naming %s and its %s", tt.r.method, tt.agent, resp.Status, body, tt.status, tt.rule, tt.receiptInMsg)
		}
	}
	do(t, ts, req{method: "POST", token: "nope", ctype: "application/json", body: call})
	want := map[string]string{"alice": "[deny session.missing deny session.unknown deny session.missing]", "bob": "[deny session.unknown deny session.unknown]"}
	for agent, rec := range recs {
		if got := fmt.Sprint(rec.rules()); got != want[agent] {
			t.Errorf("%s's receipts: %s, want %s", agent, got, want[agent])
		}
	}
	ev := recs["alice"].events[0]
	if sum := sha256.Sum256([]byte(call)); ev.ArgsSHA256 != hex.EncodeToString(sum[:]) || !strings.HasPrefix(ev.Reason, "POST: missing Mcp-Session-Id") {
		t.Errorf("alice's first receipt: %+v, want args_sha256 of the body and a reason naming POST", ev)
	}
}

// TestSessionMemory logs the heap each idle session, and each session
// with its GET stream open, costs the gateway (without the relay and the
// bank server session, which Start brings), and fails past 256 KiB.
func TestSessionMemory(t *testing.T) {
	const n = 200
	ts, _, _ := newLimitServer(t, Config{MaxSessions: 2 * n, MaxBankSessions: 2 * n})
	heap := func() int64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return int64(m.HeapAlloc)
	}
	before := heap()
	sids := make([]string, n)
	for i := range sids {
		sids[i] = initialize(t, ts, tokenA)
	}
	idle := heap()
	for _, sid := range sids {
		openStream(t, ts, tokenA, sid)
	}
	open := heap()
	t.Logf("heap per idle session: %d bytes; per session with its GET stream open: %d bytes (%d sessions, echo relay, client side included)",
		(idle-before)/n, (open-before)/n, n)
	if per := (open - before) / n; per > 256<<10 {
		t.Errorf("a session with its stream open costs %d bytes of heap, want at most 256 KiB", per)
	}
}

// TestDeniedInitializeOpensNoSession: an initialize the relay would deny
// (here a request with a "result") opens no session. It is refused as any
// unreadable body outside a session is, with a receipt, and it takes no
// session slot: the agent's one open session is not evicted for it.
func TestDeniedInitializeOpensNoSession(t *testing.T) {
	rec := &memRecorder{}
	ts, s, e := newLimitServer(t, Config{MaxSessions: 1, Recorder: func(string) (proxy.Recorder, error) { return rec, nil }})
	sid := settled(t, ts, s, tokenA)
	resp, body := do(t, ts, req{method: "POST", token: tokenA, ctype: "application/json",
		body: `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{},"result":{}}`})
	if got := resp.Header.Get("Mcp-Session-Id"); resp.StatusCode != 400 || got != "" || !strings.Contains(body, "bankdoor: "+RuleSessionMissing+": ") {
		t.Fatalf("a denied initialize: %s, Mcp-Session-Id %q, %q; want 400 naming %s and no session", resp.Status, got, body, RuleSessionMissing)
	}
	if got := fmt.Sprint(rec.rules()); got != "[deny session.missing]" {
		t.Errorf("receipts %s, want one session.missing", got)
	}
	if st := ping(t, ts, tokenA, sid); st != 200 {
		t.Errorf("ping in the agent's session after the denied initialize: %d, want 200", st)
	}
	if n := e.count(); n != 2 {
		t.Errorf("%d frames reached a relay, want the first initialize and the ping", n)
	}
}
