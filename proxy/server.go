package proxy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/bankdoor/bankdoor/internal/jsonobj"
	"github.com/bankdoor/bankdoor/proxy/pin"
)

// This file is the server's side of the relay: what serverLoop does with
// each message the bank server sends, on one goroutine, in order.

// handleResponse routes a server response to whoever asked.
func (r *Relay) handleResponse(m *jsonrpc.Response) {
	id, ok := m.ID.Raw().(int64)
	r.mu.Lock()
	p := r.pending[id]
	if ok && p != nil {
		delete(r.pending, id)
		if p.agentID != nil {
			delete(r.open, string(p.agentID))
			r.answering++ // until its answer is written: see drain
		}
		if p.answered != nil {
			r.gen++ // a listing from before this answer decides nothing more
		}
	}
	r.mu.Unlock()
	if !ok || p == nil {
		r.log.Warn("dropping a response from the bank server to no open request", "id", m.ID.Raw())
		return
	}
	if p.agentID != nil {
		defer func() {
			r.mu.Lock()
			r.answering--
			r.mu.Unlock()
		}()
	}
	strict := strictAnswer(m)
	if p.done != nil {
		p.done <- ownAnswer{resp: m, malformed: !strict}
		return
	}
	p.trace.arrived(m)
	defer p.trace.end() // once the answer is written
	if p.answered != nil {
		close(p.answered) // callLoop may list the server again right away
	}
	if !strict {
		dn, what := answerDenial(p, "response.malformed")
		dn.reason = what + " is not strict JSON (" + notStrict + "); it is not relayed"
		r.denyTraced(p.trace, p.agentID, nil, &dn)
		return
	}
	if dn := r.unexposedAnswer(p, m); dn != nil {
		r.denyTraced(p.trace, p.agentID, nil, dn)
		return
	}
	defer func() { r.cfg.Observer.Answered(p.method, time.Since(p.evidence.read)) }()
	if m.Error != nil {
		r.replyWireError(p.agentID, m.Error)
		return
	}
	result := []byte(m.Result)
	if p.method == "tools/list" {
		var err error
		if result, err = r.filterToolsList(result); err != nil {
			r.replyError(p.agentID, codeInternalError, "bankdoor: the bank server sent a tools/list result the proxy cannot check: "+err.Error(), nil)
			return
		}
	}
	r.replyResult(p.agentID, result)
}

// CodeURLElicitationRequired is the JSON-RPC error with which a server
// answers a request by asking the user to visit URLs (MCP 2025-11-25,
// URL mode elicitation).
const CodeURLElicitationRequired = -32042

// inputRequestFeatures maps the methods a server may embed in a result
// (inputRequests, the multi-round-trip results of SEP-2322) to the
// feature that must be exposed for them to reach the agent.
var inputRequestFeatures = map[string]string{
	"elicitation/create":     "elicitation",
	"sampling/createMessage": "sampling",
	"roots/list":             "roots",
}

// unexposedAnswer returns the denial of an answer that asks the user or
// the agent to act through a feature the policy does not expose: a -32042
// URL elicitation, or requests embedded in a result. Like a server's
// elicitation/create, such an answer is not relayed unless exposed; unlike
// it, it answers the agent's own request, so it leaves a receipt.
// It is called only with an answer strictAnswer passed, so the parse of
// its result is the strict one.
func (r *Relay) unexposedAnswer(p *pending, m *jsonrpc.Response) *denial {
	dn, what := answerDenial(p, "response.not_exposed")
	var we *jsonrpc.Error
	if m.Error != nil && errors.As(m.Error, &we) && we.Code == CodeURLElicitationRequired {
		if r.exposes("elicitation") {
			return nil
		}
		dn.reason = what + ` asks the user to open a URL (error -32042, URL elicitation), which needs "elicitation" in the server's expose list of the policy`
		return &dn
	}
	if m.Error != nil || !mayEmbedRequests(m.Result) {
		return nil
	}
	obj, err := jsonobj.Parse(m.Result)
	if err != nil {
		return nil // strict JSON but not an object: it embeds nothing
	}
	reqs := obj.Get("inputRequests")
	if reqs == nil || string(reqs) == "null" {
		return nil
	}
	methods, err := jsonobj.Parse(reqs)
	if err != nil {
		dn.reason = what + " embeds requests (inputRequests) that are not an object of requests"
		return &dn
	}
	for _, req := range methods {
		method, _ := jsonobj.String(mustObject(req.Value).Get("method"))
		feature, known := inputRequestFeatures[method]
		if !known {
			dn.reason = fmt.Sprintf("%s embeds a request (inputRequests) of method %q, which bankdoor never relays", what, truncate(method, 64))
			return &dn
		}
		if !r.exposes(feature) {
			dn.reason = fmt.Sprintf("%s embeds a request of method %q (inputRequests), which needs %q in the server's expose list of the policy", what, method, feature)
			return &dn
		}
	}
	return nil
}

// answerDenial is the denial, under rule, of the server's answer to the
// request p, and how a reason names that answer.
func answerDenial(p *pending, rule string) (denial, string) {
	dn := p.evidence
	dn.code = CodeDenied
	dn.rule = rule
	if dn.tool != "" {
		return dn, fmt.Sprintf("the bank server's answer to tools/call %q", truncate(dn.tool, 128))
	}
	return dn, fmt.Sprintf("the bank server's answer to %s", p.method)
}

