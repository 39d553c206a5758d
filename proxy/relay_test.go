package proxy

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bankdoor/bankdoor/proxy/gate"
	"github.com/bankdoor/bankdoor/proxy/pin"
	"github.com/bankdoor/bankdoor/proxy/policy"
)

type balanceArgs struct {
	Account string `json:"account,omitempty"`
}

type transferArgs struct {
	To     string `json:"to"`
	Amount int    `json:"amount"`
}

// newBank returns an in-process SDK server with get_balances and transfer.
func newBank() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "bank", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "get_balances", Description: "Balances of an account."},
		func(ctx context.Context, req *mcp.CallToolRequest, in balanceArgs) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "balance of " + in.Account + ": 42.00"}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "transfer", Description: "Moves money."},
		func(ctx context.Context, req *mcp.CallToolRequest, in transferArgs) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "moved"}}}, nil, nil
		})
	return s
}

// connectBank connects a new session of s and returns the client side.
func connectBank(t testing.TB, ctx context.Context, s *mcp.Server) mcp.Connection {
	t.Helper()
	ct, st := mcp.NewInMemoryTransports()
	if _, err := s.Connect(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
	conn, err := ct.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return conn
}

// bankPolicy lists the bank once to pin get_balances as the server sends it.
func bankPolicy(t testing.TB, ctx context.Context, s *mcp.Server) *policy.Policy {
	t.Helper()
	conn := connectBank(t, ctx, s)
	tools, err := pin.Fetch(ctx, conn)
	conn.Close()
	if err != nil {
		t.Fatal(err)
	}
	var sum string
	for _, tl := range tools {
		if tl.Name == "get_balances" {
			_, sum, err = pin.Hash(tl.Raw)
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	if sum == "" {
		t.Fatalf("the bank did not list get_balances: %+v", tools)
	}
	y := fmt.Sprintf(`version: 1
id: relay-test
default: deny
require_pins: true
servers:
  bank:
    tools:
      get_balances:
        schema_sha256: %s
        args:
          account: { type: string, max_length: 40 }
`, sum)
	p, err := policy.Parse("relay-test.yaml", []byte(y))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

type sliceRecorder struct {
	mu     sync.Mutex
	events []Event
}

func (r *sliceRecorder) Record(ev Event) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, ev)
	return fmt.Sprintf("r%04d.json", len(r.events)), nil
}

func (r *sliceRecorder) last() (Event, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.events) == 0 {
		return Event{}, 0
	}
	return r.events[len(r.events)-1], len(r.events)
}

// agent drives a Relay over pipes with raw lines: what the test writes is
// the agent's stdin, each line the relay writes arrives on out.
type agent struct {
	t    testing.TB
	in   *io.PipeWriter
	out  chan string
	done chan error // Run's result
}

func startRelay(t testing.TB, ctx context.Context, rec Recorder) *agent {
	t.Helper()
	s := newBank()
	p := bankPolicy(t, ctx, s)
	return runAgent(t, ctx, New(Config{Policy: p, Server: "bank", Gate: gate.New(p), Recorder: rec}, connectBank(t, ctx, s)))
}

// runAgent runs r with pipes for the agent's side until ctx ends or the
// agent closes its input.
func runAgent(t testing.TB, ctx context.Context, r *Relay) *agent {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	a := &agent{t: t, in: inW, out: make(chan string, 64), done: make(chan error, 1)}
	go func() { a.done <- r.Run(ctx, inR, outW); outW.Close() }()
	go func() {
		sc := bufio.NewScanner(outR)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			a.out <- sc.Text()
		}
		close(a.out)
	}()
	return a
}

func (a *agent) send(line string) {
	a.t.Helper()
	if _, err := io.WriteString(a.in, line+"\n"); err != nil {
		a.t.Fatalf("writing to the relay: %v", err)
	}
}

// recv returns the next line the relay wrote to the agent.
func (a *agent) recv() string {
	a.t.Helper()
	select {
	case line, ok := <-a.out:
		if !ok {
			a.t.Fatal("the relay closed its output")
		}
		return line
	case <-time.After(10 * time.Second):
		a.t.Fatal("the relay wrote nothing to the agent within 10s")
		return ""
	}
}

