package httpserve

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/bankdoor/bankdoor/proxy"
)

// Defaults for the limits of Config; the package doc says why each is what
// it is ("Sessions and limits").
const (
	DefaultIdleTimeout     = 2 * time.Minute
	DefaultMaxSessions     = 16
	DefaultMaxBankSessions = 64
	DefaultMaxRequests     = 16
	DefaultBodyTimeout     = 10 * time.Second
)

// evictWait bounds how long the initialize of a new session waits for the
// relay of the session evicted to make room for it to return (and so for
// its bank server session to end).
const evictWait = 10 * time.Second

// Rule ids of the receipts of refusals outside a session.
const (
	RuleSessionMissing = "session.missing"
	RuleSessionUnknown = "session.unknown"
)

// lookup returns the open session named by the Mcp-Session-Id header, held
// for the request (see find); a request without one is refused, and the
// refusal leaves a receipt in the agent's chain, whose args_sha256 is the
// SHA-256 of body (the POST's, nil for GET and DELETE), as for a frame the
// relay cannot read.
func (s *Server) lookup(r *http.Request, agent string, body []byte) (*session, *httpError) {
	ss, herr := s.find(r, agent)
	if herr != nil {
		rule := RuleSessionUnknown
		if herr.status == http.StatusBadRequest {
			rule = RuleSessionMissing
		}
		s.recordRefusal(agent, rule, proxy.Event{Decision: "deny", Rule: rule,
			Reason: r.Method + ": " + herr.msg, ArgsSHA256: sha256Hex(body)}, herr)
	}
	return ss, herr
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// find returns the open session named by the Mcp-Session-Id header, held
// for the request: it is not idle, so neither evicted nor idled out, until
// the caller releases it. A session of another agent, or one closing, is
// unknown to this one.
func (s *Server) find(r *http.Request, agent string) (*session, *httpError) {
	id := r.Header.Get("Mcp-Session-Id")
	if id == "" {
		return nil, &httpError{http.StatusBadRequest, "missing Mcp-Session-Id header; start a session with initialize"}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ss := s.sessions[id]
	if ss == nil || ss.agent != agent || ss.isClosing() {
		return nil, &httpError{http.StatusNotFound, "unknown session id (ended, idle too long, evicted, or never started); start a new session with initialize"}
	}
	ss.hold()
	return ss, nil
}

// open starts a session for agent, held for the initialize that opens it:
// a fresh id and its relay. When the agent has Config.MaxSessions sessions,
// or the server Config.MaxBankSessions, it first closes the least recently
// used idle one (of the agent's, or of all) and waits for its relay to
// return, so that the bank server sessions never outnumber the limits.
func (s *Server) open(ctx context.Context, agent string) (*session, *httpError) {
	var b [16]byte
	rand.Read(b[:])
	ss := newSession(hex.EncodeToString(b[:]), agent, time.Now())
	ss.hold()
	timeout := time.NewTimer(evictWait)
	defer timeout.Stop()
	for {
		s.mu.Lock()
		gone, herr := s.makeRoom(agent)
		if gone == nil && herr == nil {
			s.sessions[ss.id] = ss
		}
		s.mu.Unlock()
		if herr != nil {
			return nil, herr
		}
		if gone == nil {
			break
		}
		select {
		case <-gone:
		case <-ctx.Done():
			return nil, &httpError{http.StatusServiceUnavailable, "the request ended while waiting for an evicted session to close"}
		case <-timeout.C:
			return nil, &httpError{http.StatusServiceUnavailable, fmt.Sprintf("an evicted session's bank server session did not end within %s; try again", evictWait)}
		}
	}
	s.wg.Add(1)
	go s.run(ss)
	s.cfg.Logger.Info("session started", "agent", agent, "session", ss.id)
	return ss, nil
}

// run runs the session's relay; when it returns, the session leaves the
// table, and only then is it done.
func (s *Server) run(ss *session) {
	defer s.wg.Done()
	err := s.cfg.Start(s.ctx, ss.agent, ss)
	if err != nil {
		s.cfg.Logger.Error("session ended", "agent", ss.agent, "session", ss.id, "err", err)
	}
	ss.close()
	s.mu.Lock()
	delete(s.sessions, ss.id)
	s.mu.Unlock()
	ss.finish(err)
}

// makeRoom decides, with s.mu held, whether agent may open a session now.
// It returns nil, nil if it may; the done channel of a session that is
// closing to make room (wait for it, then ask again); or a refusal when
// every session that could make room is busy.
func (s *Server) makeRoom(agent string) (<-chan struct{}, *httpError) {
	if s.ctx.Err() != nil {
		return nil, &httpError{http.StatusServiceUnavailable, "the gateway is shutting down"}
	}
	mine := 0
	for _, o := range s.sessions {
		if o.agent == agent {
			mine++
		}
	}
	var refusal *httpError
	switch {
	case mine >= s.cfg.MaxSessions:
		refusal = &httpError{http.StatusTooManyRequests, fmt.Sprintf(
			"agent %s has %d open sessions, the most allowed, and each has a request in flight or a stream open; end one with DELETE or wait for one to finish", agent, mine)}
	case len(s.sessions) >= s.cfg.MaxBankSessions:
		refusal = &httpError{http.StatusServiceUnavailable, fmt.Sprintf(
			"the gateway has %d open sessions, the most allowed, and each has a request in flight or a stream open; try again later", len(s.sessions))}
	default:
		return nil, nil
	}
	var lru *session
	var lruSince time.Time
	for _, o := range s.sessions {
		if refusal.status == http.StatusTooManyRequests && o.agent != agent {
			continue
		}
		if o.isClosing() {
			return o.done, nil
		}
		if since, idle := o.idle(); idle && (lru == nil || since.Before(lruSince)) {
			lru, lruSince = o, since
		}
	}
	if lru == nil {
		return nil, refusal
	}
	s.cfg.Logger.Info("evicting the least recently used idle session", "agent", lru.agent, "session", lru.id, "for", agent)
	lru.close()
	return lru.done, nil
}

// janitor closes sessions idle for longer than IdleTimeout; each leaves
// the table when its relay returns.
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
				if since, idle := ss.idle(); idle && !ss.isClosing() && now.Sub(since) > s.cfg.IdleTimeout {
					s.cfg.Logger.Info("closing an idle session", "agent", ss.agent, "session", id)
					ss.close()
				}
			}
			s.mu.Unlock()
		}
	}
}

