package httpserve

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"mime"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/bankdoor/bankdoor/proxy"
	"github.com/bankdoor/bankdoor/proxy/oauth"
)

// DefaultMaxBody is the default of Config.MaxBody.
const DefaultMaxBody = proxy.DefaultMaxFrame

// Config is what a Server needs.
type Config struct {
	// Tokens are the agents' bearer tokens; nil or empty accepts none.
	Tokens Tokens
	// OAuth, if set, accepts an access token it verifies as the agent it
	// names (see package oauth), when the token is not in Tokens.
	OAuth *oauth.Verifier
	// ClientCerts accepts a client certificate that the server's
	// tls.Config verified (tls.Config.ClientCAs) as the agent its Subject
	// CommonName names (see "mTLS identities" in the package doc).
	ClientCerts bool
	// Origins are the accepted values of the Origin header (DNS-rebinding
	// protection); a request without one (not from a browser) is accepted.
	Origins []string
	MaxBody int64 // largest POST body; 0 means DefaultMaxBody
	// BodyTimeout bounds the reading of a POST body, from the handler's
	// start; 0 means DefaultBodyTimeout.
	BodyTimeout time.Duration
	// IdleTimeout closes a session this long idle: no request in flight
	// and no GET stream open; 0 means DefaultIdleTimeout.
	IdleTimeout time.Duration
	// MaxSessions bounds each agent's open sessions (each has its own bank
	// server session); 0 means DefaultMaxSessions.
	MaxSessions int
	// MaxBankSessions bounds the open sessions of all agents together,
	// and so the bank server sessions; 0 means DefaultMaxBankSessions.
	MaxBankSessions int
	// MaxRequests bounds each agent's POSTs in flight; 0 means
	// DefaultMaxRequests.
	MaxRequests int
	// Recorder, if set, returns the agent's recorder, which records the
	// refusals of an authenticated agent's requests outside a session
	// (rules session.missing and session.unknown).
	Recorder func(agent string) (proxy.Recorder, error)
	// Start runs one session for agent on side, normally a proxy.Relay
	// with its own downstream session, until side reports io.EOF.
	Start  func(ctx context.Context, agent string, side proxy.AgentSide) error
	Logger *slog.Logger
	// Observer, if set, is told of the refusals recorded outside a
	// session, as a proxy.Relay tells its own (see proxy.Observer).
	Observer proxy.Observer
}

// Server serves agents over MCP streamable HTTP (see the package doc).
type Server struct {
	cfg    Config
	ctx    context.Context // cancelled by Close
	cancel context.CancelFunc
	wg     sync.WaitGroup // sessions' relays and the janitor

	mu       sync.Mutex
	sessions map[string]*session // open and closing, until their relay returns
	requests map[string]int      // POSTs in flight by agent
}

// New returns a server; Close stops it.
func New(cfg Config) *Server {
	if cfg.MaxBody <= 0 {
		cfg.MaxBody = DefaultMaxBody
	}
	cfg.BodyTimeout = orDefault(cfg.BodyTimeout, DefaultBodyTimeout)
	cfg.IdleTimeout = orDefault(cfg.IdleTimeout, DefaultIdleTimeout)
	cfg.MaxSessions = orDefault(cfg.MaxSessions, DefaultMaxSessions)
	cfg.MaxBankSessions = orDefault(cfg.MaxBankSessions, DefaultMaxBankSessions)
	cfg.MaxRequests = orDefault(cfg.MaxRequests, DefaultMaxRequests)
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{cfg: cfg, ctx: ctx, cancel: cancel, sessions: make(map[string]*session), requests: make(map[string]int)}
	s.wg.Add(1)
	go s.janitor()
	return s
}

