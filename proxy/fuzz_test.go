package proxy

import (
	"testing"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/bankdoor/bankdoor/internal/jsonobj"
)

// FuzzResponsePath holds the server's side of the relay to "what is
// relayed parsed strictly": whatever bytes a server's message carries, as
// a notification's params, a call's result or an error's data, every
// line the agent gets is strict JSON (RFC 7493).
func FuzzResponsePath(f *testing.F) {
	for _, seed := range []string{
		okResult,
		`{"resultType":"input_required","inputRequests":` + hostileInput + `}`,
		`{"content":[],"inputRequests":null,"inputRequests":` + hostileInput + `}`,
		"{\"content\":[{\"type\":\"text\",\"text\":\"\xff\"}]}",
		`{"content":[{"type":"text","text":"\ud800"}]}`,
		`{"content":[]} {"x":1}`,
		`{"level":"info","data":{"a":1,"a":2}}`,
		`[1,"\udfff"]`,
		``,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s := startScript(t, Config{Policy: scriptPolicyExposing(t, "deny", "logging", "elicitation")})
		bank := s.serveBank()
		answers := []*jsonrpc.Response{{Result: data}, {Error: &jsonrpc.Error{Code: -32000, Message: "busy", Data: data}}}
		for i, answer := range answers {
			id := string(rune('1' + i))
			s.send(callBalances(id))
			call := bank.expectOther("tools/call")
			s.srv.send(&jsonrpc.Request{Method: "notifications/message", Params: data})
			answer.ID = call.ID
			s.srv.send(answer)
			for {
				line := s.recv()
				if !jsontext.Value(line).IsValid() {
					t.Fatalf("the agent got a line that is not strict JSON: %q", line)
				}
				if obj, _ := jsonobj.Parse([]byte(line)); string(obj.Get("id")) == `"`+id+`"` {
					break
				}
			}
		}
	})
}
