package proxy

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/bankdoor/bankdoor/internal/jsonobj"
	"github.com/bankdoor/bankdoor/proxy/pin"
)

// Versions are the MCP protocol versions bankdoor implements, newest
// first. The relay asks the server for the first (pin.ProtocolVersion) and
// accepts any of them in its answer; it answers an agent that asks for one
// of them with that version, and any other agent (a newer version, a
// version that does not exist) with the first, as MCP's version
// negotiation has it. What the agent asks for never reaches the server.
var Versions = []string{pin.ProtocolVersion, "2025-06-18", "2025-03-26", "2024-11-05"}

// initialize performs the session's handshake with the server itself: the
// relay sends its own initialize (its own protocol version, the agent's
// clientInfo, the agent's capabilities the policy relays), checks the
// version the server answers with, sends notifications/initialized at once
// (so a --url server's notification stream opens whatever the agent does
// next) and answers the agent with the server's result, its capabilities
// filtered and its protocolVersion the one negotiated with the agent.
func (r *Relay) initialize(ctx context.Context, f *frame) {
	if f.id == nil {
		r.denyTraced(f.trace, nil, f.raw, &denial{code: codeInvalidRequest, rule: "frame.invalid", reason: "initialize sent as a notification (no id)"})
		return
	}
	r.mu.Lock()
	again := r.handshake
	r.handshake = true
	r.mu.Unlock()
	if again {
		r.denyTraced(f.trace, f.id, f.raw, &denial{code: codeInvalidRequest, rule: "frame.invalid", reason: "initialize was already sent in this session"})
		return
	}
	agentParams, _ := jsonobj.Parse(f.params) // nil if absent or not strict JSON
	ictx, stop := r.untilInputCloses(ctx)
	resp, err := r.call(ictx, "initialize", r.serverInitParams(agentParams), r.cfg.ListTimeout)
	stop()
	var we *jsonrpc.Error
	switch {
	case errors.As(err, &we):
		r.replyWireError(f.id, we)
		return
	case err != nil:
		r.replyError(f.id, CodeServerGone, "bankdoor: the bank server did not complete initialize: "+err.Error(), nil)
		return
	}
	result, err := jsonobj.Parse(resp.Result)
	if err != nil {
		r.refuseSession(f.id, fmt.Errorf("the bank server's initialize result is not one JSON object: %v", err))
		return
	}
	v, _ := jsonobj.String(result.Get("protocolVersion"))
	if !slices.Contains(Versions, v) {
		r.refuseSession(f.id, fmt.Errorf("the bank server answered initialize with protocol version %q, which bankdoor does not implement (%s)", truncate(v, 64), strings.Join(Versions, ", ")))
		return
	}
	if _, ok := r.send(ctx, nil, "notifications/initialized", []byte("{}"), true); !ok {
		r.replyError(f.id, CodeServerGone, "bankdoor: the bank server is gone", nil)
		return
	}
	requested, _ := jsonobj.String(agentParams.Get("protocolVersion"))
	r.version.Store(agentVersion(requested))
	r.replyResult(f.id, r.agentInitResult(result, agentVersion(requested)))
}

// errInputClosed ends the wait for the server's answer to initialize when
// the agent's input ends (see InputCloser).
var errInputClosed = errors.New("the agent closed its input")

// untilInputCloses returns ctx, cancelled with errInputClosed when the
// agent's side says its input ended, and the function that releases it.
func (r *Relay) untilInputCloses(ctx context.Context) (context.Context, func()) {
	ic, ok := r.agent.(InputCloser)
	if !ok {
		return ctx, func() {}
	}
	ctx, cancel := context.WithCancelCause(ctx)
	go func() {
		select {
		case <-ic.InputClosed():
			cancel(errInputClosed)
		case <-ctx.Done():
		}
	}()
	return ctx, func() { cancel(nil) }
}

// refuseSession answers the agent's initialize with err and stops the
// relay: a session the relay cannot speak to the server in goes no further.
func (r *Relay) refuseSession(id jsontext.Value, err error) {
	r.replyError(id, codeInternalError, "bankdoor: "+err.Error(), nil)
	r.stop(err)
}

// agentVersion is the version the relay answers an agent asking for v.
func agentVersion(v string) string {
	if slices.Contains(Versions, v) {
		return v
	}
	return Versions[0]
}

// serverInitParams are the params of the relay's own initialize: its
// protocol version, the agent's capabilities the policy relays (roots,
// sampling, elicitation unless exposed are dropped, experimental always,
// so the server never asks for what the proxy would refuse), and the
// agent's clientInfo if it is an object, else the relay's own.
func (r *Relay) serverInitParams(agent jsonobj.Object) []byte {
	caps := jsontext.Value("{}")
	if c := agent.Get("capabilities"); c != nil {
		caps = jsontext.Value(r.filterCapabilities(c, clientCapabilities))
	}
	info := agent.Get("clientInfo")
	if info.Kind() != '{' {
		info = jsontext.Value(`{"name":"bankdoor","version":"1"}`)
	}
	return jsonobj.Object{
		{Name: "protocolVersion", Value: quote(pin.ProtocolVersion)},
		{Name: "capabilities", Value: caps},
		{Name: "clientInfo", Value: info},
	}.Marshal()
}

// agentInitResult is the server's initialize result for the agent: tools
// always advertised, the other server capabilities only when exposed, and
// protocolVersion the one negotiated with the agent.
func (r *Relay) agentInitResult(result jsonobj.Object, version string) []byte {
	out := slices.Clone(result)
	for i, m := range out {
		switch m.Name {
		case "capabilities":
			out[i].Value = r.filterCapabilities(m.Value, serverCapabilities)
		case "protocolVersion":
			out[i].Value = quote(version)
		}
	}
	return out.Marshal()
}

// filterCapabilities keeps the members of a capabilities object that
// allowed names and whose feature, if any, is exposed.
func (r *Relay) filterCapabilities(raw []byte, allowed map[string]string) []byte {
	caps, err := jsonobj.Parse(raw)
	if err != nil {
		return []byte("{}")
	}
	var kept jsonobj.Object
	for _, c := range caps {
		feature, ok := allowed[c.Name]
		if ok && (feature == "" || r.exposes(feature)) {
			kept = append(kept, c)
		}
	}
	return kept.Marshal()
}
