package proxy

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/bankdoor/bankdoor/proxy/gate"
)

// observed records what an Observer is told.
type observed struct {
	mu       sync.Mutex
	decided  []string // decision/rule/tool
	answered []string
	recorded []string // decision, or decision+"!" on an error
}

func (o *observed) Decided(decision, rule, tool string, took time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if took < 0 {
		decision += "?negative"
	}
	o.decided = append(o.decided, decision+"/"+rule+"/"+tool)
}

func (o *observed) Answered(method string, took time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.answered = append(o.answered, method)
}

func (o *observed) Recorded(decision string, took time.Duration, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if err != nil {
		decision += "!"
	}
	o.recorded = append(o.recorded, decision)
}

func (o *observed) snapshot() (decided, answered, recorded []string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.decided), slices.Clone(o.answered), slices.Clone(o.recorded)
}

// TestObserver checks that each decision, relayed answer and receipt
// write reaches the Observer once, with its rule.
func TestObserver(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s := newBank()
	p := bankPolicy(t, ctx, s)
	o := &observed{}
	rec := &sliceRecorder{}
	a := runAgent(t, ctx, New(Config{Policy: p, Server: "bank", Gate: gate.New(p), Recorder: rec, Observer: o}, connectBank(t, ctx, s)))
	a.roundTrip(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"agent","version":"1"}}}`)
	a.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	mustContain(t, "allowed call", a.roundTrip(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"get_balances","arguments":{}}}`), `"id":2`, "42.00")
	mustContain(t, "denied call", a.roundTrip(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"transfer","arguments":{"to":"x","amount":1}}}`), `"id":3`, "name.write_word")
	mustContain(t, "unknown method", a.roundTrip(`{"jsonrpc":"2.0","id":4,"method":"bank/steal"}`), `"id":4`, "method.unknown")
	mustContain(t, "tools/list", a.roundTrip(`{"jsonrpc":"2.0","id":5,"method":"tools/list"}`), `"id":5`)
	if err := a.close(); err != nil {
		t.Fatal(err)
	}
	decided, answered, recorded := o.snapshot()
	if want := []string{"allow/allow/get_balances", "deny/name.write_word/transfer", "deny/method.unknown/"}; !slices.Equal(decided, want) {
		t.Errorf("decided %q, want %q", decided, want)
	}
	// initialize is the relay's own handshake; tools/list and the call
	// were forwarded and answered.
	if want := []string{"tools/call", "tools/list"}; !slices.Equal(answered, want) {
		t.Errorf("answered %q, want %q", answered, want)
	}
	if want := []string{"deny", "deny"}; !slices.Equal(recorded, want) {
		t.Errorf("recorded %q, want %q", recorded, want)
	}
}

func TestObserverRecordFailure(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s := newBank()
	p := bankPolicy(t, ctx, s)
	o := &observed{}
	a := runAgent(t, ctx, New(Config{Policy: p, Server: "bank", Gate: gate.New(p), Recorder: failingRecorder{}, Observer: o}, connectBank(t, ctx, s)))
	a.roundTrip(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"agent","version":"1"}}}`)
	mustContain(t, "denied call", a.roundTrip(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"transfer","arguments":{}}}`), `"id":2`, "could not be written")
	a.close()
	decided, _, recorded := o.snapshot()
	if want := []string{"deny/name.write_word/transfer"}; !slices.Equal(decided, want) {
		t.Errorf("decided %q, want %q", decided, want)
	}
	if want := []string{"deny!"}; !slices.Equal(recorded, want) {
		t.Errorf("recorded %q, want %q", recorded, want)
	}
}
