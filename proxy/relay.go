package proxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bankdoor/bankdoor/proxy/gate"
	"github.com/bankdoor/bankdoor/proxy/policy"
)

// Event is what the relay asks a Recorder to make durable: one decision.
type Event struct {
	Decision   string // "deny" or "allow"
	Tool       string // as requested; "" for denials before a tool name is known
	Rule       string
	Reason     string
	ArgNames   []string
	ArgsSHA256 string
}

// A Recorder turns events into durable receipts. Record must not return
// before the receipt is on stable storage; it returns the receipt's id
// (its file name). An error from Record stops the relay: a gate that cannot
// leave evidence does not go on.
type Recorder interface {
	Record(Event) (id string, err error)
}

// Config is what a Relay needs.
type Config struct {
	Policy   *policy.Policy
	Server   string // the --server NAME
	Gate     *gate.Gate
	Recorder Recorder
	Logger   *slog.Logger // diagnostics, normally to stderr
	MaxFrame int          // largest agent line; 0 means DefaultMaxFrame
}

// Relay relays one MCP session between an agent and a bank server.
type Relay struct {
	cfg   Config
	srv   *policy.Server // nil if the policy has no such server: every call denies
	down  mcp.Connection
	agent AgentSide
	log   *slog.Logger

	outMu sync.Mutex

	mu          sync.Mutex
	nextID      int64
	pending     map[int64]*pending    // requests sent downstream, by our id
	agentIDs    map[string]int64      // in-flight agent ids (raw JSON) -> our id
	serverReqs  map[string]jsonrpc.ID // server requests relayed to the agent, by our id
	initialized bool                  // the server answered initialize
	gone        error                 // why the server is gone, once it is
	fatal       chan error            // the first error that must stop the relay
	pins        pinCache
	closing     atomic.Bool // the relay closes the server itself: its going is no error
}

// pending is a request sent to the server and not yet answered.
type pending struct {
	agentID jsontext.Value         // the agent's id; nil for the relay's own requests
	method  string                 // for response handling
	done    chan *jsonrpc.Response // the relay's own requests only
}

// New returns a relay for one session over the given downstream connection
// (normally an mcp.CommandTransport to the bank server).
func New(cfg Config, down mcp.Connection) *Relay {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	r := &Relay{
		cfg:        cfg,
		down:       down,
		log:        cfg.Logger,
		pending:    make(map[int64]*pending),
		agentIDs:   make(map[string]int64),
		serverReqs: make(map[string]jsonrpc.ID),
		fatal:      make(chan error, 1),
	}
	if cfg.Policy != nil {
		r.srv = cfg.Policy.Servers[cfg.Server]
	}
	return r
}

// Run relays between the agent (in, out) and the server until the agent
// closes its input (Run returns nil after closing the server), the server
// goes away (Run answers every open request with an error and returns why),
// or ctx is done.
func (r *Relay) Run(ctx context.Context, in io.Reader, out io.Writer) error {
	return r.RunAgent(ctx, LineAgent(in, out, r.cfg.MaxFrame))
}

// RunAgent is Run with the agent on the given side of the session (see
// AgentSide); it returns nil when ReadFrame returns io.EOF.
func (r *Relay) RunAgent(ctx context.Context, agent AgentSide) error {
	r.agent = agent
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	agentDone := make(chan error, 1)
	serverDone := make(chan error, 1)
	go func() { agentDone <- r.agentLoop(ctx) }()
	go func() { serverDone <- r.serverLoop(ctx) }()
	select {
	case err := <-agentDone:
		r.drain(ctx, serverDone)
		r.closing.Store(true)
		cerr := r.down.Close()
		if err != nil {
			return err
		}
		if cerr != nil && !isExit(cerr) {
			return fmt.Errorf("closing the bank server: %w", cerr)
		}
		return nil
	case err := <-serverDone:
		return err
	case err := <-r.fatal:
		r.down.Close()
		return err
	case <-ctx.Done():
		r.down.Close()
		return ctx.Err()
	}
}

func isExit(err error) bool {
	var ee interface{ ExitCode() int }
	return errors.As(err, &ee)
}

// stop records the first fatal error.
func (r *Relay) stop(err error) {
	select {
	case r.fatal <- err:
	default:
	}
}

// agentLoop reads and handles agent frames in order.
func (r *Relay) agentLoop(ctx context.Context) error {
	for {
		line, err := r.agent.ReadFrame()
		var tooLarge *FrameTooLargeError
		switch {
		case errors.As(err, &tooLarge):
			r.denyFrame(jsontext.Value(nullJSON), nil, &denial{code: codeInvalidRequest, rule: "frame.too_large",
				reason: tooLarge.Error()})
			continue
		case errors.Is(err, io.EOF):
			return nil
		case err != nil:
			return fmt.Errorf("reading from the agent: %w", err)
		}
		if len(line) == 0 || len(trimSpace(line)) == 0 {
			continue
		}
		r.handleAgent(ctx, line)
	}
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t' || b[0] == '\r') {
		b = b[1:]
	}
	return b
}

