package proxy

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/bankdoor/bankdoor/internal/jsonobj"
	"github.com/bankdoor/bankdoor/proxy/gate"
)

// This file is the path of one agent frame, top to bottom:
//
//	agentLoop      read the frame (frame.too_large)
//	handleFrame    parse it (frame.parse, frame.invalid), route it by method
//	               (method.unknown, method.not_exposed): initialize is the
//	               relay's own handshake (initialize.go), what is not a
//	               tools/call is forwarded
//	toolsCall      read its params (params.invalid), reserve its id, run
//	               checks 1 to 4, which need no listing, and queue it
//	callLoop       one call at a time: wait until the previous forwarded
//	decideCall     call is answered, list the server (listing.go), run
//	               all six checks, record, forward, wait for the answer
//	deny           every refusal: a durable receipt, then the agent's error
//
// The agent's frames are read on one goroutine (agentLoop), the server's
// messages on another (serverLoop, server.go), and tools/calls are
// decided and forwarded on a third (callLoop), so that a call waiting for
// its turn never holds up the agent's other frames.

// maxQueuedCalls bounds the tools/calls waiting for their turn; the agent
// loop waits when it is reached.
const maxQueuedCalls = 256

// denial is a refusal decided by the relay or the gate.
type denial struct {
	code       int // JSON-RPC error code for the agent
	rule       string
	reason     string
	tool       string
	argNames   []string
	argsSHA256 string
	read       time.Time // when the request was read; zero if unknown
}

// toolCall is a tools/call that passed checks 1 to 4 and waits for its turn.
type toolCall struct {
	f         *frame
	call      gate.Call
	cancelled bool // the agent cancelled it before its turn; guarded by Relay.mu
}

// agentLoop reads the agent's frames in order and takes each down its path.
func (r *Relay) agentLoop(ctx context.Context) error {
	defer close(r.calls)
	for {
		raw, err := r.agent.ReadFrame()
		var tooLarge *FrameTooLargeError
		switch {
		case errors.As(err, &tooLarge):
			r.deny(jsontext.Value(nullJSON), nil, &denial{code: codeInvalidRequest, rule: "frame.too_large", reason: tooLarge.Error()})
			continue
		case errors.Is(err, io.EOF):
			r.agentEOF.Store(true)
			return nil
		case err != nil:
			return fmt.Errorf("reading from the agent: %w", err)
		}
		if r.stoppedErr() != nil {
			return nil // a receipt could not be written: nothing more goes through
		}
		if isBlank(raw) {
			continue
		}
		r.handle(func() { r.handleFrame(ctx, raw) })
	}
}

// handleFrame parses one frame and routes it by its method.
func (r *Relay) handleFrame(ctx context.Context, raw []byte) {
	read := time.Now()
	f, dn := parseFrame(raw)
	if dn != nil {
		dn.read = read
		// An invalid request is answered even without an id (JSON-RPC 2.0 §5:
		// the id is null when it could not be detected).
		id := jsontext.Value(nullJSON)
		if f != nil && f.id != nil {
			id = f.id
		}
		r.deny(id, raw, dn)
		return
	}
	f.read = read
	if f.isResponse() {
		r.agentResponse(ctx, f)
		return
	}
	f.trace = r.startTrace(f)
	if f.id == nil || f.method == "initialize" {
		defer f.trace.end() // answered, if at all, before handleFrame returns
	}
	info, known := clientMethods[f.method]
	switch {
	case !known:
		r.denyTraced(f.trace, f.id, raw, &denial{code: codeMethodNotFound, rule: "method.unknown", read: read,
			reason: fmt.Sprintf("method %q is not relayed by bankdoor", truncate(f.method, 128))})
		return
	case info.route == routeToolsCall:
		r.toolsCall(f)
		return
	case !jsontext.Value(f.raw).IsValid():
		r.denyTraced(f.trace, orNull(f.id), raw, &denial{code: codeParseError, rule: "frame.parse", read: read,
			reason: "message is not strict JSON (" + notStrict + ")"})
		return
	case info.route == routeFeature && !r.exposes(info.feature):
		r.denyTraced(f.trace, f.id, raw, &denial{code: codeMethodNotFound, rule: "method.not_exposed", read: read,
			reason: fmt.Sprintf("method %q needs %q in the server's expose list of the policy", f.method, info.feature)})
		return
	}
	switch info.route {
	case routeInitialize:
		r.initialize(ctx, f)
	case routeInitialized:
		// The relay sent its own when the server answered initialize.
	case routeCancel:
		r.cancel(ctx, f.params)
	default:
		r.forward(ctx, f, f.params)
	}
}

