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
	"go.opentelemetry.io/otel/trace"

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
// (its file name). It is called from more than one goroutine. An error
// from Record stops the relay: once Record has failed, nothing more is
// forwarded to the server.
type Recorder interface {
	Record(Event) (id string, err error)
}

// DefaultListTimeout bounds each of the relay's own requests to the
// server: its initialize, each page of its tools/list.
const DefaultListTimeout = 30 * time.Second

// DefaultCallTimeout bounds how long a forwarded tools/call waits for the
// server's answer; see Config.CallTimeout.
const DefaultCallTimeout = 2 * time.Minute

// Config is what a Relay needs.
type Config struct {
	Policy   *policy.Policy
	Server   string // the --server NAME
	Gate     *gate.Gate
	Recorder Recorder
	Logger   *slog.Logger // diagnostics, normally to stderr
	MaxFrame int          // largest agent line; 0 means DefaultMaxFrame
	// ListTimeout bounds each of the relay's own requests to the server:
	// each page of its tools/list (a call whose pin cannot be checked in
	// time is denied, pin.unavailable) and its initialize (the agent's
	// initialize then gets an error). 0 means DefaultListTimeout.
	ListTimeout time.Duration
	// CallTimeout bounds how long a forwarded tools/call waits for the
	// server's answer: then the relay cancels it at the server (the
	// agent's SDK may have given up without notifications/cancelled) and
	// answers the agent with an error, and the next call goes on, after
	// a listing of its own. 0 means DefaultCallTimeout.
	CallTimeout time.Duration
	// Tracer, if set, traces every agent request (see trace.go); nil
	// means no tracing, at no cost.
	Tracer trace.Tracer
	// Observer is told of each decision, answer and receipt write; nil
	// tells no one.
	Observer Observer
}

// Relay relays one MCP session between an agent and a bank server.
type Relay struct {
	cfg   Config
	srv   *policy.Server // nil if the policy has no such server: every call denies
	down  mcp.Connection
	agent AgentSide
	log   *slog.Logger

	outMu sync.Mutex // one frame to the agent at a time

	// calls holds the tools/calls that passed checks 1 to 4, in order;
	// callLoop takes them one at a time (see agent.go).
	calls chan *toolCall
	// pins is the relay's own listing of the server's tools, and parsed
	// the pages it parsed by cursor; only callLoop reads or writes them
	// (see listing.go).
	pins   listing
	parsed map[string]parsedPage

	mu         sync.Mutex
	nextID     int64
	pending    map[int64]*pending    // requests sent to the server, by our id
	open       map[string]*openReq   // the agent's open requests, by raw id
	serverReqs map[string]jsonrpc.ID // server requests relayed to the agent, by our id
	// gen counts the events after which a listing is stale: a forwarded
	// tools/call answered, notifications/tools/list_changed received.
	gen uint64
	// answering counts the agent's requests the server has answered
	// whose answers are not written yet: drain waits for them too.
	answering int
	// handling counts the agent's frames being handled (agentLoop) and
	// its calls being decided (callLoop): drain waits for them.
	handling  int
	handshake bool  // the agent sent initialize
	gone      error // why the server is gone, once it is
	stopped   error // why the relay stopped, once it has: nothing more is forwarded
	fatal     chan error
	closing   atomic.Bool // the relay closes the server itself: its going is no error
	agentEOF  atomic.Bool // the agent closed its input

	// traces are the spans of the agent's requests not yet ended, and
	// version the protocol version negotiated with the agent, for them
	// (trace.go); used only with Config.Tracer.
	traceMu sync.Mutex
	traces  map[*reqTrace]struct{}
	version atomic.Value // string
}

// pending is a request sent to the server and not yet answered.
type pending struct {
	agentID jsontext.Value // the agent's id; nil for the relay's own requests
	method  string         // for response handling
	// progress is the canonical form of the request's
	// _meta.progressToken, "" if none: the server's progress
	// notifications carrying it relate to this request.
	progress string
	done     chan ownAnswer // the relay's own requests only
	// answered is closed when a forwarded tools/call is answered (or can
	// no longer be): callLoop waits for it before the next call.
	answered chan struct{}
	// evidence is what a receipt of a refused answer records: the call's
	// tool and arguments as the gate saw them, or the request's raw bytes;
	// its read is when the agent's request was read.
	evidence denial
	trace    *reqTrace // the agent's request's spans; nil if not traced
}