func (a *agent) roundTrip(line string) string {
	a.t.Helper()
	a.send(line)
	return a.recv()
}

func (a *agent) close() error {
	a.in.Close()
	select {
	case err := <-a.done:
		return err
	case <-time.After(5 * time.Second):
		return fmt.Errorf("Run did not return after the agent closed its input")
	}
}

func mustContain(t testing.TB, what, got string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(got, w) {
			t.Errorf("%s = %s\nwant it to contain %s", what, got, w)
		}
	}
}

func TestRelaySession(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	rec := &sliceRecorder{}
	a := startRelay(t, ctx, rec)

	got := a.roundTrip(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{"roots":{},"sampling":{}},"clientInfo":{"name":"agent","version":"1"}}}`)
	mustContain(t, "initialize", got, `"id":1`, `"capabilities":{"tools":`)
	for _, c := range []string{`"logging"`, `"resources"`, `"prompts"`, `"completions"`} {
		if strings.Contains(got, c) {
			t.Errorf("initialize result advertises %s: %s", c, got)
		}
	}
	a.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)

	got = a.roundTrip(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	mustContain(t, "tools/list", got, `"id":2`, `"name":"get_balances"`)
	if strings.Contains(got, "transfer") {
		t.Errorf("tools/list shows transfer: %s", got)
	}

	got = a.roundTrip(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"transfer","arguments":{"to":"x","amount":5}}}`)
	mustContain(t, "tools/call transfer", got, `"id":3`, `"code":-32001`, `name.write_word`)
	if ev, _ := rec.last(); ev.Decision != "deny" || ev.Rule != "name.write_word" || ev.Tool != "transfer" || len(ev.ArgsSHA256) != 64 {
		t.Errorf("event for transfer = %+v, want deny name.write_word transfer with args_sha256", ev)
	}

	got = a.roundTrip(`{"jsonrpc":"2.0","id":4,"method":"tools/delete_everything","params":{}}`)
	mustContain(t, "unknown method", got, `"id":4`, `"code":-32601`, `method.unknown`)
	if ev, _ := rec.last(); ev.Rule != "method.unknown" {
		t.Errorf("event for an unknown method = %+v", ev)
	}

	got = a.roundTrip(`{"jsonrpc":"2.0","id":5,`)
	mustContain(t, "malformed line", got, `"id":null`, `"code":-32700`, `frame.parse`)

	got = a.roundTrip(`{"jsonrpc":"2.0","id":6,"method":"resources/list","params":{}}`)
	mustContain(t, "resources/list", got, `"id":6`, `"code":-32601`, `method.not_exposed`)

	_, before := rec.last()
	got = a.roundTrip(`{"jsonrpc":"2.0","id":"seven","method":"tools/call","params":{"name":"get_balances","arguments":{"account":"acc_1"}}}`)
	mustContain(t, "tools/call get_balances", got, `"id":"seven"`, `"result":`, `balance of acc_1: 42.00`)
	if strings.Contains(got, `"error"`) {
		t.Errorf("allowed call answered with an error: %s", got)
	}
	if ev, n := rec.last(); n != before {
		t.Errorf("an allowed call with receipts: deny recorded %+v", ev)
	}

	// Denied notifications leave a receipt and get no answer: the next line
	// the agent reads must be the answer to the ping after them.
	_, before = rec.last()
	a.send(`{"jsonrpc":"2.0","method":"tools/call","params":{"name":"transfer","arguments":{"to":"x","amount":5}}}`)
	a.send(`{"jsonrpc":"2.0","method":"tools/call","params":{"name":"get_balances","arguments":{"account":"acc_1"}}}`)
	a.send(`{"jsonrpc":"2.0","method":"notifications/transfer","params":{}}`)
	got = a.roundTrip(`{"jsonrpc":"2.0","id":8,"method":"ping"}`)
	mustContain(t, "ping after denied notifications", got, `"id":8`, `"result":{}`)
	if _, n := rec.last(); n != before+3 {
		t.Errorf("denied notifications left %d receipts, want 3", n-before)
	}

	if err := a.close(); err != nil {
		t.Errorf("Run = %v, want nil after the agent closed its input", err)
	}
}