func orDefault[T int | time.Duration](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
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

// httpError is a refusal with its status.
type httpError struct {
	status int
	msg    string
}

func refuse(w http.ResponseWriter, e *httpError) {
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
	agent, aerr := s.authenticate(r.Context(), r.TLS, r.Header.Get("Authorization"))
	if aerr != nil {
		w.Header().Set("WWW-Authenticate", s.challenge(aerr))
		refuse(w, aerr.httpError)
		return
	}
	var herr *httpError
	switch r.Method {
	case http.MethodPost:
		var release func()
		if release, herr = s.admitRequest(agent); herr == nil {
			herr = s.post(w, r, agent)
			release()
		}
	case http.MethodGet:
		herr = s.get(w, r, agent)
	case http.MethodDelete:
		var ss *session
		if ss, herr = s.lookup(r, agent, nil); herr == nil {
			ss.close() // it leaves the table when its relay returns
			ss.release()
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

// authError is a refused authentication: the refusal and the RFC 6750
// error code of its challenge ("" for none).
type authError struct {
	*httpError
	code string
}

func unauthorized(code, msg string) *authError {
	return &authError{&httpError{http.StatusUnauthorized, msg}, code}
}

// authenticate returns the agent of a request: the one its verified
// client certificate names (state is the connection's TLS state, nil over
// plain HTTP), the one its bearer token (authz, the Authorization header)
// is given to in the tokens file or, with Config.OAuth, names as an access
// token, or, with a certificate and a token, the one they both name.
func (s *Server) authenticate(ctx context.Context, state *tls.ConnectionState, authz string) (string, *authError) {
	certAgent, herr := s.certAgent(state)
	if herr != nil {
		return "", &authError{herr, ""}
	}
	if authz == "" {
		if certAgent != "" {
			return certAgent, nil
		}
		switch {
		case s.cfg.ClientCerts:
			return "", unauthorized("", "no client certificate and no bearer token; present a client certificate of the agents' CA or send Authorization: Bearer TOKEN")
		case s.cfg.OAuth != nil:
			return "", unauthorized("", "missing access token; get one for this resource from the authorization server that its resource_metadata names, and send Authorization: Bearer TOKEN")
		}
		return "", unauthorized("", "missing bearer token; send Authorization: Bearer TOKEN")
	}
	token, ok := strings.CutPrefix(authz, "Bearer ")
	if !ok {
		return "", unauthorized("invalid_token", "the Authorization header is not \"Bearer TOKEN\"")
	}
	agent, ok := s.cfg.Tokens.Agent(token)
	switch {
	case ok:
	case s.cfg.OAuth != nil:
		var err error
		if agent, err = s.cfg.OAuth.Agent(ctx, token); err != nil {
			var oe *oauth.Error
			if !errors.As(err, &oe) {
				return "", unauthorized("invalid_token", err.Error())
			}
			return "", &authError{&httpError{oe.Status, oe.Reason}, oe.Code}
		}
	default:
		return "", unauthorized("invalid_token", "unknown bearer token")
	}
	if certAgent != "" && certAgent != agent {
		return "", unauthorized("invalid_token", fmt.Sprintf("the client certificate is agent %s's but the bearer token is agent %s's; authenticate as one agent", certAgent, agent))
	}
	return agent, nil
}

// challenge returns the WWW-Authenticate value of a refused
// authentication: with Config.OAuth, the one package oauth makes, naming
// the protected resource metadata; otherwise a plain Bearer challenge.
func (s *Server) challenge(e *authError) string {
	if s.cfg.OAuth == nil {
		return `Bearer realm="bankdoor"`
	}
	if e.code == "" {
		return s.cfg.OAuth.Challenge(nil)
	}
	return s.cfg.OAuth.Challenge(&oauth.Error{Status: e.status, Code: e.code, Reason: e.msg})
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

// readBody reads a POST body of application/json (see readLimited).
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, *httpError) {
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		return nil, &httpError{http.StatusUnsupportedMediaType, fmt.Sprintf("Content-Type %q is not application/json", r.Header.Get("Content-Type"))}
	}
	return s.readLimited(w, r)
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
		return s.unreadable(w, r, agent, inFrame{msg: body, key: string(id)}, &httpError{http.StatusBadRequest,
			"body is not one JSON-RPC message (one JSON-RPC 2.0 object; batches are not accepted): " + err.Error()})
	}
	var ss *session
	if r.Header.Get("Mcp-Session-Id") == "" && method == "initialize" && id != nil {
		if ss, herr = s.open(r.Context(), agent); herr != nil {
			return herr
		}
		w.Header().Set("Mcp-Session-Id", ss.id)
	} else if ss, herr = s.lookup(r, agent, body); herr != nil {
		return herr
	} else if method == "initialize" {
		ss.release()
		return &httpError{http.StatusBadRequest, "this session is already initialized; start a new one without Mcp-Session-Id"}
	}
	defer ss.release()
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
// with its id (f.key) or, where that could not be read, id null; that
// answer is the body of a refusal with herr's status (the transport spec
// allows a JSON-RPC error without id in a 400). Without
// a valid session herr itself is the answer, and the refusal leaves a
// receipt in the agent's chain as lookup's do (its args_sha256 is that of
// the body read, empty for one too large).
func (s *Server) unreadable(w http.ResponseWriter, r *http.Request, agent string, f inFrame, herr *httpError) *httpError {
	ss, lerr := s.find(r, agent)
	if lerr != nil {
		rule := RuleSessionUnknown
		if lerr.status == http.StatusBadRequest {
			rule = RuleSessionMissing
		}
		s.recordRefusal(agent, rule, proxy.Event{Decision: "deny", Rule: rule,
			Reason: r.Method + ": " + herr.msg + "; " + lerr.msg, ArgsSHA256: sha256Hex(f.msg)}, herr)
		return herr
	}
	defer ss.release()
	if f.key == "" {
		f.key = ss.nullKey()
	}
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
	herr, aborted := answer(w, r, ss, wt, status)
	if aborted && !strings.HasPrefix(f.key, nullPrefix) {
		ss.send(inFrame{msg: cancelFrame(f.key)})
	}
	return herr
}

// cancelFrame is the notifications/cancelled the relay is handed for the
// request of the raw id key whose POST went away before its answer, as
// if the agent had sent it: a call the server never answers must not
// hold up the session's next (the relay ends it; see package proxy).
func cancelFrame(key string) []byte {
	return []byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":` + key +
		`,"reason":"the client's HTTP request went away before its answer"}}`)
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

// get serves the session's notification stream as text/event-stream.
func (s *Server) get(w http.ResponseWriter, r *http.Request, agent string) *httpError {
	if !strings.Contains(r.Header.Get("Accept"), "text/event-stream") {
		return &httpError{http.StatusNotAcceptable, "GET serves the notification stream: send Accept: text/event-stream"}
	}
	ss, herr := s.lookup(r, agent, nil)
	if herr != nil {
		return herr
	}
	defer ss.release()
	ss.mu.Lock()
	busy := ss.streaming
	ss.streaming = true
	ss.mu.Unlock()
	if busy {
		return &httpError{http.StatusConflict, "this session already has a notification stream open"}
	}
	s.cfg.Logger.Info("notification stream open", "agent", agent, "session", ss.id)
	defer func() {
		ss.mu.Lock()
		ss.streaming = false
		ss.mu.Unlock()
		s.cfg.Logger.Info("notification stream closed", "agent", agent, "session", ss.id)
	}()
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