func (r *Relay) exposes(feature string) bool { return r.srv != nil && r.srv.Exposes(feature) }

// forward sends an agent request or notification that is not a tools/call
// to the server.
func (r *Relay) forward(ctx context.Context, f *frame, params []byte) {
	params = stripTraceMeta(params)
	if f.id == nil {
		r.send(ctx, nil, f.method, params, true)
		return
	}
	if !r.reserve(f) {
		return
	}
	p := &pending{agentID: f.id, method: f.method, progress: canonical(progressToken(params)),
		evidence: denial{argsSHA256: sha256Hex(f.raw), read: f.read}, trace: f.trace}
	if _, ok := r.send(ctx, p, f.method, params, false); !ok {
		r.release(f.id)
		f.trace.fail("server_gone")
	}
}

// reserve marks the frame's id as open, or refuses a frame whose id is
// still open (its answer would be ambiguous).
func (r *Relay) reserve(f *frame) bool {
	r.mu.Lock()
	_, busy := r.open[string(f.id)]
	if !busy {
		r.open[string(f.id)] = &openReq{}
	}
	r.mu.Unlock()
	if busy {
		r.denyTraced(f.trace, f.id, f.raw, &denial{code: codeInvalidRequest, rule: "frame.invalid", read: f.read,
			reason: "request id is already in use by an open request; use a new id"})
	}
	return !busy
}

// release forgets an open id that was answered without the server.
func (r *Relay) release(id jsontext.Value) {
	r.mu.Lock()
	delete(r.open, string(id))
	r.mu.Unlock()
}

// toolsCall reads one tools/call, runs the checks that need no listing
// and queues it for callLoop.
func (r *Relay) toolsCall(f *frame) {
	call, dn := r.parseToolsCall(f)
	f.trace.setTool(call.Tool)
	if dn != nil {
		dn.read = f.read
		r.denyTraced(f.trace, f.id, f.raw, dn)
		return
	}
	if f.id == nil {
		r.denyTraced(f.trace, nil, f.raw, &denial{code: codeInvalidRequest, rule: "frame.invalid", tool: call.Tool, read: f.read,
			reason: "tools/call sent as a notification (no id)"})
		return
	}
	gs := f.trace.gate("precheck")
	d := r.cfg.Gate.Precheck(call)
	endSpan(gs)
	if !d.Allow {
		r.denyTraced(f.trace, f.id, f.raw, gateDenial(f, call, d))
		return
	}
	if !r.reserve(f) {
		return
	}
	tc := &toolCall{f: f, call: call}
	r.mu.Lock()
	r.open[string(f.id)].call = tc
	r.mu.Unlock()
	r.calls <- tc
}

// callLoop decides and forwards the queued tools/calls one at a time.
func (r *Relay) callLoop(ctx context.Context) {
	for tc := range r.calls {
		r.mu.Lock()
		skip := tc.cancelled
		r.mu.Unlock()
		if !skip {
			r.handle(func() { r.decideCall(ctx, tc) })
		}
	}
}

