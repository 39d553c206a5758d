package proxy

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/bankdoor/bankdoor/internal/jsonobj"
)

// denial is a refusal decided by the relay or the gate.
type denial struct {
	code       int // JSON-RPC error code for the agent
	rule       string
	reason     string
	tool       string
	argNames   []string
	argsSHA256 string
}

// handleAgent handles one line from the agent.
func (r *Relay) handleAgent(ctx context.Context, line []byte) {
	f, dn := parseFrame(line)
	if dn != nil {
		// An invalid request is answered even without an id (JSON-RPC 2.0 §5:
		// the id is null when it could not be detected).
		id := jsontext.Value(nullJSON)
		if f != nil && f.id != nil {
			id = f.id
		}
		r.denyFrame(id, line, dn)
		return
	}
	if f.isResponse() {
		r.agentResponse(ctx, f)
		return
	}
	info, known := clientMethods[f.method]
	if !known {
		r.denyFrame(f.id, line, &denial{code: codeMethodNotFound, rule: "method.unknown",
			reason: fmt.Sprintf("method %q is not relayed by bankdoor", truncate(f.method, 128))})
		return
	}
	if info.route == routeToolsCall {
		r.toolsCall(ctx, f)
		return
	}
	if !jsontext.Value(f.raw).IsValid() {
		r.denyFrame(orNull(f.id), line, &denial{code: codeParseError, rule: "frame.parse",
			reason: "message has invalid UTF-8 or a lone surrogate"})
		return
	}
	if info.route == routeFeature && !r.exposes(info.feature) {
		r.denyFrame(f.id, line, &denial{code: codeMethodNotFound, rule: "method.not_exposed",
			reason: fmt.Sprintf("method %q needs %q in the server's expose list of the policy", f.method, info.feature)})
		return
	}
	params := []byte(f.params)
	switch info.route {
	case routeInitialize:
		params = r.filterInitializeParams(params)
	case routeCancel:
		var ok bool
		if params, ok = r.rewriteCancel(params); !ok {
			return
		}
	}
	r.forward(ctx, f, params)
}

func (r *Relay) exposes(feature string) bool { return r.srv != nil && r.srv.Exposes(feature) }

// forward sends an agent request or notification to the server.
func (r *Relay) forward(ctx context.Context, f *frame, params []byte) {
	if f.id == nil {
		r.send(ctx, nil, f.method, params, true)
		return
	}
	r.mu.Lock()
	_, busy := r.agentIDs[string(f.id)]
	r.mu.Unlock()
	if busy {
		r.replyError(f.id, codeInvalidRequest, "bankdoor: request id is already in use by an open request", nil)
		return
	}
	r.send(ctx, &pending{agentID: f.id, method: f.method}, f.method, params, false)
}

// rewriteCancel maps the requestId of notifications/cancelled to the id
// the relay used downstream. Cancellations of unknown requests are dropped.
func (r *Relay) rewriteCancel(params []byte) ([]byte, bool) {
	obj, err := jsonobj.Parse(params)
	if err != nil {
		return nil, false
	}
	r.mu.Lock()
	ours, ok := r.agentIDs[string(obj.Get("requestId"))]
	r.mu.Unlock()
	if !ok {
		return nil, false
	}
	for i := range obj {
		if obj[i].Name == "requestId" {
			obj[i].Value = jsontext.Value(fmt.Sprint(ours))
		}
	}
	return obj.Marshal(), true
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
	if err := r.down.Write(ctx, resp); err != nil {
		r.serverGone(err)
	}
}

// handleServerRequest handles a request or notification from the server.
func (r *Relay) handleServerRequest(ctx context.Context, m *jsonrpc.Request) {
	info, known := serverMethods[m.Method]
	allowed := known && (info.route != routeFeature || r.exposes(info.feature))
	switch {
	case known && info.route == routeLocal:
		if m.ID.IsValid() {
			r.down.Write(ctx, &jsonrpc.Response{ID: m.ID, Result: []byte("{}")})
		}
		return
	case known && info.route == routeToolsList:
		go r.listChanged(ctx, m)
		return
	case !allowed:
		reason := fmt.Sprintf("the bank server sent %q, which bankdoor does not relay to the agent", truncate(m.Method, 128))
		if known {
			reason = fmt.Sprintf("the bank server sent %q, which needs %q in the server's expose list of the policy", m.Method, info.feature)
		}
		r.log.Warn("denied a server message", "method", m.Method)
		if m.ID.IsValid() {
			r.down.Write(ctx, &jsonrpc.Response{ID: m.ID, Error: &jsonrpc.Error{Code: codeMethodNotFound, Message: "bankdoor: " + reason}})
		}
		return
	case info.route == routeCancel:
		return // cancellations of relayed server requests: the agent times out on its own
	}
	r.notifyAgent(m, m.ID)
}

// notifyAgent relays a server request or notification to the agent.
func (r *Relay) notifyAgent(m *jsonrpc.Request, sid jsonrpc.ID) {
	var id jsontext.Value
	if sid.IsValid() {
		id = jsontext.Value(r.ourID())
		r.mu.Lock()
		r.serverReqs[string(id)] = sid
		r.mu.Unlock()
	}
	r.writeAgent(envelope(id, jsonobj.Member{Name: "method", Value: quote(m.Method)}, jsonobj.Member{Name: "params", Value: jsontext.Value(m.Params)}))
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

// denyFrame records a denial and answers the agent with an error carrying
// id. A nil id means the frame was a well-formed notification: JSON-RPC
// never answers those, so the receipt is the only trace.
func (r *Relay) denyFrame(id jsontext.Value, raw []byte, dn *denial) {
	if dn.argsSHA256 == "" {
		sum := sha256.Sum256(raw)
		dn.argsSHA256 = hex.EncodeToString(sum[:])
	}
	rid, err := r.cfg.Recorder.Record(Event{
		Decision: "deny", Tool: dn.tool, Rule: dn.rule, Reason: dn.reason,
		ArgNames: dn.argNames, ArgsSHA256: dn.argsSHA256,
	})
	if err != nil {
		r.log.Error("cannot record a receipt; stopping", "err", err)
		if id != nil {
			r.replyError(id, codeInternalError, "bankdoor: denied, and the receipt could not be written: "+err.Error(), nil)
		}
		r.stop(fmt.Errorf("writing a receipt: %w", err))
		return
	}
	r.log.Info("denied", "rule", dn.rule, "tool", dn.tool, "receipt", rid)
	what := "request"
	if dn.tool != "" {
		what = fmt.Sprintf("tools/call %q", dn.tool)
	}
	msg := fmt.Sprintf("bankdoor denied %s: %s: %s (receipt %s)", what, dn.rule, dn.reason, rid)
	if id == nil {
		return
	}
	r.replyError(id, dn.code, msg, map[string]string{"rule": dn.rule, "reason": dn.reason, "receipt": rid})
}