// send writes a request to the server, registering it as pending when it
// has an id. It returns false, having answered the agent, if the server is
// gone.
func (r *Relay) send(ctx context.Context, p *pending, method string, params []byte, notify bool) (int64, bool) {
	r.mu.Lock()
	if r.gone != nil {
		err := r.gone
		r.mu.Unlock()
		if p != nil && p.agentID != nil {
			r.replyError(p.agentID, CodeServerGone, "bankdoor: the bank server is gone: "+err.Error()+"; restart the proxy", nil)
		}
		return 0, false
	}
	var id int64
	req := &jsonrpc.Request{Method: method, Params: params}
	if !notify {
		r.nextID++
		id = r.nextID
		req.ID, _ = jsonrpc.MakeID(float64(id))
		r.pending[id] = p
		if p.agentID != nil {
			r.agentIDs[string(p.agentID)] = id
		}
	}
	r.mu.Unlock()
	if err := r.down.Write(ctx, req); err != nil {
		r.serverGone(fmt.Errorf("writing to the bank server: %w", err))
		return 0, false
	}
	return id, true
}

// call sends the relay's own request and waits for its response.
func (r *Relay) call(ctx context.Context, method string, params []byte) (*jsonrpc.Response, error) {
	p := &pending{method: method, done: make(chan *jsonrpc.Response, 1)}
	if _, ok := r.send(ctx, p, method, params, false); !ok {
		return nil, errors.New("the bank server is gone")
	}
	select {
	case resp := <-p.done:
		if resp == nil {
			return nil, errors.New("the bank server is gone")
		}
		if resp.Error != nil {
			return nil, fmt.Errorf("the bank server answered %s with an error: %w", method, resp.Error)
		}
		return resp, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// serverLoop reads and handles server messages.
func (r *Relay) serverLoop(ctx context.Context) error {
	for {
		msg, err := r.down.Read(ctx)
		if err != nil {
			return r.serverGone(err)
		}
		switch m := msg.(type) {
		case *jsonrpc.Response:
			r.handleResponse(ctx, m)
		case *jsonrpc.Request:
			r.handleServerRequest(ctx, m)
		}
	}
}

// serverGone records that the server is unusable, reaps it, answers every
// open agent request with an error and returns the reason.
func (r *Relay) serverGone(cause error) error {
	r.mu.Lock()
	if r.gone != nil {
		err := r.gone
		r.mu.Unlock()
		return err
	}
	r.gone = fmt.Errorf("%w", cause)
	r.mu.Unlock()
	if cerr := r.down.Close(); cerr != nil {
		cause = fmt.Errorf("bank server exited: %v", cerr)
	} else if errors.Is(cause, io.EOF) {
		cause = errors.New("bank server closed its output")
	}
	r.mu.Lock()
	r.gone = cause
	open := r.pending
	r.pending = make(map[int64]*pending)
	r.agentIDs = make(map[string]int64)
	r.mu.Unlock()
	for _, p := range open {
		if p.done != nil {
			close(p.done)
			continue
		}
		r.replyError(p.agentID, CodeServerGone, "bankdoor: "+cause.Error()+"; the request was not completed", nil)
	}
	if !r.closing.Load() {
		r.log.Error("bank server gone", "err", cause)
	}
	return cause
}

// handleResponse routes a server response to whoever asked.
func (r *Relay) handleResponse(ctx context.Context, m *jsonrpc.Response) {
	id, ok := m.ID.Raw().(int64)
	r.mu.Lock()
	p := r.pending[id]
	if ok && p != nil {
		delete(r.pending, id)
		delete(r.agentIDs, string(p.agentID))
	}
	r.mu.Unlock()
	if !ok || p == nil {
		r.log.Warn("dropping a response from the bank server to no open request", "id", m.ID.Raw())
		return
	}
	if p.done != nil {
		p.done <- m
		return
	}
	if m.Error != nil {
		r.replyWireError(p.agentID, m.Error)
		return
	}
	result := []byte(m.Result)
	switch p.method {
	case "initialize":
		result = r.filterInitializeResult(result)
	case "tools/list":
		var err error
		if result, err = r.filterToolsList(result); err != nil {
			r.replyError(p.agentID, codeInternalError, "bankdoor: the bank server sent a tools/list result the proxy cannot check: "+err.Error(), nil)
			return
		}
	}
	r.replyResult(p.agentID, result)
}

// ourID returns the agent-facing id for a server request relayed to it.
func (r *Relay) ourID() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.nextID++
	return strconv.Quote("bankdoor-" + strconv.FormatInt(r.nextID, 10))
}

// drainTimeout bounds how long the relay waits, after the agent closed its
// input, for answers to requests already sent to the server.
const drainTimeout = 10 * time.Second

// drain waits until no request sent to the server is open, the server is
// gone, or drainTimeout passes, so an agent that writes its requests and
// closes its input still gets every answer.
func (r *Relay) drain(ctx context.Context, serverDone <-chan error) {
	deadline := time.After(drainTimeout)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		r.mu.Lock()
		open := len(r.pending)
		r.mu.Unlock()
		if open == 0 {
			return
		}
		select {
		case <-serverDone:
			return
		case <-deadline:
			r.log.Warn("agent closed its input; giving up on open requests", "open", open)
			return
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}
