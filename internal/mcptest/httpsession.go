package mcptest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bankdoor/bankdoor/proxy"
)

// HTTPSession is one agent session with an MCP streamable HTTP server
// that takes bearer tokens (bankdoor proxy --listen): the SDK client, and
// a raw side that POSTs frames into the same session (see the package doc).
type HTTPSession struct {
	url    string
	client *mcp.ClientSession
	http   *http.Client // adds Authorization: Bearer TOKEN
	ids    atomic.Int64

	mu          sync.Mutex
	unsolicited [][]byte
}

// DialHTTP connects the SDK client to the endpoint url as the agent with
// token, and returns the session.
func DialHTTP(ctx context.Context, url, token string) (*HTTPSession, error) {
	cs, err := ConnectHTTP(ctx, url, token)
	if err != nil {
		return nil, err
	}
	hs := &proxy.HTTPServer{URL: url, Header: http.Header{"Authorization": {"Bearer " + token}}}
	return &HTTPSession{url: url, client: cs, http: hs.Client()}, nil
}

// Client returns the SDK client session.
func (s *HTTPSession) Client() *mcp.ClientSession { return s.client }

// Close ends the session (the SDK client sends DELETE).
func (s *HTTPSession) Close() error { return s.client.Close() }

// NextID returns a fresh raw id as JSON text, as Session.NextID does.
func (s *HTTPSession) NextID() string { return rawID(s.ids.Add(1)) }

// Raw POSTs line, one JSON-RPC message, in the session and returns the
// JSON-RPC message the response carries (an application/json body, or the
// first answer of a text/event-stream body), whatever the status: a 400
// may carry a JSON-RPC error with id null. A response with neither, such
// as a refusal in text, is an error naming its status and body.
func (s *HTTPSession) Raw(ctx context.Context, line []byte) ([]byte, error) {
	resp, body, err := s.post(ctx, line)
	if err != nil {
		return nil, err
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch {
	case mt == "application/json" && len(bytes.TrimSpace(body)) > 0:
		return bytes.TrimSpace(body), nil
	case mt == "text/event-stream":
		if msg := firstAnswer(body); msg != nil {
			return msg, nil
		}
	}
	return nil, fmt.Errorf("no JSON-RPC answer to the raw frame: HTTP %s, Content-Type %q: %q", resp.Status, resp.Header.Get("Content-Type"), body)
}

// RawNoReply POSTs line, a notification. It must get 202 Accepted and no
// body; any other response is kept as an answer, for Unsolicited.
func (s *HTTPSession) RawNoReply(line []byte) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, body, err := s.post(ctx, line)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusAccepted || len(body) > 0 {
		s.mu.Lock()
		s.unsolicited = append(s.unsolicited, fmt.Appendf(nil, "HTTP %s: %s", resp.Status, body))
		s.mu.Unlock()
	}
	return nil
}

// Unsolicited returns the answers to notifications kept since the last
// call, and forgets them. Each POST is answered before RawNoReply
// returns, so there is nothing to wait for.
func (s *HTTPSession) Unsolicited(context.Context) ([][]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	got := s.unsolicited
	s.unsolicited = nil
	return got, nil
}

// post sends one message in the session, as the streamable HTTP transport
// does, and reads the whole response.
func (s *HTTPSession) post(ctx context.Context, msg []byte) (*http.Response, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url, bytes.NewReader(msg))
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", s.client.ID())
	req.Header.Set("Mcp-Protocol-Version", ProtocolVersion)
	resp, err := s.http.Do(req)
	if err != nil {
		return nil, nil, fmt.Errorf("posting a raw frame to %s: %w", s.url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, nil, fmt.Errorf("reading the answer to a raw frame (HTTP %s): %w", resp.Status, err)
	}
	return resp, body, nil
}

// firstAnswer returns the data of the first event of a text/event-stream
// body that is a JSON-RPC answer (a message with an id and no method),
// or nil.
func firstAnswer(body []byte) []byte {
	for event := range bytes.SplitSeq(bytes.ReplaceAll(body, []byte("\r\n"), []byte("\n")), []byte("\n\n")) {
		var data [][]byte
		for line := range bytes.SplitSeq(event, []byte("\n")) {
			if d, ok := bytes.CutPrefix(line, []byte("data:")); ok {
				data = append(data, bytes.TrimPrefix(d, []byte(" ")))
			}
		}
		if msg := bytes.Join(data, []byte("\n")); isAnswer(msg) {
			return msg
		}
	}
	return nil
}

// isAnswer reports whether msg is a JSON object with an id and no method.
func isAnswer(msg []byte) bool {
	var m map[string]json.RawMessage
	if json.Unmarshal(msg, &m) != nil {
		return false
	}
	_, id := m["id"]
	_, method := m["method"]
	return id && !method
}
