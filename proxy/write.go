package proxy

import (
	"encoding/json"
	"errors"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/bankdoor/bankdoor/internal/jsonobj"
)

// envelope builds one JSON-RPC 2.0 message. id may be nil (a notification);
// members with a nil value are left out.
func envelope(id jsontext.Value, members ...jsonobj.Member) []byte {
	obj := jsonobj.Object{{Name: "jsonrpc", Value: jsontext.Value(`"2.0"`)}}
	if id != nil {
		obj = append(obj, jsonobj.Member{Name: "id", Value: id})
	}
	for _, m := range members {
		if m.Value != nil {
			obj = append(obj, m)
		}
	}
	return obj.Marshal()
}

// quote returns s as a JSON string.
func quote(s string) []byte {
	q, _ := jsontext.AppendQuote(nil, strings.ToValidUTF8(s, "\uFFFD"))
	return q
}

// writeAgent writes one message to the agent.
func (r *Relay) writeAgent(msg []byte) { r.writeRelated(msg, nil) }

// writeRelated writes one message to the agent, on the stream of the
// agent's request id if the agent side has such streams (RelatedWriter)
// and id is not nil.
func (r *Relay) writeRelated(msg []byte, id jsontext.Value) {
	r.outMu.Lock()
	defer r.outMu.Unlock()
	var err error
	if rw, ok := r.agent.(RelatedWriter); ok && id != nil {
		err = rw.WriteRelated(msg, id)
	} else {
		err = r.agent.WriteFrame(msg)
	}
	if err != nil {
		r.stop(errors.Join(errors.New("writing to the agent"), err))
	}
}

func (r *Relay) replyResult(id jsontext.Value, result []byte) {
	if result == nil {
		result = []byte("{}")
	}
	r.writeAgent(envelope(id, jsonobj.Member{Name: "result", Value: result}))
}

func (r *Relay) replyError(id jsontext.Value, code int, msg string, data any) {
	we := jsonrpc.Error{Code: int64(code), Message: msg}
	if data != nil {
		we.Data, _ = json.Marshal(data)
	}
	r.replyWireError(id, &we)
}

// replyWireError relays an error response.
func (r *Relay) replyWireError(id jsontext.Value, err error) {
	var we *jsonrpc.Error
	if !errors.As(err, &we) {
		we = &jsonrpc.Error{Code: codeInternalError, Message: err.Error()}
	}
	b, merr := json.Marshal(we)
	if merr != nil {
		b, _ = json.Marshal(&jsonrpc.Error{Code: codeInternalError, Message: "bankdoor: unencodable error from the bank server"})
	}
	r.writeAgent(envelope(id, jsonobj.Member{Name: "error", Value: b}))
}
