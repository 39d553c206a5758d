package proxy

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/bankdoor/bankdoor/proxy/gate"
	"github.com/bankdoor/bankdoor/proxy/policy"
)

// endedSpans is a span processor that hands each ended span to the test
// as it ends, so that a test waits for a span instead of sleeping.
type endedSpans chan sdktrace.ReadOnlySpan

func (e endedSpans) OnStart(context.Context, sdktrace.ReadWriteSpan) {}
func (e endedSpans) OnEnd(s sdktrace.ReadOnlySpan)                   { e <- s }
func (e endedSpans) Shutdown(context.Context) error                  { return nil }
func (e endedSpans) ForceFlush(context.Context) error                { return nil }

// tracer returns a tracer whose ended spans arrive on the channel.
func tracer(t *testing.T) (trace.Tracer, endedSpans) {
	ended := make(endedSpans, 256)
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(ended))
	t.Cleanup(func() { tp.Shutdown(context.Background()) })
	return tp.Tracer("bankdoor-test"), ended
}

// until collects ended spans up to and including the SERVER span named
// name, which it returns with the others.
func (e endedSpans) until(t *testing.T, name string) (sdktrace.ReadOnlySpan, []sdktrace.ReadOnlySpan) {
	t.Helper()
	var all []sdktrace.ReadOnlySpan
	for {
		select {
		case s := <-e:
			all = append(all, s)
			if s.Name() == name && s.SpanKind() == trace.SpanKindServer {
				return s, all
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no SERVER span %q ended within 10s; got %v", name, names(all))
			return nil, nil
		}
	}
}

func names(spans []sdktrace.ReadOnlySpan) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.SpanKind().String()+" "+s.Name())
	}
	return out
}

// children are the spans of all whose parent is s, as "KIND name [step]".
func children(s sdktrace.ReadOnlySpan, all []sdktrace.ReadOnlySpan) []string {
	var out []string
	for _, c := range all {
		if c.Parent().SpanID() == s.SpanContext().SpanID() {
			n := c.SpanKind().String() + " " + c.Name()
			if step := attr(c, attrStep); step != "" {
				n += " " + step
			}
			out = append(out, n)
		}
	}
	return out
}

func attr(s sdktrace.ReadOnlySpan, key string) string {
	for _, kv := range s.Attributes() {
		if kv.Key == attribute.Key(key) {
			return kv.Value.String()
		}
	}
	return ""
}

func wantAttrs(t *testing.T, s sdktrace.ReadOnlySpan, want map[string]string) {
	t.Helper()
	for k, v := range want {
		if got := attr(s, k); got != v {
			t.Errorf("span %q: %s = %q, want %q", s.Name(), k, got, v)
		}
	}
}

func wantChildren(t *testing.T, s sdktrace.ReadOnlySpan, all []sdktrace.ReadOnlySpan, want ...string) {
	t.Helper()
	got := children(s, all)
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("children of %q = %q, want %q", s.Name(), got, want)
	}
}

// The agent's trace context in the tests: trace 0af7…, span b7ad….
const (
	agentTrace  = "0af7651916cd43dd8448eb211c80319c"
	agentSpan   = "b7ad6b7169203331"
	agentParent = "00-" + agentTrace + "-" + agentSpan + "-01"
	agentMeta   = `"_meta":{"progressToken":7,"traceparent":"` + agentParent + `","tracestate":"agent=1","baggage":"user=alice"}`
)