// notStrict says what strict JSON excludes, for reasons and logs.
const notStrict = "a member name twice, invalid UTF-8, a lone surrogate or data after the value"

// strictAnswer reports whether what the relay would pass on of the
// server's answer m, its result or its error's data, is strict JSON: one
// value under RFC 7493 (I-JSON), at every depth. The SDK's decoder is
// lenient (the last of two members wins, invalid UTF-8 is let through), so
// this is the check every decision on an answer stands on. The error's
// message reaches the agent re-encoded, so only its bytes are checked.
func strictAnswer(m *jsonrpc.Response) bool {
	if m.Error != nil {
		var we *jsonrpc.Error
		if !errors.As(m.Error, &we) {
			return true // not from the wire: the relay's own
		}
		return utf8.ValidString(we.Message) && (we.Data == nil || jsontext.Value(we.Data).IsValid())
	}
	return m.Result == nil || jsontext.Value(m.Result).IsValid()
}

// mayEmbedRequests reports whether result may have an inputRequests
// member: it spells the name, or has a \u escape that could spell it. Most
// results are then checked (strictAnswer) but not split into members.
func mayEmbedRequests(result []byte) bool {
	return bytes.Contains(result, []byte("inputRequests")) || bytes.Contains(result, []byte(`\u`))
}

// mustObject parses v as an object, or returns none.
func mustObject(v []byte) jsonobj.Object {
	obj, _ := jsonobj.Parse(v)
	return obj
}

// handleServerRequest handles a request or notification from the server.
// One whose params are not strict JSON is dropped before anything else
// (a request is answered with an error): nothing of it reaches the agent.
func (r *Relay) handleServerRequest(ctx context.Context, m *jsonrpc.Request) {
	if m.Params != nil && !jsontext.Value(m.Params).IsValid() {
		r.log.Warn("dropped a server message that is not strict JSON", "method", truncate(m.Method, 128))
		if m.ID.IsValid() {
			r.down.Write(ctx, &jsonrpc.Response{ID: m.ID, Error: &jsonrpc.Error{Code: codeParseError,
				Message: "bankdoor: params are not strict JSON (" + notStrict + "); not relayed"}})
		}
		return
	}
	info, known := serverMethods[m.Method]
	allowed := known && (info.route != routeFeature || r.exposes(info.feature))
	switch {
	case known && info.route == routeLocal:
		if m.ID.IsValid() {
			r.down.Write(ctx, &jsonrpc.Response{ID: m.ID, Result: []byte("{}")})
		}
		return
	case known && info.route == routeToolsList:
		// The relay lists the server again before every call anyway;
		// the notification only makes a listing already in flight stale.
		r.mu.Lock()
		r.gen++
		r.mu.Unlock()
		r.notifyAgent(m, jsonrpc.ID{})
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
	msg := envelope(id, jsonobj.Member{Name: "method", Value: quote(m.Method)}, jsonobj.Member{Name: "params", Value: jsontext.Value(m.Params)})
	r.writeRelated(msg, r.relatedTo(m))
}

// relatedTo returns the id of the agent's request that the server's
// message m relates to, or nil if none (see "Related messages" in the
// package doc). It is called on serverLoop, in the order the server's
// messages arrive, so a request is still open for every message the
// server sent before answering it.
func (r *Relay) relatedTo(m *jsonrpc.Request) jsontext.Value {
	token := ""
	switch {
	case m.Method == "notifications/progress":
		obj, err := jsonobj.ParseLenient(m.Params)
		if err != nil {
			return nil
		}
		if token = canonical(obj.Get("progressToken")); token == "" {
			return nil
		}
	case m.Method != "notifications/message" && !m.ID.IsValid():
		return nil // a change of the server's lists or resources: the session's
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var id jsontext.Value
	n := 0
	for _, p := range r.pending {
		if p.agentID != nil && (token == "" || p.progress == token) {
			id, n = p.agentID, n+1
		}
	}
	if n != 1 {
		return nil
	}
	return id
}

// canonical returns the canonical form (RFC 8785) of a JSON value, so that
// a progress token echoed with other escapes or number spelling still
// matches; "" for nil or invalid JSON.
func canonical(v jsontext.Value) string {
	if v == nil {
		return ""
	}
	c := jsontext.Value(bytes.Clone(v))
	if c.Canonicalize() != nil {
		return ""
	}
	return string(c)
}

// filterToolsList keeps the tools that pass checks 1–5, byte for byte,
// each checked against its own definition in this page.
func (r *Relay) filterToolsList(result []byte) ([]byte, error) {
	l, err := pin.ParseList(result)
	if err != nil {
		return nil, err
	}
	var kept []byte
	kept = append(kept, '[')
	n := 0
	for _, t := range l.Tools {
		if d := r.cfg.Gate.Listable(r.cfg.Server, t.Name, t.SHA256, t.Definition); !d.Allow {
			r.log.Info("hid a tool from tools/list", "tool", t.Name, "rule", d.Rule)
			continue
		}
		if n > 0 {
			kept = append(kept, ',')
		}
		kept = append(kept, t.Raw...)
		n++
	}
	kept = append(kept, ']')
	obj := jsonobj.Object{{Name: "tools", Value: kept}}
	if l.NextCursor != nil {
		obj = append(obj, jsonobj.Member{Name: "nextCursor", Value: l.NextCursor})
	}
	return obj.Marshal(), nil
}