// decideCall lists the server, runs the six checks with what it listed,
// records, forwards the call and waits for the server's answer, so that
// the next call is checked against a listing taken after that answer.
func (r *Relay) decideCall(ctx context.Context, tc *toolCall) {
	f, call := tc.f, tc.call
	gs := f.trace.gate("decide")
	live, err := r.livePins(ctx, call.Tool)
	if err != nil {
		endSpan(gs)
		if gone := r.goneErr(); gone != nil {
			r.release(f.id)
			r.replyError(f.id, CodeServerGone, "bankdoor: the bank server is gone: "+gone.Error()+"; restart the proxy", nil)
			f.trace.fail("server_gone")
			return
		}
		d := r.cfg.Gate.Decide(call) // for the argument evidence
		r.release(f.id)
		r.denyTraced(f.trace, f.id, f.raw, &denial{code: CodeDenied, rule: "pin.unavailable", tool: call.Tool, argNames: d.ArgNames, argsSHA256: d.ArgsSHA256, read: f.read,
			reason: fmt.Sprintf("the proxy could not list the server's tools to check the pin of %q: %v", truncate(call.Tool, 128), err)})
		return
	}
	call.Live, call.LiveDefinition = live.schema, live.definition
	d := r.cfg.Gate.Decide(call)
	endSpan(gs)
	if !d.Allow {
		r.release(f.id)
		r.denyTraced(f.trace, f.id, f.raw, gateDenial(f, call, d))
		return
	}
	f.trace.allowed()
	r.cfg.Observer.Decided("allow", "allow", call.Tool, time.Since(f.read))
	if r.cfg.Policy.Receipts == "all" {
		rs := f.trace.child("bankdoor.receipt.write")
		_, err := r.record(Event{Decision: "allow", Tool: call.Tool, Rule: "allow",
			Reason: "all six checks passed", ArgNames: d.ArgNames, ArgsSHA256: d.ArgsSHA256})
		endSpan(rs)
		if err != nil {
			r.release(f.id)
			f.trace.fail("receipt_failed")
			r.stopAnswering(fmt.Errorf("writing a receipt: %w", err), func() {
				r.replyError(f.id, codeInternalError, "bankdoor: not forwarded: the receipt could not be written: "+err.Error(), nil)
			})
			return
		}
	}
	params := jsonobj.Object{{Name: "name", Value: quote(call.Tool)}, {Name: "arguments", Value: d.Args}}
	tok := progressToken(f.params)
	if tok != nil {
		params = append(params, jsonobj.Member{Name: "_meta", Value: jsonobj.Object{{Name: "progressToken", Value: tok}}.Marshal()})
	}
	p := &pending{agentID: f.id, method: f.method, progress: canonical(tok), answered: make(chan struct{}),
		evidence: denial{tool: call.Tool, argNames: d.ArgNames, argsSHA256: d.ArgsSHA256, read: f.read}, trace: f.trace}
	ours, ok := r.send(ctx, p, f.method, params.Marshal(), false)
	if !ok {
		r.release(f.id)
		f.trace.fail("server_gone")
		return
	}
	r.mu.Lock()
	var late *pending // cancelled by the agent while it was being decided
	if tc.cancelled {
		late = r.endForwarded(ours)
	}
	r.mu.Unlock()
	if late != nil {
		r.cancelAtServer(ctx, ours, "cancelled by the client")
		late.ended("cancelled")
	}
	r.awaitAnswer(ctx, tc, p, ours)
	r.prefetch(ctx)
}

// awaitAnswer waits until the forwarded call p (the relay's request ours)
// is answered, ended by a cancellation, or has waited Config.CallTimeout:
// then the relay cancels it at the server and answers the agent itself.
func (r *Relay) awaitAnswer(ctx context.Context, tc *toolCall, p *pending, ours int64) {
	t := time.NewTimer(r.cfg.CallTimeout)
	defer t.Stop()
	select {
	case <-p.answered:
		return
	case <-ctx.Done():
		return
	case <-t.C:
	}
	r.mu.Lock()
	p = r.endForwarded(ours)
	r.mu.Unlock()
	if p == nil {
		return // answered or cancelled meanwhile
	}
	why := fmt.Sprintf("the bank server did not answer within %v", r.cfg.CallTimeout)
	r.cancelAtServer(ctx, ours, why)
	p.ended("timeout")
	r.replyError(tc.f.id, codeInternalError, fmt.Sprintf("bankdoor: tools/call %q: %s; the proxy cancelled it", truncate(tc.call.Tool, 128), why), nil)
}

// endForwarded ends, for the relay, the agent's request sent to the server
// as ours, which the server may never answer (a cancelled request): it is
// no longer pending, so a late answer is dropped, nor open, and, for a
// tools/call, a listing from before is stale, since the server may still
// act on it. It returns the request, or nil if it was answered or ended
// already; the caller tells the server, then calls ended. r.mu is held.
func (r *Relay) endForwarded(ours int64) *pending {
	p := r.pending[ours]
	if p == nil || p.agentID == nil {
		return nil
	}
	delete(r.pending, ours)
	delete(r.open, string(p.agentID))
	if p.answered != nil {
		r.gen++
	}
	return p
}

// ended finishes a request endForwarded took: callLoop may go on (after
// the cancellation was sent, so its next listing comes after it).
func (p *pending) ended(why string) {
	if p.answered != nil {
		close(p.answered)
	}
	p.trace.fail(why)
}

// cancelAtServer sends the server notifications/cancelled for the
// relay's request ours.
func (r *Relay) cancelAtServer(ctx context.Context, ours int64, reason string) {
	params := jsonobj.Object{{Name: "requestId", Value: jsontext.Value(fmt.Sprint(ours))}, {Name: "reason", Value: quote(reason)}}
	r.send(ctx, nil, "notifications/cancelled", params.Marshal(), true)
}

