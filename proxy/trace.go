package proxy

import (
	"bytes"
	"context"
	"strconv"
	"sync"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/bankdoor/bankdoor/internal/jsonobj"
	"github.com/bankdoor/bankdoor/proxy/policy"
)

// This file is the relay's tracing (Config.Tracer), after the
// OpenTelemetry semantic conventions for MCP
// (https://opentelemetry.io/docs/specs/semconv/gen-ai/mcp/):
//
//	tools/call get_balances     SERVER, one per agent request, from its
//	│                           frame until its answer is written to the
//	│                           agent (or the session ends)
//	├── bankdoor.gate           checks 1 to 4 (bankdoor.gate.step precheck)
//	├── bankdoor.gate           listing, checks 1 to 6 (step decide)
//	├── bankdoor.receipt.write  Recorder.Record, on a deny (or receipts: all)
//	└── tools/call get_balances CLIENT, the request to the bank, from its
//	                            write until the bank's answer arrives
//
// The request span continues the agent's trace: W3C traceparent and
// tracestate in its params._meta. What reaches the bank is the policy's
// choice (trace_context): by default no trace context at all, the agent's
// removed (stripTraceMeta); with forward, the CLIENT span's own.
//
// With no tracer every *reqTrace is nil and each method returns at once:
// tracing off costs the relay nothing but a nil check.

// reqTrace is the trace of one of the agent's requests. It travels with
// the request (frame, toolCall, pending) and is ended once, by end.
type reqTrace struct {
	r    *Relay
	ctx  context.Context // holds span
	span trace.Span
	name string

	mu     sync.Mutex
	client trace.Span // the request to the bank, once sent
	ended  bool
}

// Attribute keys of the MCP and JSON-RPC conventions, and bankdoor's own.
const (
	attrMethod    = "mcp.method.name"
	attrSession   = "mcp.session.id"
	attrVersion   = "mcp.protocol.version"
	attrRequestID = "jsonrpc.request.id"
	attrTool      = "gen_ai.tool.name"
	attrOperation = "gen_ai.operation.name"
	attrStatus    = "rpc.response.status_code"
	attrErrorType = "error.type"
	attrDecision  = "bankdoor.decision"
	attrRule      = "bankdoor.rule"
	attrReceipt   = "bankdoor.receipt"
	attrStep      = "bankdoor.gate.step"
)

// A SessionIDer is an AgentSide that knows its MCP session id
// (Mcp-Session-Id over streamable HTTP); it becomes mcp.session.id.
type SessionIDer interface {
	SessionID() string
}

// startTrace starts the SERVER span of an agent's request or
// notification, continuing the agent's trace if its params carry one. It
// returns nil when tracing is off.
func (r *Relay) startTrace(f *frame) *reqTrace {
	if r.cfg.Tracer == nil || f.isResponse() {
		return nil
	}
	ctx := context.Background()
	if carrier := traceCarrier(f.params); carrier != nil {
		ctx = propagation.TraceContext{}.Extract(ctx, carrier)
	}
	attrs := []attribute.KeyValue{attribute.String(attrMethod, f.method)}
	if f.id != nil {
		attrs = append(attrs, attribute.String(attrRequestID, idString(f.id)))
	}
	if s, ok := r.agent.(SessionIDer); ok && s.SessionID() != "" {
		attrs = append(attrs, attribute.String(attrSession, s.SessionID()))
	}
	if v, _ := r.version.Load().(string); v != "" {
		attrs = append(attrs, attribute.String(attrVersion, v))
	}
	ctx, span := r.cfg.Tracer.Start(ctx, f.method, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...))
	t := &reqTrace{r: r, ctx: ctx, span: span, name: f.method}
	r.traceMu.Lock()
	if r.traces == nil {
		r.traces = make(map[*reqTrace]struct{})
	}
	r.traces[t] = struct{}{}
	r.traceMu.Unlock()
	return t
}