// ownAnswer is the server's answer to one of the relay's own requests:
// malformed if it is not strict JSON (see strictAnswer), and then not to be
// read.
type ownAnswer struct {
	resp      *jsonrpc.Response
	malformed bool
}

// openReq is one of the agent's requests that has not been answered:
// waiting in calls (call set) or sent to the server (ours set).
type openReq struct {
	ours int64
	call *toolCall
}

// New returns a relay for one session over the given downstream connection
// (normally an mcp.CommandTransport to the bank server).
func New(cfg Config, down mcp.Connection) *Relay {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.ListTimeout <= 0 {
		cfg.ListTimeout = DefaultListTimeout
	}
	if cfg.CallTimeout <= 0 {
		cfg.CallTimeout = DefaultCallTimeout
	}
	if cfg.Observer == nil {
		cfg.Observer = nopObserver{}
	}
	r := &Relay{
		cfg:        cfg,
		down:       down,
		log:        cfg.Logger,
		calls:      make(chan *toolCall, maxQueuedCalls),
		parsed:     make(map[string]parsedPage),
		pending:    make(map[int64]*pending),
		open:       make(map[string]*openReq),
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
	a := newLineAgent(in, out, r.cfg.MaxFrame)
	defer a.stop()
	return r.RunAgent(ctx, a)
}

// RunAgent is Run with the agent on the given side of the session (see
// AgentSide); it returns nil when ReadFrame returns io.EOF.
func (r *Relay) RunAgent(ctx context.Context, agent AgentSide) error {
	r.agent = agent
	defer r.endTraces()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	agentDone := make(chan error, 1)
	serverDone := make(chan error, 1)
	go func() { agentDone <- r.agentLoop(ctx) }()
	go func() { serverDone <- r.serverLoop(ctx) }()
	go r.callLoop(ctx)
	select {
	case err := <-agentDone:
		if err == nil {
			err = r.stoppedErr()
		}
		if err != nil {
			r.down.Close()
			return err
		}
		r.drain(ctx, serverDone, "agent closed its input")
		r.closing.Store(true)
		if cerr := r.down.Close(); cerr != nil && !isExit(cerr) {
			return fmt.Errorf("closing the bank server: %w", cerr)
		}
		return r.stoppedErr()
	case err := <-serverDone:
		r.drain(ctx, nil, "the bank server is gone")
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

// stop stops the relay for err: from now on nothing is forwarded to the
// server, and Run returns err.
func (r *Relay) stop(err error) { r.stopAnswering(err, nil) }

// stopAnswering is stop that calls answer (e.g. to write the agent the
// error of the request that made the relay stop) after nothing more can
// be forwarded and before Run may return, which closes the agent's
// stream.
func (r *Relay) stopAnswering(err error, answer func()) {
	r.mu.Lock()
	if r.stopped == nil {
		r.stopped = err
	}
	r.mu.Unlock()
	if answer != nil {
		answer()
	}
	select {
	case r.fatal <- err:
	default:
	}
}

func (r *Relay) stoppedErr() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stopped
}

// send writes a request to the server, registering it as pending when it
// has an id. It returns false, having answered the agent, if the server is
// gone or the relay has stopped.
func (r *Relay) send(ctx context.Context, p *pending, method string, params []byte, notify bool) (int64, bool) {
	if p != nil {
		params = p.trace.startClient(method, params, r.forwardsTrace())
	}
	r.mu.Lock()
	if err := r.gone; err != nil || r.stopped != nil {
		r.mu.Unlock()
		if err != nil && p != nil && p.agentID != nil {
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
			r.open[string(p.agentID)] = &openReq{ours: id}
		}
	}
	r.mu.Unlock()
	if err := r.down.Write(ctx, req); err != nil {
		r.serverGone(fmt.Errorf("writing to the bank server: %w", err))
		return 0, false
	}
	return id, true
}

// whyNotSent says why the server will not answer: it is gone (and why),
// or the relay has stopped.
func (r *Relay) whyNotSent() error {
	if gone := r.goneErr(); gone != nil {
		return fmt.Errorf("the bank server is gone: %w", gone)
	}
	if err := r.stoppedErr(); err != nil {
		return fmt.Errorf("the relay has stopped: %w", err)
	}
	return errors.New("the bank server is gone")
}

// call sends the relay's own request and waits for its response, at most
// timeout (0: no limit but ctx's).
func (r *Relay) call(ctx context.Context, method string, params []byte, timeout time.Duration) (*jsonrpc.Response, error) {
	p := &pending{method: method, done: make(chan ownAnswer, 1)}
	id, ok := r.send(ctx, p, method, params, false)
	if !ok {
		return nil, r.whyNotSent()
	}
	var expired <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		expired = t.C
	}
	select {
	case a := <-p.done:
		resp := a.resp
		switch {
		case resp == nil: // serverGone set why before it closed p.done
			return nil, r.whyNotSent()
		case a.malformed:
			return nil, fmt.Errorf("the bank server's answer to %s is not strict JSON (%s)", method, notStrict)
		case resp.Error != nil:
			return nil, fmt.Errorf("the bank server answered %s with an error: %w", method, resp.Error)
		}
		return resp, nil
	case <-expired:
		r.forget(id)
		return nil, fmt.Errorf("the bank server did not answer %s within %v", method, timeout)
	case <-ctx.Done():
		r.forget(id)
		return nil, context.Cause(ctx)
	}
}

// forget drops a request of the relay's own that will not be waited for;
// a late answer to it is dropped.
func (r *Relay) forget(id int64) {
	r.mu.Lock()
	delete(r.pending, id)
	r.mu.Unlock()
}

// serverLoop reads and handles server messages in order, on one goroutine.
func (r *Relay) serverLoop(ctx context.Context) error {
	for {
		msg, err := r.down.Read(ctx)
		if err != nil {
			return r.serverGone(err)
		}
		switch m := msg.(type) {
		case *jsonrpc.Response:
			r.handleResponse(m)
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
	for id, o := range r.open {
		if o.call == nil {
			delete(r.open, id)
		}
	}
	r.mu.Unlock()
	for _, p := range open {
		switch {
		case p.done != nil:
			close(p.done)
			continue
		case p.answered != nil:
			close(p.answered)
		}
		r.replyError(p.agentID, CodeServerGone, "bankdoor: "+cause.Error()+"; the request was not completed", nil)
		p.trace.fail("server_gone")
	}
	if !r.closing.Load() {
		r.log.Error("bank server gone", "err", cause)
	}
	return cause
}

// ourID returns the agent-facing id for a server request relayed to it.
func (r *Relay) ourID() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.nextID++
	return strconv.Quote("bankdoor-" + strconv.FormatInt(r.nextID, 10))
}

// drainTimeout bounds how long Run waits, before it returns, for the
// answers the agent is owed (see drain).
const drainTimeout = 10 * time.Second

// unanswered counts what the agent is owed an answer for: its open
// requests (queued, or sent to the server), answers being written, and
// frames being handled or calls being decided (see handle), which may
// still answer.
func (r *Relay) unanswered() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.open) + r.answering + r.handling
}

// handle runs fn counted in unanswered: a frame being handled or a call
// being decided.
func (r *Relay) handle(fn func()) {
	r.mu.Lock()
	r.handling++
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		r.handling--
		r.mu.Unlock()
	}()
	fn()
}

// drain waits until the agent is owed no answer (see unanswered), the
// server is gone (serverDone; nil once it is), or drainTimeout passes.
// Run's return closes the agent's stream, so Run drains before it
// returns: an agent that wrote its requests and closed its input still
// gets every answer, and when the server goes, the answers the agent's
// side is still writing (an initialize whose call to the server failed,
// calls answered "gone") reach it.
func (r *Relay) drain(ctx context.Context, serverDone <-chan error, why string) {
	deadline := time.After(drainTimeout)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		open := r.unanswered()
		if open == 0 {
			return
		}
		select {
		case <-serverDone:
			return
		case <-deadline:
			r.log.Warn(why+"; giving up on open requests", "open", open)
			return
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}