// gateDenial is the denial of the call of f the gate refused.
func gateDenial(f *frame, call gate.Call, d gate.Decision) *denial {
	return &denial{code: CodeDenied, rule: d.Rule, reason: d.Reason, tool: call.Tool, argNames: d.ArgNames, argsSHA256: d.ArgsSHA256, read: f.read}
}

func (r *Relay) goneErr() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.gone
}

// cancel handles the agent's notifications/cancelled. A cancelled request
// is never answered, as JSON-RPC allows (and the server may never answer
// it). A call still waiting for its turn is dropped. A request sent to the
// server ends for the relay (endForwarded): its requestId is rewritten to
// the relay's id and the cancellation forwarded, and a tools/call's
// successor is decided on a listing the server returns after it.
// Cancellations of unknown requests are dropped.
func (r *Relay) cancel(ctx context.Context, params []byte) {
	obj, err := jsonobj.Parse(params)
	if err != nil {
		return
	}
	reqID := string(obj.Get("requestId"))
	r.mu.Lock()
	o := r.open[reqID]
	var p *pending
	switch {
	case o == nil:
	case o.call != nil && o.ours == 0:
		o.call.cancelled = true
		delete(r.open, reqID)
	default:
		p = r.endForwarded(o.ours)
	}
	r.mu.Unlock()
	if o != nil && o.call != nil && o.ours == 0 {
		o.call.f.trace.fail("cancelled") // never answered
	}
	if p == nil {
		return
	}
	for i := range obj {
		if obj[i].Name == "requestId" {
			obj[i].Value = jsontext.Value(fmt.Sprint(o.ours))
		}
	}
	r.send(ctx, nil, "notifications/cancelled", stripTraceMeta(obj.Marshal()), true)
	p.ended("cancelled")
}

// agentResponse relays the agent's answer to a server request.
func (r *Relay) agentResponse(ctx context.Context, f *frame) {
	r.mu.Lock()
	sid, ok := r.serverReqs[string(f.id)]
	delete(r.serverReqs, string(f.id))
	r.mu.Unlock()
	if !ok {
		r.log.Warn("dropping a response from the agent to no open server request")
		return
	}
	if !jsontext.Value(f.raw).IsValid() {
		r.down.Write(ctx, &jsonrpc.Response{ID: sid, Error: &jsonrpc.Error{Code: codeInternalError, Message: "bankdoor: the agent's answer was not valid JSON"}})
		return
	}
	resp := &jsonrpc.Response{ID: sid, Result: []byte(f.result)}
	if f.errVal != nil {
		var we jsonrpc.Error
		if err := json.Unmarshal(f.errVal, &we); err != nil {
			we = jsonrpc.Error{Code: codeInternalError, Message: "bankdoor: the agent sent a malformed error"}
		}
		resp = &jsonrpc.Response{ID: sid, Error: &we}
	}
	if r.stoppedErr() != nil {
		return
	}
	if err := r.down.Write(ctx, resp); err != nil {
		r.serverGone(err)
	}
}

// nullJSON is the id of an answer to a frame whose id could not be read.
const nullJSON = "null"

// orNull returns id, or null for a frame without one.
func orNull(id jsontext.Value) jsontext.Value {
	if id == nil {
		return jsontext.Value(nullJSON)
	}
	return id
}

// deny records a denial and answers the agent with an error carrying id.
// A nil id means the frame was a well-formed notification: JSON-RPC never
// answers those, so the receipt is the only trace.
func (r *Relay) deny(id jsontext.Value, raw []byte, dn *denial) { r.denyTraced(nil, id, raw, dn) }

