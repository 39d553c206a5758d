package proxy

import (
	"context"
	"encoding/json"
	"io"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/bankdoor/bankdoor/proxy/gate"
)

// relatedSide is an AgentSide with streams per request (a RelatedWriter),
// which records for each message written the request it was sent on.
type relatedSide struct {
	in  chan []byte
	out chan string
}

func (s *relatedSide) ReadFrame() ([]byte, error) {
	msg, ok := <-s.in
	if !ok {
		return nil, io.EOF
	}
	return msg, nil
}

func (s *relatedSide) WriteFrame(msg []byte) error { return s.WriteRelated(msg, nil) }

// WriteRelated records "WHAT on ID": WHAT is the method, or "answer" and
// the id of an answer; ID is the related request's id, or "-" for none.
func (s *relatedSide) WriteRelated(msg []byte, id jsontext.Value) error {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	json.Unmarshal(msg, &m)
	what := m.Method
	if what == "" {
		what = "answer " + string(m.ID)
	}
	on := "-"
	if id != nil {
		on = string(id)
	}
	s.out <- what + " on " + on
	return nil
}

func (s *relatedSide) next(t *testing.T) string {
	t.Helper()
	select {
	case w := <-s.out:
		return w
	case <-time.After(10 * time.Second):
		t.Fatal("the relay wrote nothing to the agent within 10s")
		return ""
	}
}

// TestRelatedMessages: the relay sends a server message on the stream of
// the agent's request it relates to (see "Related messages" in the
// package doc): progress by its token, a log message or a server request
// when one agent request is open at the server; a change notification,
// progress of an unknown or answered token, and a log message while two
// requests are open relate to none. The answer comes after the messages
// the server sent before it.
func TestRelatedMessages(t *testing.T) {
	cfg := Config{Policy: scriptPolicyExposing(t, "deny", "logging", "elicitation", "resources"), Server: "bank", Recorder: &sliceRecorder{}}
	cfg.Gate = gate.New(cfg.Policy)
	srv := newScriptServer(t)
	side := &relatedSide{in: make(chan []byte), out: make(chan string, 64)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- New(cfg, srv).RunAgent(ctx, side) }()
	t.Cleanup(func() { cancel(); srv.Close(); <-done })
	send := func(s string) { side.in <- []byte(s) }
	expect := func(want ...string) {
		t.Helper()
		for _, w := range want {
			if got := side.next(t); got != w {
				t.Fatalf("the relay wrote %q, want %q", got, w)
			}
		}
	}
	note := func(method, params string) {
		srv.send(&jsonrpc.Request{Method: method, Params: json.RawMessage(params)})
	}

	send(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"agent","version":"1"}}}`)
	srv.handshake()
	expect(`answer "init" on -`)
	bank := (&scriptSession{srv: srv}).serveBank()

	send(`{"jsonrpc":"2.0","id":"c1","method":"tools/call","params":{"name":"get_balances","arguments":{"account":"acc_1"},"_meta":{"progressToken":"t1"}}}`)
	call := bank.expectOther("tools/call")
	note("notifications/progress", `{"progressToken":"t1","progress":1}`)
	note("notifications/progress", `{"progressToken":"\u0074\u0031","progress":2}`)
	note("notifications/progress", `{"progressToken":"zz","progress":1}`)
	note("notifications/message", `{"level":"info","data":"working"}`)
	eid, _ := jsonrpc.MakeID("e1")
	srv.send(&jsonrpc.Request{ID: eid, Method: "elicitation/create", Params: json.RawMessage(`{"message":"ok?","requestedSchema":{"type":"object"}}`)})
	note("notifications/resources/updated", `{"uri":"bank://x"}`)
	srv.answer(call, okResult)
	note("notifications/progress", `{"progressToken":"t1","progress":3}`)
	expect(`notifications/progress on "c1"`, `notifications/progress on "c1"`, `notifications/progress on -`,
		`notifications/message on "c1"`, `elicitation/create on "c1"`, `notifications/resources/updated on -`,
		`answer "c1" on -`, `notifications/progress on -`)

	send(`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":{"progressToken":5}}}`)
	send(`{"jsonrpc":"2.0","id":2,"method":"ping","params":{"_meta":{"progressToken":6}}}`)
	p1, p2 := bank.expectOther("ping"), bank.expectOther("ping")
	note("notifications/message", `{"level":"info","data":"which?"}`)
	note("notifications/progress", `{"progressToken":6.0,"progress":1}`)
	srv.answer(p1, `{}`)
	note("notifications/message", `{"level":"info","data":"the second"}`)
	srv.answer(p2, `{}`)
	expect(`notifications/message on -`, `notifications/progress on 2`, `answer 1 on -`,
		`notifications/message on 2`, `answer 2 on -`)
}