// idString is a JSON-RPC id as the conventions record it: a string's
// text, a number's digits.
func idString(id jsontext.Value) string {
	if s, ok := jsonobj.String(id); ok {
		return s
	}
	return string(id)
}

// traceCarrier reads params._meta.traceparent and tracestate, or nil.
func traceCarrier(params jsontext.Value) propagation.MapCarrier {
	if !bytes.Contains(params, []byte("traceparent")) {
		return nil
	}
	meta := paramsMeta(params)
	if meta == nil {
		return nil
	}
	c := propagation.MapCarrier{}
	for _, k := range []string{"traceparent", "tracestate"} {
		if v, ok := jsonobj.String(meta.Get(k)); ok {
			c[k] = v
		}
	}
	return c
}

// setTool names a tools/call's span after its tool: "tools/call NAME"
// when the name is one the gate could allow (so that a hostile name never
// makes a span name), and gen_ai.tool.name always.
func (t *reqTrace) setTool(name string) {
	if t == nil || name == "" {
		return
	}
	t.span.SetAttributes(attribute.String(attrTool, truncate(name, 256)), attribute.String(attrOperation, "execute_tool"))
	if plainName(name) {
		t.name += " " + name
		t.span.SetName(t.name)
	}
}

func plainName(s string) bool {
	if len(s) == 0 || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// child starts an INTERNAL child span of the request; nil when off.
func (t *reqTrace) child(name string, attrs ...attribute.KeyValue) trace.Span {
	if t == nil {
		return nil
	}
	_, s := t.r.cfg.Tracer.Start(t.ctx, name, trace.WithAttributes(attrs...))
	return s
}

// endSpan ends a span child returned.
func endSpan(s trace.Span) {
	if s != nil {
		s.End()
	}
}

// gate starts the span of one step of the gate.
func (t *reqTrace) gate(step string) trace.Span {
	if t == nil {
		return nil
	}
	return t.child("bankdoor.gate", attribute.String(attrStep, step))
}

// allowed marks a tools/call the gate let through.
func (t *reqTrace) allowed() {
	if t != nil {
		t.span.SetAttributes(attribute.String(attrDecision, "allow"))
	}
}

// denied marks the request denied by rule with receipt rid, and ends it.
func (t *reqTrace) denied(code int, rule, rid string) {
	if t == nil {
		return
	}
	c := strconv.Itoa(code)
	t.span.SetAttributes(attribute.String(attrDecision, "deny"), attribute.String(attrRule, rule),
		attribute.String(attrReceipt, rid), attribute.String(attrErrorType, c), attribute.String(attrStatus, c))
	t.span.SetStatus(codes.Error, rule)
	t.end()
}

// fail marks the request failed for what (an error.type) and ends it.
func (t *reqTrace) fail(what string) {
	if t == nil {
		return
	}
	t.span.SetAttributes(attribute.String(attrErrorType, what))
	t.span.SetStatus(codes.Error, what)
	t.end()
}

// startClient starts the CLIENT span of the request to the bank and
// returns params with that span's trace context in _meta if forward, else
// params as they are.
func (t *reqTrace) startClient(method string, params []byte, forward bool) []byte {
	if t == nil {
		return params
	}
	ctx, s := t.r.cfg.Tracer.Start(t.ctx, t.name, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attribute.String(attrMethod, method)))
	t.mu.Lock()
	t.client = s
	t.mu.Unlock()
	if !forward {
		return params
	}
	c := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, c)
	return injectTraceMeta(params, c)
}

