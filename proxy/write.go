package proxy

import (
	"bytes"
	"encoding/json"
	"errors"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// envelope builds one JSON-RPC 2.0 message. id may be nil (a notification);
// kv are member names and raw values, nil values are left out.
func envelope(id jsontext.Value, kv ...any) []byte {
	var b bytes.Buffer
	b.WriteString(`{"jsonrpc":"2.0"`)
	if id != nil {
		b.WriteString(`,"id":`)
		b.Write(id)
	}
	for i := 0; i+1 < len(kv); i += 2 {
		v := kv[i+1].([]byte)
		if v == nil {
			continue
		}
		b.WriteString(`,"` + kv[i].(string) + `":`)
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes()
}

// quote returns s as a JSON string.
func quote(s string) []byte {
	q, err := jsontext.AppendQuote(nil, s)
	if err != nil { // invalid UTF-8: AppendQuote replaces it and reports
		return q
	}
	return q
}

// writeAgent writes one message line to the agent.
func (r *Relay) writeAgent(msg []byte) {
	r.outMu.Lock()
	defer r.outMu.Unlock()
	msg = append(msg, '\n')
	if _, err := r.out.Write(msg); err != nil {
		r.stop(errors.Join(errors.New("writing to the agent"), err))
	}
}

func (r *Relay) replyResult(id jsontext.Value, result []byte) {
	if result == nil {
		result = []byte("{}")
	}
	r.writeAgent(envelope(id, "result", result))
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
	r.writeAgent(envelope(id, "error", b))
}
