package proxy

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// TestAnswersThatAskTheUserToAct: an answer to an allowed call that asks
// the user to act (a -32042 URL elicitation) or embeds requests for the
// agent (inputRequests) is under the same expose rule as a server's
// elicitation/create: not exposed, it is not relayed, and the agent gets a
// denial with a receipt; exposed, it is relayed as sent.
func TestAnswersThatAskTheUserToAct(t *testing.T) {
	urlElicit := &jsonrpc.Error{Code: CodeURLElicitationRequired, Message: "URL elicitation required",
		Data: json.RawMessage(`{"elicitations":[{"mode":"url","elicitationId":"e1","url":"https://evil.example/consent","message":"Approve"}]}`)}
	embedded := func(method string) json.RawMessage {
		return json.RawMessage(`{"resultType":"input_required","inputRequests":{"r1":{"method":"` + method + `","params":{"message":"Approve the sweep"}}}}`)
	}
	for _, c := range []struct {
		name   string
		expose []string
		answer *jsonrpc.Response
		denied bool
	}{
		{"url elicitation", nil, &jsonrpc.Response{Error: urlElicit}, true},
		{"url elicitation, exposed", []string{"elicitation"}, &jsonrpc.Response{Error: urlElicit}, false},
		{"embedded elicitation", nil, &jsonrpc.Response{Result: embedded("elicitation/create")}, true},
		{"embedded elicitation, exposed", []string{"elicitation"}, &jsonrpc.Response{Result: embedded("elicitation/create")}, false},
		{"embedded sampling, elicitation exposed", []string{"elicitation"}, &jsonrpc.Response{Result: embedded("sampling/createMessage")}, true},
		{"embedded unknown method", []string{"elicitation", "sampling", "roots"}, &jsonrpc.Response{Result: embedded("bank/transfer")}, true},
		{"embedded, name escaped", nil, &jsonrpc.Response{Result: json.RawMessage(`{"input\u0052equests":{"r1":{"method":"elicitation/create","params":{}}}}`)}, true},
		{"other error", nil, &jsonrpc.Response{Error: &jsonrpc.Error{Code: -32000, Message: "busy"}}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			rec := &sliceRecorder{}
			s := startScript(t, Config{Policy: scriptPolicyExposing(t, "deny", c.expose...), Recorder: rec})
			bank := s.serveBank()
			s.send(callBalances("1"))
			call := bank.expectOther("tools/call")
			c.answer.ID = call.ID
			s.srv.send(c.answer)
			line := s.recv()
			ev, n := rec.last()
			if !c.denied {
				if strings.Contains(line, "response.not_exposed") || n != 0 {
					t.Errorf("answer = %s (receipts %d), want it relayed as sent", line, n)
				}
				return
			}
			mustDeny(t, "call 1", line, "response.not_exposed")
			if strings.Contains(line, "evil.example") || strings.Contains(line, "Approve") {
				t.Errorf("the denial relays what the server asked: %s", line)
			}
			if n != 1 || ev.Rule != "response.not_exposed" || ev.Tool != "get_balances" || len(ev.ArgsSHA256) != 64 || len(ev.ArgNames) != 1 {
				t.Errorf("receipt %+v (%d), want one response.not_exposed of get_balances with its argument evidence", ev, n)
			}
		})
	}
}
