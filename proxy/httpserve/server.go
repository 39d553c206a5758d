package httpserve

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/bankdoor/bankdoor/proxy"
)

// Defaults for Config.
const (
	DefaultMaxBody     = proxy.DefaultMaxFrame
	DefaultIdleTimeout = 10 * time.Minute
	DefaultMaxSessions = 16
)

// Config is what a Server needs.
type Config struct {
	// Tokens are the agents' bearer tokens; nil or empty accepts none.
	Tokens Tokens
	// ClientCerts accepts a client certificate that the server's
	// tls.Config verified (tls.Config.ClientCAs) as the agent its Subject
	// CommonName names (see "mTLS identities" in the package doc).
	ClientCerts bool
	// Origins are the accepted values of the Origin header (DNS-rebinding
	// protection); a request without one (not from a browser) is accepted.
	Origins     []string
	MaxBody     int64         // largest POST body; 0 means DefaultMaxBody
	IdleTimeout time.Duration // a session without a POST this long is closed; 0 means DefaultIdleTimeout
	// MaxSessions bounds each agent's open sessions (each has its own bank
	// server session); 0 means DefaultMaxSessions.
	MaxSessions int
	// Start runs one session for agent on side, normally a proxy.Relay
	// with its own downstream session, until side reports io.EOF.
	Start  func(ctx context.Context, agent string, side proxy.AgentSide) error
	Logger *slog.Logger
}

// Server serves agents over MCP streamable HTTP (see the package doc).
type Server struct {
	cfg    Config
	ctx    context.Context // cancelled by Close
	cancel context.CancelFunc
	wg     sync.WaitGroup // sessions' relays and the janitor

	mu       sync.Mutex
	sessions map[string]*session
}