// TestTraceAllowedCall checks the span tree of an allowed tools/call that
// continues the agent's trace, and that the bank sees none of it.
func TestTraceAllowedCall(t *testing.T) {
	tr, ended := tracer(t)
	s := startScript(t, Config{Tracer: tr})
	ended.until(t, "initialize")
	bank := s.serveBank()
	s.send(`{"jsonrpc":"2.0","id":"c1","method":"tools/call","params":{"name":"get_balances","arguments":{"account":"acc_1"},` + agentMeta + `}}`)
	req := bank.expectOther("tools/call")
	if p := string(req.Params); strings.Contains(p, "traceparent") || strings.Contains(p, "agent=1") || strings.Contains(p, "alice") {
		t.Errorf("the bank got trace context: %s", p)
	}
	bank.srv.answer(req, okResult)
	mustResult(t, "allowed call", s.recv())

	srv, all := ended.until(t, "tools/call get_balances")
	if got := srv.SpanContext().TraceID().String(); got != agentTrace {
		t.Errorf("trace id %s, want the agent's %s", got, agentTrace)
	}
	if got := srv.Parent().SpanID().String(); got != agentSpan || !srv.Parent().IsRemote() {
		t.Errorf("parent %s (remote %v), want the agent's span %s", got, srv.Parent().IsRemote(), agentSpan)
	}
	wantAttrs(t, srv, map[string]string{
		attrMethod: "tools/call", attrTool: "get_balances", attrRequestID: "c1", attrOperation: "execute_tool",
		attrVersion: "2025-11-25", attrDecision: "allow", attrRule: "", attrErrorType: "",
	})
	if srv.Status().Code == codes.Error {
		t.Errorf("status %v, want not an error", srv.Status())
	}
	wantChildren(t, srv, all, "internal bankdoor.gate precheck", "internal bankdoor.gate decide", "client tools/call get_balances")
	for _, c := range all {
		if c.SpanKind() == trace.SpanKindClient && c.EndTime().After(srv.EndTime()) {
			t.Error("the client span ended after the request span")
		}
	}
}

// TestTraceDeny checks the span tree of a denied tools/call: the gate, the
// receipt's write, and the rule and receipt on an error status.
func TestTraceDeny(t *testing.T) {
	tr, ended := tracer(t)
	s := startScript(t, Config{Tracer: tr})
	ended.until(t, "initialize")
	mustDeny(t, "transfer", s.roundTrip(`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"transfer","arguments":{"to":"x"}}}`), "name.write_word")

	srv, all := ended.until(t, "tools/call transfer")
	wantAttrs(t, srv, map[string]string{
		attrMethod: "tools/call", attrTool: "transfer", attrRequestID: "9", attrDecision: "deny",
		attrRule: "name.write_word", attrReceipt: "r0001.json", attrErrorType: "-32001", attrStatus: "-32001",
	})
	if srv.Status().Code != codes.Error || srv.Status().Description != "name.write_word" {
		t.Errorf("status %v, want Error name.write_word", srv.Status())
	}
	wantChildren(t, srv, all, "internal bankdoor.gate precheck", "internal bankdoor.receipt.write")
	if srv.Parent().IsValid() {
		t.Errorf("a request without traceparent has parent %v", srv.Parent())
	}
}

