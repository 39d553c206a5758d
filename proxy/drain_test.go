package proxy

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

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
	owedWhileWritten(t, seen, a, "id 2")
}

// owedWhileWritten checks what drain counted (seen) while the answer to
// what was being written: at least one owed answer, or Run could return
// and close the agent's stream before the agent got it.
func owedWhileWritten(t *testing.T, seen <-chan int, a *hookedAgent, what string) {
	t.Helper()
	select {
	case n := <-seen:
		if n == 0 {
			t.Errorf("while the answer to %s was being written, drain saw nothing owed: Run may return and close the agent's stream before the agent gets it", what)
		}
	default:
		a.mu.Lock()
		defer a.mu.Unlock()
		t.Fatalf("the answer to %s was never written before Run returned; the agent got %q", what, a.written)
	}
}

// refusingServer is a bank server that refuses every message, as a
// remote server answering 401 does: Write fails, and Read ends once the
// relay closes the connection.
type refusingServer struct {
	closed chan struct{}
	once   sync.Once
}

func (s *refusingServer) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case <-s.closed:
		return nil, io.EOF
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (s *refusingServer) Write(context.Context, jsonrpc.Message) error {
	return errors.New(`sending "initialize": Unauthorized`)
}

func (s *refusingServer) Close() error {
	s.once.Do(func() { close(s.closed) })
	return nil
}

func (s *refusingServer) SessionID() string { return "" }

// TestGoneServerAnswersBeforeRun: when the server refuses the relay's
// initialize and so is gone, Run does not return (which closes the
// agent's stream) while the agent's initialize is still being answered:
// drain counts it while the answer is written, and the answer says why
// the server is gone. Like TestDrainWaitsForAnswersBeingWritten it checks
// what drain sees while the answer is being written, so it needs no
// timing.
func TestGoneServerAnswersBeforeRun(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p := scriptPolicy(t, "deny")
	var r *Relay
	seen := make(chan int, 8)
	a := &hookedAgent{frames: make(chan []byte, 4), onWrite: func(msg []byte) {
		if strings.Contains(string(msg), `"id":1`) {
			seen <- r.unanswered()
		}
	}}
	defer close(a.frames) // the agent keeps its input open: Run ends because the server went
	r = New(Config{Policy: p, Server: "bank", Gate: gate.New(p), Recorder: &sliceRecorder{}}, &refusingServer{closed: make(chan struct{})})
	a.frames <- []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"agent","version":"1"}}}`)
	if err := r.RunAgent(ctx, a); err == nil || !strings.Contains(err.Error(), "Unauthorized") {
		t.Errorf("Run = %v, want the server's refusal", err)
	}
	owedWhileWritten(t, seen, a, "initialize")
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.written) != 1 || !strings.Contains(a.written[0], "Unauthorized") || !strings.Contains(a.written[0], `"error"`) {
		t.Errorf("the agent got %q, want one error answer naming the refusal (Unauthorized)", a.written)
	}
}