// admitRequest counts a POST of agent in flight, or refuses it past
// Config.MaxRequests; release uncounts it.
func (s *Server) admitRequest(agent string) (release func(), herr *httpError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n := s.requests[agent]; n >= s.cfg.MaxRequests {
		return nil, &httpError{http.StatusTooManyRequests, fmt.Sprintf(
			"agent %s has %d requests in flight, the most allowed; wait for an answer before sending more", agent, n)}
	}
	s.requests[agent]++
	return func() {
		s.mu.Lock()
		if s.requests[agent]--; s.requests[agent] == 0 {
			delete(s.requests, agent)
		}
		s.mu.Unlock()
	}, nil
}

// readLimited reads a body of at most Config.MaxBody bytes within
// Config.BodyTimeout of the handler's start; the rest of a longer one is
// never read.
func (s *Server) readLimited(w http.ResponseWriter, r *http.Request) ([]byte, *httpError) {
	rc := http.NewResponseController(w)
	deadline := rc.SetReadDeadline(time.Now().Add(s.cfg.BodyTimeout)) == nil
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxBody))
	if deadline && err == nil {
		// The connection's background read (which notices a client gone)
		// must not time out while the request is served.
		rc.SetReadDeadline(time.Time{})
	}
	var tooLarge *http.MaxBytesError
	var ne net.Error
	switch {
	case errors.As(err, &tooLarge):
		return nil, &httpError{http.StatusRequestEntityTooLarge, fmt.Sprintf("body is longer than %d bytes", s.cfg.MaxBody)}
	case errors.Is(err, os.ErrDeadlineExceeded) || errors.As(err, &ne) && ne.Timeout():
		w.Header().Set("Connection", "close") // never wait for the rest
		return nil, &httpError{http.StatusRequestTimeout, fmt.Sprintf("the body did not arrive within %s; send it whole", s.cfg.BodyTimeout)}
	case err != nil:
		return nil, &httpError{http.StatusBadRequest, "reading the body: " + err.Error()}
	}
	return body, nil
}

// recordRefusal records ev, the refusal herr of a request outside a
// session, in agent's chain and names its receipt in herr's message.
func (s *Server) recordRefusal(agent, rule string, ev proxy.Event, herr *httpError) {
	if s.cfg.Recorder == nil {
		return
	}
	if s.cfg.Observer != nil {
		s.cfg.Observer.Decided(ev.Decision, ev.Rule, ev.Tool, 0)
	}
	rec, err := s.cfg.Recorder(agent)
	var id string
	if err == nil {
		start := time.Now()
		id, err = rec.Record(ev)
		if s.cfg.Observer != nil {
			s.cfg.Observer.Recorded(ev.Decision, time.Since(start), err)
		}
	}
	if err != nil {
		s.cfg.Logger.Error("recording a refusal", "agent", agent, "rule", rule, "err", err)
		herr.status = http.StatusInternalServerError
		herr.msg = fmt.Sprintf("%s: %s (its receipt could not be written: %v)", rule, herr.msg, err)
		return
	}
	herr.msg = fmt.Sprintf("%s: %s (receipt %s)", rule, herr.msg, id)
}

// Sessions returns the number of open sessions of each agent that has
// one, for metrics.
func (s *Server) Sessions() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := make(map[string]int)
	for _, ss := range s.sessions {
		if !ss.isClosing() {
			n[ss.agent]++
		}
	}
	return n
}
