package httpserve

import (
	"fmt"
	"mime"
	"net/http"
	"strings"

	"github.com/bankdoor/bankdoor/proxy"
)

// This file is the answer to a POSTed request: its JSON-RPC answer as
// application/json, or, when the bank server sends messages related to the
// request before answering it, a text/event-stream of those messages and
// then the answer (see "Requests and refusals" in the package doc).

// postMsg is one message for a POST: related to its request, or its answer.
type postMsg struct {
	msg    []byte
	answer bool
}

// waiter is a POST awaiting the answer to its request.
type waiter struct {
	events bool          // the POST accepts text/event-stream
	msgs   chan postMsg  // related messages then the answer, in the relay's order
	gone   chan struct{} // closed when the POST has returned
}

func newWaiter(events bool) *waiter {
	return &waiter{events: events, msgs: make(chan postMsg, streamBuffer), gone: make(chan struct{})}
}

// put hands m to the POST, waiting while streamBuffer messages wait for
// it; false if the POST has returned.
func (w *waiter) put(m postMsg) bool {
	select {
	case <-w.gone:
		return false
	default:
	}
	select {
	case w.msgs <- m:
		return true
	case <-w.gone:
		return false
	}
}

// leave marks the POST returned; it is called once, by session.forget.
func (w *waiter) leave() { close(w.gone) }

// acceptsEvents reports whether the request's Accept header lists
// text/event-stream.
func acceptsEvents(r *http.Request) bool {
	for _, v := range r.Header.Values("Accept") {
		for t := range strings.SplitSeq(v, ",") {
			if mt, _, err := mime.ParseMediaType(strings.TrimSpace(t)); err == nil && mt == "text/event-stream" {
				return true
			}
		}
	}
	return false
}

// answer writes, with status, what the relay sends wt: the answer alone as
// application/json, or, from a related message on, a text/event-stream of
// each message as it comes, which ends after the answer. aborted is true
// if the POST went away before the answer.
func answer(w http.ResponseWriter, r *http.Request, ss *session, wt *waiter, status int) (herr *httpError, aborted bool) {
	streaming := false
	for {
		var m postMsg
		select {
		case m = <-wt.msgs:
		case <-ss.done:
			select { // what the relay wrote before it returned is still served
			case m = <-wt.msgs:
			default:
				if streaming {
					return nil, false
				}
				return ended(ss), false
			}
		case <-r.Context().Done():
			return nil, true
		}
		if m.answer && !streaming {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			w.Write(m.msg)
			return nil, false
		}
		if !streaming {
			w.Header().Set("Content-Type", "text/event-stream")
			w.Header().Set("Cache-Control", "no-store")
			w.WriteHeader(status)
			streaming = true
		}
		writeEvent(w, m.msg)
		if m.answer {
			return nil, false
		}
	}
}

// writeEvent writes msg as one "message" event, its one data line, and
// flushes it. An event stream ends a line at CR or LF, so a raw one in
// msg is written as a space (proxy.OneLine).
func writeEvent(w http.ResponseWriter, msg []byte) {
	fmt.Fprintf(w, "event: message\ndata: %s\n\n", proxy.OneLine(msg))
	flush(w)
}
