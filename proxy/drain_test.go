package proxy

import (
	"context"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bankdoor/bankdoor/proxy/gate"
)

// hookedAgent is an AgentSide fed from a list of frames, then io.EOF,
// that calls onWrite with each frame the relay writes before taking it.
type hookedAgent struct {
	frames  chan []byte
	onWrite func(msg []byte)
	mu      sync.Mutex
	written []string
}

func (a *hookedAgent) ReadFrame() ([]byte, error) {
	f, ok := <-a.frames
	if !ok {
		return nil, io.EOF
	}
	return f, nil
}

func (a *hookedAgent) WriteFrame(msg []byte) error {
	a.onWrite(msg)
	a.mu.Lock()
	a.written = append(a.written, string(msg))
	a.mu.Unlock()
	return nil
}

// TestDrainWaitsForAnswersBeingWritten: from the moment the server's
// answer is taken off the open requests until it is written to the
// agent, drain still counts it, so an agent that closed its input gets
// it before the relay stops (bankdoor proxy's stdout is not cut short).
// It checks what drain sees while the answer is being written, so it
// needs no timing.
func TestDrainWaitsForAnswersBeingWritten(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s := newBank()
	p := bankPolicy(t, ctx, s)
	var r *Relay
	seen := make(chan int, 8)
	a := &hookedAgent{frames: make(chan []byte, 4), onWrite: func(msg []byte) {
		if strings.Contains(string(msg), `"id":2`) {
			seen <- r.unanswered()
		}
	}}
	r = New(Config{Policy: p, Server: "bank", Gate: gate.New(p), Recorder: &sliceRecorder{}}, connectBank(t, ctx, s))
	a.frames <- []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"agent","version":"1"}}}`)
	a.frames <- []byte(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"get_balances","arguments":{}}}`)
	close(a.frames)
	if err := r.RunAgent(ctx, a); err != nil {
		t.Fatal(err)
	}
	select {
	case n := <-seen:
		if n == 0 {
			t.Error("while the answer to id 2 was being written, drain saw no unanswered request: the relay may stop before the agent gets it")
		}
	default:
		t.Fatalf("the answer to id 2 was never written; the agent got %q", a.written)
	}
}