// denyTraced is deny of a request traced by t: the receipt's write is a
// span of its own, and the request's span ends with the rule and the
// receipt once the agent has its answer.
func (r *Relay) denyTraced(t *reqTrace, id jsontext.Value, raw []byte, dn *denial) {
	if dn.argsSHA256 == "" {
		dn.argsSHA256 = sha256Hex(raw)
	}
	var took time.Duration
	if !dn.read.IsZero() {
		took = time.Since(dn.read)
	}
	r.cfg.Observer.Decided("deny", dn.rule, dn.tool, took)
	rs := t.child("bankdoor.receipt.write")
	rid, err := r.record(Event{
		Decision: "deny", Tool: dn.tool, Rule: dn.rule, Reason: dn.reason,
		ArgNames: dn.argNames, ArgsSHA256: dn.argsSHA256,
	})
	endSpan(rs)
	defer t.denied(dn.code, dn.rule, rid)
	if err != nil {
		r.log.Error("cannot record a receipt; stopping", "err", err)
		r.stopAnswering(fmt.Errorf("writing a receipt: %w", err), func() {
			if id != nil {
				r.replyError(id, codeInternalError, "bankdoor: denied, and the receipt could not be written: "+err.Error(), nil)
			}
		})
		return
	}
	r.log.Info("denied", "rule", dn.rule, "tool", dn.tool, "receipt", rid)
	if id == nil {
		return
	}
	what := "request"
	if dn.tool != "" {
		what = fmt.Sprintf("tools/call %q", dn.tool)
	}
	msg := fmt.Sprintf("bankdoor denied %s: %s: %s (receipt %s)", what, dn.rule, dn.reason, rid)
	r.replyError(id, dn.code, msg, map[string]string{"rule": dn.rule, "reason": dn.reason, "receipt": rid})
}

// record has the Recorder make ev's receipt durable and tells the
// Observer how long that took.
func (r *Relay) record(ev Event) (string, error) {
	start := time.Now()
	id, err := r.cfg.Recorder.Record(ev)
	r.cfg.Observer.Recorded(ev.Decision, time.Since(start), err)
	return id, err
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// toolsCallParams are the members tools/call params may have.
var toolsCallParams = map[string]bool{"name": true, "arguments": true, "_meta": true}

// parseToolsCall reads name and arguments from tools/call params.
func (r *Relay) parseToolsCall(f *frame) (gate.Call, *denial) {
	call := gate.Call{Server: r.cfg.Server}
	invalid := func(reason string) (gate.Call, *denial) {
		return call, &denial{code: codeInvalidParams, rule: "params.invalid", tool: call.Tool, reason: reason}
	}
	if f.params == nil {
		return invalid(`tools/call needs params with a "name"`)
	}
	obj, err := jsonobj.ParseLenient(f.params)
	if err != nil {
		var dup *jsonobj.DuplicateError
		if errors.As(err, &dup) {
			return invalid(fmt.Sprintf("tools/call params have member %q twice", truncate(dup.Name, 64)))
		}
		return invalid("tools/call params are not one JSON object")
	}
	name, ok := jsonobj.String(obj.Get("name"))
	if !ok {
		return invalid(`tools/call params need "name" as a string`)
	}
	call.Tool = name
	for _, m := range obj {
		if !toolsCallParams[m.Name] {
			return invalid(fmt.Sprintf("unknown member %q in tools/call params (known: name, arguments, _meta)", truncate(m.Name, 64)))
		}
	}
	if meta := obj.Get("_meta"); meta != nil {
		if dn := metaDenial(meta); dn != nil {
			dn.tool = call.Tool
			return call, dn
		}
	}
	if a := obj.Get("arguments"); a != nil {
		call.Args = []byte(a)
	}
	return call, nil
}

// metaDenial returns why a tools/call's _meta is refused, or nil. The gate
// reads only name and arguments, so _meta is where the rest of the frame
// is held to strict JSON: one that is not gets frame.parse, as any other
// method's frame does.
func metaDenial(meta jsontext.Value) *denial {
	obj, err := jsonobj.Parse(meta)
	switch {
	case errors.Is(err, jsonobj.ErrNotObject):
		return &denial{code: codeInvalidParams, rule: "params.invalid", reason: `tools/call "_meta" must be an object`}
	case err != nil:
		return &denial{code: codeParseError, rule: "frame.parse", reason: `tools/call "_meta" is not strict JSON (` + notStrict + ")"}
	}
	if tok := obj.Get("progressToken"); tok != nil && !validID(tok) {
		return &denial{code: codeInvalidParams, rule: "params.invalid", reason: `tools/call "_meta" progressToken must be a string or an integer`}
	}
	return nil
}

// progressToken returns _meta.progressToken of a request's params, or
// nil. Of a tools/call's _meta, it is the only member the relay forwards.
func progressToken(params jsontext.Value) jsontext.Value {
	return paramsMeta(params).Get("progressToken")
}

// paramsMeta returns the _meta object of a request's params, or nil if
// it has none that parses.
func paramsMeta(params jsontext.Value) jsonobj.Object {
	obj, err := jsonobj.ParseLenient(params)
	if err != nil {
		return nil
	}
	meta, err := jsonobj.Parse(obj.Get("_meta"))
	if err != nil {
		return nil
	}
	return meta
}
