package proxy

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/bankdoor/bankdoor/internal/jsonobj"
)

// TestCancelledCallEndsForTheRelay: a forwarded tools/call that the agent
// cancels is never answered by the server, as MCP allows. The relay
// forwards the cancellation, and the next call is not blocked: it is
// decided on a listing the server returned after the cancellation (here
// the server changed get_balances while handling the cancelled call, so
// the next call is denied), and a late answer to the cancelled call is
// dropped.
func TestCancelledCallEndsForTheRelay(t *testing.T) {
	s := startScript(t, Config{})
	bank := s.serveBank()
	s.send(callBalances("1"))
	call1 := bank.expectOther("tools/call")
	bank.set(scriptRugpulled)
	s.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"1","reason":"timed out"}}`)
	note := bank.expectNote("notifications/cancelled")
	params, err := jsonobj.Parse(note.Params)
	if err != nil || string(params.Get("requestId")) != jsonID(t, call1.ID) {
		t.Fatalf("the server got cancellation %s, want one of request %s", note.Params, jsonID(t, call1.ID))
	}
	s.send(callBalances("2"))
	mustDeny(t, "call 2", s.recv(), "pin.mismatch")

	// The late answer is dropped: what the server sends next is the first
	// thing the agent gets. The session goes on.
	s.srv.answer(call1, okResult)
	bank.set(scriptBalances)
	s.srv.notify("notifications/tools/list_changed")
	if line := s.recv(); !strings.Contains(line, "notifications/tools/list_changed") {
		t.Fatalf("the agent got %s, want the late answer to call 1 dropped", line)
	}
	s.send(callBalances("3"))
	call3 := bank.expectOther("tools/call")
	s.srv.answer(call3, okResult)
	mustResult(t, "call 3", s.recv())
}

// TestUnansweredCallTimesOut: a forwarded call the server does not answer
// within Config.CallTimeout, and the agent does not cancel (an SDK that
// gives up without notifications/cancelled), is cancelled by the relay:
// the server gets notifications/cancelled, the agent an error, and the
// next call goes through.
func TestUnansweredCallTimesOut(t *testing.T) {
	s := startScript(t, Config{CallTimeout: 100 * time.Millisecond})
	bank := s.serveBank()
	s.send(callBalances("1"))
	call1 := bank.expectOther("tools/call")
	line := s.recv()
	if !strings.Contains(line, `"id":"1"`) || !strings.Contains(line, `"error"`) || !strings.Contains(line, "did not answer") {
		t.Fatalf("call 1 = %s, want an error saying the server did not answer", line)
	}
	note := bank.expectNote("notifications/cancelled")
	if params, _ := jsonobj.Parse(note.Params); string(params.Get("requestId")) != jsonID(t, call1.ID) {
		t.Fatalf("the server got cancellation %s, want one of request %s", note.Params, jsonID(t, call1.ID))
	}
	s.send(callBalances("2"))
	call2 := bank.expectOther("tools/call")
	s.srv.answer(call2, okResult)
	mustResult(t, "call 2", s.recv())
}

// TestCancelBeforeItsTurn: a call cancelled while it waits for its turn
// is never forwarded.
func TestCancelBeforeItsTurn(t *testing.T) {
	s := startScript(t, Config{})
	bank := s.serveBank()
	s.send(callBalances("1"))
	call1 := bank.expectOther("tools/call")
	s.send(callBalances("2"))
	s.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"2"}}`)
	// The agent's frames are handled in order: once the ping reaches the
	// server, the cancellation has been handled.
	s.send(`{"jsonrpc":"2.0","id":"p","method":"ping"}`)
	s.srv.answer(bank.expectOther("ping"), `{}`)
	mustResult(t, "ping", s.recv())
	s.send(callBalances("3"))
	s.srv.answer(call1, okResult)
	mustResult(t, "call 1", s.recv())
	call3 := bank.expectOther("tools/call")
	s.srv.answer(call3, okResult)
	if line := s.recv(); !strings.Contains(line, `"id":"3"`) {
		t.Fatalf("the agent got %s, want the answer to call 3", line)
	}
}

// jsonID is the JSON of a request's id.
func jsonID(t *testing.T, id jsonrpc.ID) string {
	t.Helper()
	b, err := json.Marshal(id.Raw())
	if err != nil {
		t.Fatal(err)
	}
	return string(jsontext.Value(b))
}