// New returns a server; Close stops it.
func New(cfg Config) *Server {
	if cfg.MaxBody <= 0 {
		cfg.MaxBody = DefaultMaxBody
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = DefaultIdleTimeout
	}
	if cfg.MaxSessions <= 0 {
		cfg.MaxSessions = DefaultMaxSessions
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{cfg: cfg, ctx: ctx, cancel: cancel, sessions: make(map[string]*session)}
	s.wg.Add(1)
	go s.janitor()
	return s
}

// Close ends every session (each relay drains and closes its downstream)
// and waits for them.
func (s *Server) Close() error {
	s.mu.Lock()
	for _, ss := range s.sessions {
		ss.close()
	}
	s.mu.Unlock()
	s.cancel()
	s.wg.Wait()
	return nil
}

// janitor closes sessions idle for longer than IdleTimeout.
func (s *Server) janitor() {
	defer s.wg.Done()
	tick := time.NewTicker(max(s.cfg.IdleTimeout/4, 10*time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case now := <-tick.C:
			s.mu.Lock()
			for id, ss := range s.sessions {
				if now.Sub(ss.idleSince()) > s.cfg.IdleTimeout {
					s.cfg.Logger.Info("closing an idle session", "agent", ss.agent, "session", id)
					ss.close()
					delete(s.sessions, id)
				}
			}
			s.mu.Unlock()
		}
	}
}

// httpError is a refusal with its status.
type httpError struct {
	status int
	msg    string
}

func refuse(w http.ResponseWriter, e *httpError) {
	if e.status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="bankdoor"`)
	}
	http.Error(w, "bankdoor: "+e.msg, e.status)
}

// ServeHTTP checks the Origin and the bearer token before anything else,
// then serves POST (messages), GET (the notification stream) and DELETE
// (end of session).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if o := r.Header.Get("Origin"); o != "" && !slices.Contains(s.cfg.Origins, o) {
		refuse(w, &httpError{http.StatusForbidden, fmt.Sprintf("Origin %q is not allowed (DNS-rebinding protection); allowed: %s", o, strings.Join(s.cfg.Origins, ", "))})
		return
	}
	agent, herr := s.authenticate(r.TLS, r.Header.Get("Authorization"))
	if herr != nil {
		refuse(w, herr)
		return
	}
	switch r.Method {
	case http.MethodPost:
		herr = s.post(w, r, agent)
	case http.MethodGet:
		herr = s.get(w, r, agent)
	case http.MethodDelete:
		var ss *session
		if ss, herr = s.lookup(r, agent); herr == nil {
			s.end(ss)
			w.WriteHeader(http.StatusNoContent)
		}
	default:
		w.Header().Set("Allow", "GET, POST, DELETE")
		herr = &httpError{http.StatusMethodNotAllowed, "method " + r.Method + " is not served; use POST, GET or DELETE"}
	}
	if herr != nil {
		refuse(w, herr)
	}
}

// authenticate returns the agent of a request: the one its verified
// client certificate names (state is the connection's TLS state, nil over
// plain HTTP), the one its bearer token (authz, the Authorization header)
// is given to, or, with both, the one they both name.
func (s *Server) authenticate(state *tls.ConnectionState, authz string) (string, *httpError) {
	certAgent, herr := s.certAgent(state)
	if herr != nil {
		return "", herr
	}
	if authz == "" {
		if certAgent != "" {
			return certAgent, nil
		}
		if s.cfg.ClientCerts {
			return "", &httpError{http.StatusUnauthorized, "no client certificate and no bearer token; present a client certificate of the agents' CA or send Authorization: Bearer TOKEN"}
		}
		return "", &httpError{http.StatusUnauthorized, "missing bearer token; send Authorization: Bearer TOKEN"}
	}
	token, ok := strings.CutPrefix(authz, "Bearer ")
	if !ok {
		return "", &httpError{http.StatusUnauthorized, "the Authorization header is not \"Bearer TOKEN\""}
	}
	agent, ok := s.cfg.Tokens.Agent(token)
	if !ok {
		return "", &httpError{http.StatusUnauthorized, "unknown bearer token"}
	}
	if certAgent != "" && certAgent != agent {
		return "", &httpError{http.StatusUnauthorized, fmt.Sprintf("the client certificate is agent %s's but the bearer token is agent %s's; authenticate as one agent", certAgent, agent)}
	}
	return agent, nil
}

// certAgent returns the agent named by the Subject CommonName of the
// connection's verified client certificate, or "" if there is none (or
// Config.ClientCerts is off). A verified certificate whose CommonName is
// not an agent name is refused, never taken as no certificate.
func (s *Server) certAgent(state *tls.ConnectionState) (string, *httpError) {
	if !s.cfg.ClientCerts || state == nil || len(state.VerifiedChains) == 0 {
		return "", nil
	}
	cn := state.VerifiedChains[0][0].Subject.CommonName
	if err := CheckAgent(cn); err != nil {
		return "", &httpError{http.StatusUnauthorized, fmt.Sprintf("client certificate: Subject CommonName: %v; issue the agent a certificate whose CommonName is its name", err)}
	}
	return cn, nil
}

// lookup returns the session named by the Mcp-Session-Id header. A session
// of another agent is unknown to this one.
func (s *Server) lookup(r *http.Request, agent string) (*session, *httpError) {
	id := r.Header.Get("Mcp-Session-Id")
	if id == "" {
		return nil, &httpError{http.StatusBadRequest, "missing Mcp-Session-Id header; start a session with initialize"}
	}
	s.mu.Lock()
	ss := s.sessions[id]
	s.mu.Unlock()
	if ss == nil || ss.agent != agent {
		return nil, &httpError{http.StatusNotFound, "unknown session id (ended, idle too long, or never started); start a new session with initialize"}
	}
	return ss, nil
}

// end closes a session and forgets it.
func (s *Server) end(ss *session) {
	ss.close()
	s.mu.Lock()
	delete(s.sessions, ss.id)
	s.mu.Unlock()
}

// readBody reads a POST body of at most Config.MaxBody bytes; the rest of
// a longer one is never read.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, *httpError) {
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		return nil, &httpError{http.StatusUnsupportedMediaType, fmt.Sprintf("Content-Type %q is not application/json", r.Header.Get("Content-Type"))}
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxBody))
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return nil, &httpError{http.StatusRequestEntityTooLarge, fmt.Sprintf("body is longer than %d bytes", s.cfg.MaxBody)}
	}
	if err != nil {
		return nil, &httpError{http.StatusBadRequest, "reading the body: " + err.Error()}
	}
	return body, nil
}

func (s *Server) post(w http.ResponseWriter, r *http.Request, agent string) *httpError {
	body, herr := s.readBody(w, r)
	if herr != nil && herr.status == http.StatusRequestEntityTooLarge {
		return s.unreadable(w, r, agent, inFrame{err: &proxy.FrameTooLargeError{Max: int(s.cfg.MaxBody)}}, herr)
	} else if herr != nil {
		return herr
	}
	id, method, err := proxy.ReadEnvelope(body)
	if err != nil {
		return s.unreadable(w, r, agent, inFrame{msg: body}, &httpError{http.StatusBadRequest,
			"body is not one JSON-RPC message (one JSON-RPC 2.0 object; batches are not accepted): " + err.Error()})
	}
	var ss *session
	if r.Header.Get("Mcp-Session-Id") == "" && method == "initialize" && id != nil {
		if ss, herr = s.open(agent); herr != nil {
			return herr
		}
		w.Header().Set("Mcp-Session-Id", ss.id)
	} else if ss, herr = s.lookup(r, agent); herr != nil {
		return herr
	} else if method == "initialize" {
		return &httpError{http.StatusBadRequest, "this session is already initialized; start a new one without Mcp-Session-Id"}
	}
	ss.touch(time.Now())
	if method == "" || id == nil { // a notification or an answer: nothing comes back
		if !ss.send(inFrame{msg: body}) {
			return ended(ss)
		}
		w.WriteHeader(http.StatusAccepted)
		return nil
	}
	return s.call(w, r, ss, inFrame{msg: body, key: string(id)}, http.StatusOK)
}

// unreadable serves a body the relay cannot read as one message, or one
// too large to read (f.err): within a valid session it goes to the relay
// like a stdio line, and the relay denies it with a receipt and answers
// with id null; that answer is the body of a refusal with herr's status
// (the transport spec allows a JSON-RPC error without id in a 400). Without
// a valid session herr itself is the answer.
func (s *Server) unreadable(w http.ResponseWriter, r *http.Request, agent string, f inFrame, herr *httpError) *httpError {
	ss, lerr := s.lookup(r, agent)
	if lerr != nil {
		return herr
	}
	ss.touch(time.Now())
	f.key = ss.nullKey()
	return s.call(w, r, ss, f, herr.status)
}

// call relays a request and writes its answer with status (answer.go).
func (s *Server) call(w http.ResponseWriter, r *http.Request, ss *session, f inFrame, status int) *httpError {
	wt, ok := ss.await(f.key, acceptsEvents(r))
	if !ok {
		return &httpError{http.StatusConflict, fmt.Sprintf("request id %s is already in use by an open request of this session", f.key)}
	}
	defer ss.forget(f.key, wt)
	if !ss.send(f) {
		return ended(ss)
	}
	return answer(w, r, ss, wt, status)
}

func ended(ss *session) *httpError {
	select {
	case <-ss.done:
		if ss.err != nil {
			return &httpError{http.StatusBadGateway, "the session ended: " + ss.err.Error()}
		}
	default:
	}
	return &httpError{http.StatusNotFound, "the session ended; start a new one with initialize"}
}

// open starts a session for agent: a fresh id and its relay.
func (s *Server) open(agent string) (*session, *httpError) {
	var b [16]byte
	rand.Read(b[:])
	ss := newSession(hex.EncodeToString(b[:]), agent, time.Now())
	s.mu.Lock()
	n := 0
	for _, o := range s.sessions {
		if o.agent == agent {
			n++
		}
	}
	if n >= s.cfg.MaxSessions {
		s.mu.Unlock()
		return nil, &httpError{http.StatusTooManyRequests, fmt.Sprintf("agent %s has %d open sessions, the most allowed; end one with DELETE or let it idle out", agent, n)}
	}
	s.sessions[ss.id] = ss
	s.mu.Unlock()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		err := s.cfg.Start(s.ctx, agent, ss)
		if err != nil {
			s.cfg.Logger.Error("session ended", "agent", agent, "session", ss.id, "err", err)
		}
		ss.finish(err)
		s.end(ss)
	}()
	s.cfg.Logger.Info("session started", "agent", agent, "session", ss.id)
	return ss, nil
}

// get serves the session's notification stream as text/event-stream.
func (s *Server) get(w http.ResponseWriter, r *http.Request, agent string) *httpError {
	if !strings.Contains(r.Header.Get("Accept"), "text/event-stream") {
		return &httpError{http.StatusNotAcceptable, "GET serves the notification stream: send Accept: text/event-stream"}
	}
	ss, herr := s.lookup(r, agent)
	if herr != nil {
		return herr
	}
	ss.mu.Lock()
	busy := ss.streaming
	ss.streaming = true
	ss.mu.Unlock()
	if busy {
		return &httpError{http.StatusConflict, "this session already has a notification stream open"}
	}
	defer func() { ss.mu.Lock(); ss.streaming = false; ss.mu.Unlock() }()
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	flush(w)
	for {
		select {
		case msg := <-ss.stream:
			writeEvent(w, msg)
		case <-ss.closing:
			return nil
		case <-ss.done:
			return nil
		case <-r.Context().Done():
			return nil
		}
	}
}

func flush(w http.ResponseWriter) { http.NewResponseController(w).Flush() }
