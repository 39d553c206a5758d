package proxy

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/bankdoor/bankdoor/internal/jsonobj"
	"github.com/bankdoor/bankdoor/proxy/gate"
	"github.com/bankdoor/bankdoor/proxy/pin"
)

// pinCache holds the schema_sha256 of every tool the server currently
// lists, as the relay last saw it. It is stale until the relay has listed
// all pages itself, and again after notifications/tools/list_changed.
type pinCache struct {
	refresh sync.Mutex // held while the relay lists the server, so calls wait for fresh pins
	mu      sync.Mutex // guards live and fresh; never held while waiting for the server
	live    map[string]string
	fresh   bool
}

func (c *pinCache) snapshot() (map[string]string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.live), c.fresh
}

// markStale makes the next call list the server again.
func (c *pinCache) markStale() {
	c.mu.Lock()
	c.fresh = false
	c.mu.Unlock()
}

// update merges pins seen in a tools/list page; replace sets them all.
func (c *pinCache) update(tools []pin.Tool, replace bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if replace || c.live == nil {
		c.live = make(map[string]string, len(tools))
	}
	for _, t := range tools {
		c.live[t.Name] = t.SHA256
	}
	if replace {
		c.fresh = true
	}
}

// livePins returns the current pins, listing the server first if stale.
func (r *Relay) livePins(ctx context.Context) (map[string]string, error) {
	if live, fresh := r.pins.snapshot(); fresh {
		return live, nil
	}
	r.pins.refresh.Lock()
	defer r.pins.refresh.Unlock()
	if live, fresh := r.pins.snapshot(); fresh {
		return live, nil // another caller refreshed while we waited
	}
	tools, err := pin.ListAll(ctx, func(ctx context.Context, method string, params []byte) ([]byte, error) {
		resp, err := r.call(ctx, method, params)
		if err != nil {
			return nil, err
		}
		return resp.Result, nil
	})
	if err != nil {
		return nil, err
	}
	r.pins.update(tools, true)
	live, _ := r.pins.snapshot()
	return live, nil
}

// listChanged re-checks the pins, then tells the agent the list changed.
func (r *Relay) listChanged(ctx context.Context, m *jsonrpc.Request) {
	r.pins.markStale()
	if _, err := r.livePins(ctx); err != nil {
		r.log.Warn("re-listing tools after list_changed failed; calls will retry", "err", err)
	}
	r.notifyAgent(m, jsonrpc.ID{})
}

// filterToolsList keeps the tools that pass checks 1–5, byte for byte.
func (r *Relay) filterToolsList(result []byte) ([]byte, error) {
	l, err := pin.ParseList(result)
	if err != nil {
		return nil, err
	}
	r.pins.update(l.Tools, false)
	var kept []byte
	kept = append(kept, '[')
	n := 0
	for _, t := range l.Tools {
		if d := r.cfg.Gate.Listable(r.cfg.Server, t.Name, t.SHA256); !d.Allow {
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

// toolsCallParams are the members tools/call params may have.
var toolsCallParams = map[string]bool{"name": true, "arguments": true, "_meta": true}

// toolsCall runs the gate on one tools/call and forwards it only if every
// check passes.
func (r *Relay) toolsCall(ctx context.Context, f *frame) {
	call, dn := r.parseToolsCall(f)
	if dn != nil {
		r.denyFrame(f.id, f.raw, dn)
		return
	}
	if f.id == nil {
		r.denyFrame(nil, f.raw, &denial{code: codeInvalidRequest, rule: "frame.invalid", tool: call.Tool,
			reason: "tools/call sent as a notification (no id)"})
		return
	}
	live, err := r.livePins(ctx)
	if err != nil {
		r.log.Warn("cannot list the server's tools to check pins", "err", err)
	}
	call.Live = live
	d := r.cfg.Gate.Decide(call)
	if !d.Allow {
		r.denyFrame(f.id, f.raw, &denial{code: CodeDenied, rule: d.Rule, reason: d.Reason, tool: call.Tool,
			argNames: d.ArgNames, argsSHA256: d.ArgsSHA256})
		return
	}
	if r.cfg.Policy.Receipts == "all" {
		if _, err := r.cfg.Recorder.Record(Event{Decision: "allow", Tool: call.Tool, Rule: "allow",
			Reason: "all six checks passed", ArgNames: d.ArgNames, ArgsSHA256: d.ArgsSHA256}); err != nil {
			r.replyError(f.id, codeInternalError, "bankdoor: not forwarded: the receipt could not be written: "+err.Error(), nil)
			r.stop(fmt.Errorf("writing a receipt: %w", err))
			return
		}
	}
	params := jsonobj.Object{{Name: "name", Value: quote(call.Tool)}, {Name: "arguments", Value: d.Args}}
	if tok := progressToken(f.params); tok != nil {
		params = append(params, jsonobj.Member{Name: "_meta", Value: jsonobj.Object{{Name: "progressToken", Value: tok}}.Marshal()})
	}
	r.forward(ctx, f, params.Marshal())
}

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
			return invalid(fmt.Sprintf("tools/call params have member %q twice", dup.Name))
		}
		return invalid("tools/call params: " + err.Error())
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
	if meta := obj.Get("_meta"); meta != nil && !validMeta(meta) {
		return invalid(`tools/call "_meta" must be an object of valid JSON whose progressToken, if any, is a string or an integer`)
	}
	if a := obj.Get("arguments"); a != nil {
		call.Args = []byte(a)
	}
	return call, nil
}

// validMeta reports whether _meta is strict JSON with a usable progressToken.
func validMeta(meta jsontext.Value) bool {
	obj, err := jsonobj.Parse(meta)
	if err != nil {
		return false
	}
	tok := obj.Get("progressToken")
	return tok == nil || validID(tok)
}

// progressToken returns _meta.progressToken of tools/call params, or nil.
// It is the only member of _meta the relay forwards.
func progressToken(params jsontext.Value) jsontext.Value {
	obj, err := jsonobj.ParseLenient(params)
	if err != nil {
		return nil
	}
	meta, err := jsonobj.Parse(obj.Get("_meta"))
	if err != nil {
		return nil
	}
	return meta.Get("progressToken")
}
