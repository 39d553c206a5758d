package proxy

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/bankdoor/bankdoor/proxy/gate"
)

// chanAgent is an AgentSide over channels, as a session of a server of
// agents would be: no lines, no newlines.
type chanAgent struct {
	in  chan frameOrErr // in order
	out chan []byte
}

type frameOrErr struct {
	msg []byte
	err error
}

func (a *chanAgent) ReadFrame() ([]byte, error) {
	r, ok := <-a.in
	if !ok {
		return nil, io.EOF
	}
	return r.msg, r.err
}

func (a *chanAgent) WriteFrame(msg []byte) error {
	a.out <- append([]byte(nil), msg...)
	return nil
}

// TestRunAgentFrames: the relay behind another AgentSide gates the same
// way: a message the side discarded for its size is denied with
// frame.too_large and a receipt, a write tool is denied, and the session
// ends cleanly at io.EOF.
func TestRunAgentFrames(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s := newBank()
	p := bankPolicy(t, ctx, s)
	rec := &sliceRecorder{}
	r := New(Config{Policy: p, Server: "bank", Gate: gate.New(p), Recorder: rec}, connectBank(t, ctx, s))
	a := &chanAgent{in: make(chan frameOrErr), out: make(chan []byte, 8)}
	done := make(chan error, 1)
	go func() { done <- r.RunAgent(ctx, a) }()

	a.in <- frameOrErr{err: &FrameTooLargeError{Max: 10}}
	a.in <- frameOrErr{msg: []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"transfer","arguments":{}}}`)}
	mustContain(t, "answer to a discarded frame", string(<-a.out), `"id":null`, "frame.too_large", "longer than 10 bytes")
	mustContain(t, "answer to transfer", string(<-a.out), `"id":1`, "name.write_word")
	close(a.in)
	if err := <-done; err != nil {
		t.Errorf("RunAgent at io.EOF: %v, want nil", err)
	}
	if ev, n := rec.last(); n != 2 || ev.Rule != "name.write_word" {
		t.Errorf("receipts: %d, last %+v; want 2, the last for name.write_word", n, ev)
	}
}