// arrived ends the CLIENT span with the bank's answer m and records on
// the request what the answer says: a JSON-RPC error code, or tool_error
// for a tools/call result with isError true.
func (t *reqTrace) arrived(m *jsonrpc.Response) {
	if t == nil {
		return
	}
	t.mu.Lock()
	s := t.client
	t.mu.Unlock()
	what := ""
	if m.Error != nil {
		code := int64(codeInternalError)
		if we, ok := m.Error.(*jsonrpc.Error); ok {
			code = we.Code
		}
		what = strconv.FormatInt(code, 10)
		t.span.SetAttributes(attribute.String(attrStatus, what))
	} else if bytes.Contains(m.Result, []byte(`"isError"`)) {
		if obj, err := jsonobj.Parse(m.Result); err == nil && string(obj.Get("isError")) == "true" {
			what = "tool_error"
		}
	}
	if what != "" {
		t.span.SetAttributes(attribute.String(attrErrorType, what))
		t.span.SetStatus(codes.Error, what)
		if s != nil {
			s.SetAttributes(attribute.String(attrErrorType, what))
			s.SetStatus(codes.Error, what)
		}
	}
	if s != nil {
		s.End()
	}
}

// end ends the request's spans; only the first call does anything.
func (t *reqTrace) end() {
	if t == nil {
		return
	}
	t.mu.Lock()
	ended, client := t.ended, t.client
	t.ended = true
	t.mu.Unlock()
	if ended {
		return
	}
	if client != nil {
		client.End() // a no-op if the answer arrived
	}
	t.span.End()
	t.r.traceMu.Lock()
	delete(t.r.traces, t)
	t.r.traceMu.Unlock()
}

// endTraces ends the spans of requests the session ends without
// answering.
func (r *Relay) endTraces() {
	r.traceMu.Lock()
	open := make([]*reqTrace, 0, len(r.traces))
	for t := range r.traces {
		open = append(open, t)
	}
	r.traceMu.Unlock()
	for _, t := range open {
		t.fail("session_ended")
	}
}

// forwardsTrace reports whether the policy gives the bank trace context.
func (r *Relay) forwardsTrace() bool {
	return r.srv != nil && r.srv.TraceContext == policy.TraceContextForward
}

// traceMembers are the members of _meta that carry trace context (W3C
// Trace Context and Baggage).
var traceMembers = map[string]bool{"traceparent": true, "tracestate": true, "baggage": true}

// stripTraceMeta returns params without traceparent, tracestate and
// baggage in _meta: the agent's trace context never reaches the bank. It
// returns params untouched, the same bytes, when there is none; params
// that could spell a member name only with an escape are parsed too.
func stripTraceMeta(params []byte) []byte {
	if !bytes.Contains(params, []byte("trace")) && !bytes.Contains(params, []byte("baggage")) && !bytes.Contains(params, []byte(`\u`)) {
		return params
	}
	obj, err := jsonobj.Parse(params)
	if err != nil {
		return params
	}
	meta, err := jsonobj.Parse(obj.Get("_meta"))
	if err != nil {
		return params
	}
	kept := meta[:0:0]
	for _, m := range meta {
		if !traceMembers[m.Name] {
			kept = append(kept, m)
		}
	}
	if len(kept) == len(meta) {
		return params
	}
	return setMeta(obj, kept)
}

// injectTraceMeta returns params with the carrier's members in _meta,
// in place of any there.
func injectTraceMeta(params []byte, c propagation.MapCarrier) []byte {
	var obj, meta jsonobj.Object
	if len(params) > 0 {
		var err error
		if obj, err = jsonobj.Parse(params); err != nil {
			return params
		}
		meta, _ = jsonobj.Parse(obj.Get("_meta"))
	}
	kept := meta[:0:0]
	for _, m := range meta {
		if !traceMembers[m.Name] {
			kept = append(kept, m)
		}
	}
	for _, k := range []string{"traceparent", "tracestate"} {
		if v := c[k]; v != "" {
			kept = append(kept, jsonobj.Member{Name: k, Value: quote(v)})
		}
	}
	return setMeta(obj, kept)
}

// setMeta returns obj with its _meta member replaced by meta (added if
// absent).
func setMeta(obj jsonobj.Object, meta jsonobj.Object) []byte {
	v := jsontext.Value(meta.Marshal())
	for i := range obj {
		if obj[i].Name == "_meta" {
			obj[i].Value = v
			return obj.Marshal()
		}
	}
	return append(obj, jsonobj.Member{Name: "_meta", Value: v}).Marshal()
}
