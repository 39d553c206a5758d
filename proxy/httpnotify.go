package proxy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// maxEvent bounds one server-sent event on the notification stream.
const maxEvent = DefaultMaxFrame

// notifyConn is the SDK's streamable HTTP client connection plus the
// standalone notification stream (an HTTP GET answered with
// text/event-stream, MCP streamable HTTP transport, "Listening for
// Messages from the Server"). The SDK opens that stream only for its own
// client sessions, never for a bare Connection, yet the relay needs it:
// notifications/tools/list_changed arrives there, and the pins must be
// checked again after it.
//
// The stream is opened when the relay sends notifications/initialized
// (which it does itself as soon as initialize is answered), and
// its response headers are awaited before Write returns, so no
// notification sent after the handshake is lost. A server that answers the
// GET with 405 offers no stream (the spec allows it), as a stdio server
// that never notifies. A stream that breaks after it was opened ends the
// session (Read fails): a gate that could miss a list change must not go on.
type notifyConn struct {
	mcp.Connection
	client *http.Client
	url    string

	ctx    context.Context // cancelled by Close
	cancel context.CancelFunc
	in     chan readResult // from the SDK connection
	notes  chan jsonrpc.Message
	broken chan error // at most one: why the notification stream ended

	mu        sync.Mutex
	initID    jsonrpc.ID // id of the initialize request
	version   string     // protocolVersion of the initialize result
	listening bool
}

type readResult struct {
	msg jsonrpc.Message
	err error
}

func newNotifyConn(c mcp.Connection, client *http.Client, url string) *notifyConn {
	ctx, cancel := context.WithCancel(context.Background())
	n := &notifyConn{Connection: c, client: client, url: url, ctx: ctx, cancel: cancel,
		in: make(chan readResult), notes: make(chan jsonrpc.Message), broken: make(chan error, 1)}
	go n.pump()
	return n
}

// pump moves the SDK connection's messages to n.in until it fails.
func (n *notifyConn) pump() {
	for {
		msg, err := n.Connection.Read(n.ctx)
		select {
		case n.in <- readResult{msg, err}:
		case <-n.ctx.Done():
			return
		}
		if err != nil {
			return
		}
	}
}

// Read returns the next message from either stream.
func (n *notifyConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case r := <-n.in:
		if r.err == nil {
			n.noteVersion(r.msg)
		}
		return r.msg, r.err
	case msg := <-n.notes:
		return msg, nil
	case err := <-n.broken:
		return nil, err
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-n.ctx.Done():
		return nil, io.EOF
	}
}

// noteVersion keeps the protocol version of the initialize result, which
// the notification stream's request must carry.
func (n *notifyConn) noteVersion(msg jsonrpc.Message) {
	resp, ok := msg.(*jsonrpc.Response)
	n.mu.Lock()
	defer n.mu.Unlock()
	if !ok || !n.initID.IsValid() || resp.ID != n.initID || resp.Error != nil {
		return
	}
	var r struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	if json.Unmarshal(resp.Result, &r) == nil {
		n.version = r.ProtocolVersion
	}
}

// Write sends msg; after notifications/initialized it opens the
// notification stream.
func (n *notifyConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	req, isReq := msg.(*jsonrpc.Request)
	if isReq && req.Method == "initialize" {
		n.mu.Lock()
		n.initID = req.ID
		n.mu.Unlock()
	}
	if err := n.Connection.Write(ctx, msg); err != nil {
		return err
	}
	if !isReq || req.Method != "notifications/initialized" {
		return nil
	}
	n.mu.Lock()
	first := !n.listening
	n.listening = true
	n.mu.Unlock()
	if !first {
		return nil
	}
	return n.listen(ctx)
}

// listen opens the notification stream and reads it in the background.
func (n *notifyConn) listen(ctx context.Context) error {
	req, err := http.NewRequestWithContext(n.ctx, http.MethodGet, n.url, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "text/event-stream")
	n.mu.Lock()
	if n.version != "" {
		req.Header.Set("Mcp-Protocol-Version", n.version)
	}
	n.mu.Unlock()
	if sid := n.SessionID(); sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
	}
	resp, err := n.client.Do(req)
	if err != nil {
		return fmt.Errorf("opening the notification stream (GET %s): %w", n.url, err)
	}
	if resp.StatusCode == http.StatusMethodNotAllowed {
		resp.Body.Close()
		return nil
	}
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusOK || !bytes.HasPrefix([]byte(ct), []byte("text/event-stream")) {
		resp.Body.Close()
		return fmt.Errorf("opening the notification stream (GET %s): status %s, content type %q; want 200 text/event-stream or 405", n.url, resp.Status, ct)
	}
	go n.readStream(resp.Body)
	return nil
}

// readStream relays the stream's messages until it ends, then reports why.
func (n *notifyConn) readStream(body io.ReadCloser) {
	defer body.Close()
	err := readEvents(body, func(data []byte) error {
		msg, err := jsonrpc.DecodeMessage(data)
		if err != nil {
			return fmt.Errorf("an event is not a JSON-RPC message: %w", err)
		}
		select {
		case n.notes <- msg:
			return nil
		case <-n.ctx.Done():
			return n.ctx.Err()
		}
	})
	if n.ctx.Err() != nil {
		return
	}
	if err == nil {
		err = io.EOF
	}
	n.broken <- fmt.Errorf("the bank server's notification stream (GET %s) ended: %w", n.url, err)
}

// readEvents calls fn with the data of each "message" event of a
// text/event-stream (WHATWG HTML, "Server-sent events"): data lines are
// joined with "\n"; an event ends at a blank line; comments, ids and retry
// fields are skipped. It returns nil at the end of the stream.
func readEvents(r io.Reader, fn func(data []byte) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxEvent)
	var data []byte
	event, have := "", false
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 {
			if have && (event == "" || event == "message") {
				if err := fn(data); err != nil {
					return err
				}
			}
			data, event, have = data[:0], "", false
			continue
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "data":
			if have {
				data = append(data, '\n')
			}
			data, have = append(data, value...), true
		case "event":
			event = string(value)
		}
	}
	if errors.Is(sc.Err(), bufio.ErrTooLong) {
		return fmt.Errorf("an event line is longer than %d bytes", maxEvent)
	}
	return sc.Err()
}

// Close closes both streams and ends the session with a DELETE. The
// DELETE is best-effort (the server may be gone, which is why the relay
// closes): its failure is not reported, so that the relay names the
// cause it saw first rather than this echo of it.
func (n *notifyConn) Close() error {
	n.cancel()
	n.Connection.Close()
	return nil
}
