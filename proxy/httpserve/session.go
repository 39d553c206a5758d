package httpserve

import (
	"io"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/bankdoor/bankdoor/internal/jsonobj"
)

// streamBuffer is how many messages for the agent's notification stream
// wait while no GET stream is open; more are dropped (the relay re-checks
// pins itself, so a lost notification costs the agent freshness only).
const streamBuffer = 64

// inFrame is one agent message and the key of its id ("" if none), or the
// error ReadFrame returns in its place (a body too large to read).
type inFrame struct {
	msg []byte
	key string
	err error
}

// session is one agent session: the proxy.AgentSide its relay runs on,
// fed by POSTs and drained into their answers and the GET stream.
type session struct {
	id, agent string

	in        chan inFrame
	closing   chan struct{} // closed by close: the agent is done
	closeOnce sync.Once
	done      chan struct{} // closed when the relay has returned
	err       error         // why the relay returned; read after done

	nulls atomic.Uint64 // numbers the keys of frames answered with id null

	mu        sync.Mutex
	waiters   map[string]*waiter // POSTs awaiting their answers, by id key
	current   string             // id key of the frame the relay handles now
	stream    chan []byte        // messages for the GET stream
	streaming bool               // a GET stream is open
	inflight  int                // requests of the agent being served (POSTs, the GET stream)
	lastSeen  time.Time          // when the last of them began or ended
}

func newSession(id, agent string, now time.Time) *session {
	return &session{id: id, agent: agent, in: make(chan inFrame), closing: make(chan struct{}),
		done: make(chan struct{}), waiters: make(map[string]*waiter),
		stream: make(chan []byte, streamBuffer), lastSeen: now}
}

// SessionID implements proxy.SessionIDer: the session's Mcp-Session-Id
// becomes the mcp.session.id of its spans.
func (s *session) SessionID() string { return s.id }

// ReadFrame implements proxy.AgentSide.
func (s *session) ReadFrame() ([]byte, error) {
	select {
	case f := <-s.in:
		s.mu.Lock()
		s.current = f.key
		s.mu.Unlock()
		return f.msg, f.err
	case <-s.closing:
		return nil, io.EOF
	}
}

// WriteFrame implements proxy.AgentSide: an answer goes to the POST that
// awaits it (an answer with a null id to the frame being handled, which is
// the one the relay could not read an id from: the relay answers each
// frame it cannot read before it reads the next), and is dropped if that
// POST has returned (the transport spec forbids answers on the GET
// stream); anything else goes to the GET stream.
func (s *session) WriteFrame(msg []byte) error {
	msg = append([]byte(nil), msg...)
	if key, ok := answerKey(msg); ok {
		s.mu.Lock()
		if key == "null" {
			key = s.current
		}
		w := s.waiters[key]
		delete(s.waiters, key)
		s.mu.Unlock()
		if w != nil {
			w.put(postMsg{msg: msg, answer: true})
		}
		return nil
	}
	s.toStream(msg)
	return nil
}

// WriteRelated implements proxy.RelatedWriter: a message related to the
// agent's request id goes on that request's POST if the POST awaits its
// answer and accepts text/event-stream, else on the GET stream.
func (s *session) WriteRelated(msg []byte, id jsontext.Value) error {
	msg = append([]byte(nil), msg...)
	s.mu.Lock()
	w := s.waiters[string(id)]
	s.mu.Unlock()
	if w != nil && w.events && w.put(postMsg{msg: msg}) {
		return nil
	}
	s.toStream(msg)
	return nil
}

// toStream queues msg for the GET stream, or drops it if streamBuffer
// messages wait already.
func (s *session) toStream(msg []byte) {
	select {
	case s.stream <- msg:
	default:
	}
}

// nullKey returns a fresh key for a frame the relay answers with id null.
// No JSON id has this form, so it never collides with a request's key, and
// an answer that comes after its POST gave up never reaches another POST.
func (s *session) nullKey() string { return nullPrefix + strconv.FormatUint(s.nulls.Add(1), 10) }

// nullPrefix starts every key nullKey returns: no raw id starts so.
const nullPrefix = "null#"

// answerKey returns the id key of a response; ok is false for requests
// and notifications.
func answerKey(msg []byte) (string, bool) {
	obj, err := jsonobj.ParseLenient(msg)
	if err != nil || obj.Get("method") != nil || obj.Get("id") == nil {
		return "", false
	}
	return string(obj.Get("id")), true
}

// await registers a POST waiting for the answer to id key (events: it
// accepts text/event-stream); false if a request with that id is already
// open.
func (s *session) await(key string, events bool) (*waiter, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, busy := s.waiters[key]; busy {
		return nil, false
	}
	w := newWaiter(events)
	s.waiters[key] = w
	return w, true
}

// forget unregisters a POST that returns, answered or not.
func (s *session) forget(key string, w *waiter) {
	s.mu.Lock()
	if s.waiters[key] == w {
		delete(s.waiters, key)
	}
	s.mu.Unlock()
	w.leave()
}

// send hands a frame to the relay; false if the session is over.
func (s *session) send(f inFrame) bool {
	select {
	case s.in <- f:
		return true
	case <-s.closing:
	case <-s.done:
	}
	return false
}

// hold counts a request of the agent in flight: the session is not idle
// until its release.
func (s *session) hold() {
	s.mu.Lock()
	s.inflight++
	s.lastSeen = time.Now()
	s.mu.Unlock()
}

func (s *session) release() {
	s.mu.Lock()
	s.inflight--
	s.lastSeen = time.Now()
	s.mu.Unlock()
}

// idle reports whether the session is idle (no request of the agent in
// flight, no GET stream open) and since when it has been.
func (s *session) idle() (since time.Time, idle bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastSeen, s.inflight == 0
}

// isClosing reports whether close was called.
func (s *session) isClosing() bool {
	select {
	case <-s.closing:
		return true
	default:
		return false
	}
}

// close tells the relay the agent is done; the relay then drains and returns.
func (s *session) close() { s.closeOnce.Do(func() { close(s.closing) }) }

// finish records that the relay returned.
func (s *session) finish(err error) {
	s.err = err
	close(s.done)
}