// TestTraceHostileToolName checks that a tool name the gate refuses for
// its characters is an attribute, never the span's name.
func TestTraceHostileToolName(t *testing.T) {
	tr, ended := tracer(t)
	s := startScript(t, Config{Tracer: tr})
	ended.until(t, "initialize")
	mustDeny(t, "bad name", s.roundTrip(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_balances\n"}}`), "name.charset")
	srv, _ := ended.until(t, "tools/call")
	wantAttrs(t, srv, map[string]string{attrTool: "get_balances\n", attrRule: "name.charset"})
}

// TestTraceContextStripped checks that the agent's traceparent, tracestate
// and baggage never reach the bank in a forwarded method, with tracing on
// or off, and that the rest of _meta does, byte for byte.
func TestTraceContextStripped(t *testing.T) {
	for _, on := range []bool{false, true} {
		var cfg Config
		if on {
			cfg.Tracer, _ = tracer(t)
		}
		cfg.Policy = scriptPolicyExposing(t, "deny", "resources")
		s := startScript(t, cfg)
		bank := s.serveBank()
		s.send(`{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"bank://a",` + agentMeta + `}}`)
		req := bank.expectOther("resources/read")
		if got, want := string(req.Params), `{"uri":"bank://a","_meta":{"progressToken":7}}`; got != want {
			t.Errorf("tracing %v: the bank got %s, want %s", on, got, want)
		}
		bank.srv.answer(req, `{"contents":[]}`)
		mustResult(t, "resources/read", s.recv())

		s.send(`{"jsonrpc":"2.0","id":3,"method":"resources/read","params":{"uri":"bank://b", "_meta":{"progressToken":8}}}`)
		req = bank.expectOther("resources/read")
		if got, want := string(req.Params), `{"uri":"bank://b", "_meta":{"progressToken":8}}`; got != want {
			t.Errorf("tracing %v: params without trace context changed: got %s, want %s", on, got, want)
		}
		bank.srv.answer(req, `{"contents":[]}`)
		mustResult(t, "resources/read", s.recv())
	}
}

// TestTraceContextForward checks trace_context: forward: the bank gets
// the proxy's CLIENT span as traceparent, never the agent's.
func TestTraceContextForward(t *testing.T) {
	tr, ended := tracer(t)
	p := scriptPolicyExposing(t, "deny", "resources")
	p.Servers["bank"].TraceContext = policy.TraceContextForward
	s := startScript(t, Config{Tracer: tr, Policy: p})
	ended.until(t, "initialize")
	bank := s.serveBank()
	for _, c := range []struct{ send, method, span string }{
		{`{"jsonrpc":"2.0","id":"c2","method":"tools/call","params":{"name":"get_balances","arguments":{"account":"acc_1"},` + agentMeta + `}}`, "tools/call", "tools/call get_balances"},
		{`{"jsonrpc":"2.0","id":"r2","method":"resources/read","params":{"uri":"bank://a",` + agentMeta + `}}`, "resources/read", "resources/read"},
	} {
		s.send(c.send)
		req := bank.expectOther(c.method)
		bank.srv.answer(req, okResult)
		mustResult(t, c.method, s.recv())
		srv, all := ended.until(t, c.span)
		var client sdktrace.ReadOnlySpan
		for _, sp := range all {
			if sp.SpanKind() == trace.SpanKindClient {
				client = sp
			}
		}
		if client == nil {
			t.Fatalf("%s: no client span in %v", c.method, names(all))
		}
		want := `"traceparent":"00-` + agentTrace + "-" + client.SpanContext().SpanID().String() + `-01","tracestate":"agent=1"}`
		p := string(req.Params)
		if !strings.Contains(p, want) || strings.Contains(p, agentSpan) || strings.Contains(p, "alice") {
			t.Errorf("%s: the bank got %s, want the client span's context %s and not the agent's", c.method, p, want)
		}
		if client.Parent().SpanID() != srv.SpanContext().SpanID() {
			t.Errorf("%s: the client span's parent is not the request span", c.method)
		}
	}
}

// TestTraceEndsWithSession checks that the span of a request the session
// ends without an answer from the bank ends too, once, marked.
func TestTraceEndsWithSession(t *testing.T) {
	tr, ended := tracer(t)
	s := startScript(t, Config{Tracer: tr})
	ended.until(t, "initialize")
	bank := s.serveBank()
	s.send(callBalances("left"))
	bank.expectOther("tools/call")
	s.cancel()
	srv, _ := ended.until(t, "tools/call get_balances")
	// The relay closes the server as the session ends, and answers what
	// it had sent; either way the span ends marked.
	if got := attr(srv, attrErrorType); got != "server_gone" && got != "session_ended" {
		t.Errorf("error.type = %q, want server_gone or session_ended", got)
	}
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return")
	}
	for len(ended) > 0 {
		if sp := <-ended; sp.SpanKind() == trace.SpanKindServer {
			t.Errorf("another SERVER span ended after the session: %q", sp.Name())
		}
	}
}

// TestTraceBankErrors checks what the request span says of the bank's
// answers: a tools/call result with isError true is tool_error, a
// JSON-RPC error its code.
func TestTraceBankErrors(t *testing.T) {
	tr, ended := tracer(t)
	s := startScript(t, Config{Tracer: tr})
	ended.until(t, "initialize")
	bank := s.serveBank()
	s.send(callBalances("e1"))
	bank.srv.answer(bank.expectOther("tools/call"), `{"content":[],"isError":true}`)
	s.recv()
	srv, all := ended.until(t, "tools/call get_balances")
	wantAttrs(t, srv, map[string]string{attrErrorType: "tool_error", attrDecision: "allow"})
	if srv.Status().Code != codes.Error {
		t.Errorf("isError: status %v, want Error", srv.Status())
	}
	for _, c := range all {
		if c.SpanKind() == trace.SpanKindClient && attr(c, attrErrorType) != "tool_error" {
			t.Errorf("isError: the client span's error.type = %q, want tool_error", attr(c, attrErrorType))
		}
	}

	s.send(`{"jsonrpc":"2.0","id":"p1","method":"ping"}`)
	req := bank.expectOther("ping")
	bank.srv.send(&jsonrpc.Response{ID: req.ID, Error: &jsonrpc.Error{Code: -32603, Message: "boom"}})
	s.recv()
	srv, _ = ended.until(t, "ping")
	wantAttrs(t, srv, map[string]string{attrErrorType: "-32603", attrStatus: "-32603", attrRequestID: "p1"})
}

// TestTraceCancelledInQueue checks that a tools/call the agent cancels
// while it waits for its turn ends its span, marked cancelled.
func TestTraceCancelledInQueue(t *testing.T) {
	tr, ended := tracer(t)
	s := startScript(t, Config{Tracer: tr})
	ended.until(t, "initialize")
	bank := s.serveBank()
	bank.mu.Lock()
	bank.silent = true // the first call waits for its listing
	bank.mu.Unlock()
	s.send(callBalances("first"))
	s.send(callBalances("second"))
	s.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"second"}}`)
	srv, _ := ended.until(t, "tools/call get_balances")
	wantAttrs(t, srv, map[string]string{attrRequestID: "second", attrErrorType: "cancelled"})
}

// sessionAgent is a LineAgent that knows its session id, as a session of
// proxy/httpserve does.
type sessionAgent struct{ AgentSide }

func (sessionAgent) SessionID() string { return "5f2c0a" }

// TestTraceSessionID checks mcp.session.id from a SessionIDer agent side.
func TestTraceSessionID(t *testing.T) {
	tr, ended := tracer(t)
	srv := newScriptServer(t)
	p := scriptPolicy(t, "deny")
	r := New(Config{Policy: p, Server: "bank", Gate: gate.New(p), Recorder: &sliceRecorder{}, Tracer: tr}, srv)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go r.RunAgent(ctx, sessionAgent{LineAgent(inR, outW, 0)})
	go io.Copy(io.Discard, outR)
	io.WriteString(inW, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"transfer"}}`+"\n")
	span, _ := ended.until(t, "tools/call transfer")
	wantAttrs(t, span, map[string]string{attrSession: "5f2c0a"})
	inW.Close()
}

// TestStripTraceMeta checks what stripTraceMeta leaves of params: the
// same bytes when there is nothing to strip, the rest of _meta otherwise,
// names spelled with escapes included.
func TestStripTraceMeta(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{``, ``},
		{`{}`, `{}`},
		{`{"uri":"trace://x", "_meta": {"progressToken": 1}}`, `{"uri":"trace://x", "_meta": {"progressToken": 1}}`},
		{`{"_meta":{"traceparent":"00-x"}}`, `{"_meta":{}}`},
		{`{"a":1,"_meta":{"tracestate":"k=v","x":2,"baggage":"u=1"}}`, `{"a":1,"_meta":{"x":2}}`},
		{`{"_meta":{"\u0074raceparent":"00-x","y":"\u00e9"}}`, `{"_meta":{"y":"\u00e9"}}`},
		{`{"traceparent":"top-level is not _meta"}`, `{"traceparent":"top-level is not _meta"}`},
	} {
		if got := string(stripTraceMeta([]byte(c.in))); got != c.want {
			t.Errorf("stripTraceMeta(%s) = %s, want %s", c.in, got, c.want)
		}
	}
}
