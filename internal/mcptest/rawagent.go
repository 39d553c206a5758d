package mcptest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// A RawAgent is an agent that writes its own JSON-RPC frames, with no SDK
// client: it can ask for any protocol version, pipeline its calls and
// leave out notifications/initialized. StdioAgent is one over a child's
// stdin and stdout, HTTPAgent one of an MCP streamable HTTP endpoint.
type RawAgent interface {
	// Start sends a request whose id is the JSON string id and returns
	// where its answer will arrive.
	Start(ctx context.Context, id string, frame []byte) <-chan Answer
	// Notify sends a notification.
	Notify(frame []byte) error
	// Close ends the session; see each type for what it waits for.
	Close() error
}

// Answer is one JSON-RPC answer, or why there is none.
type Answer struct {
	Msg []byte
	Err error
}

// Request is a.Start, then waiting for the answer.
func Request(ctx context.Context, a RawAgent, id string, frame []byte) ([]byte, error) {
	select {
	case ans := <-a.Start(ctx, id, frame):
		return ans.Msg, ans.Err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// StdioAgent is a RawAgent of a child process (bankdoor proxy) over its
// stdin and stdout.
type StdioAgent struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr SyncBuffer
	done   chan struct{} // closed when stdout is at its end
	// Notes gets the methods of the notifications the child writes, as
	// long as there is room (16).
	Notes chan string

	mu      sync.Mutex
	waiting map[string]chan Answer // by id, as JSON text
	inMu    sync.Mutex
	closed  bool
}

// StartStdioAgent starts cmd, which must not have Stdin, Stdout or Stderr
// set, as the agent's peer.
func StartStdioAgent(cmd *exec.Cmd) (*StdioAgent, error) {
	a := &StdioAgent{cmd: cmd, done: make(chan struct{}), waiting: make(map[string]chan Answer), Notes: make(chan string, 16)}
	cmd.Stderr = &a.stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", cmd.Path, err)
	}
	a.stdin = stdin
	go a.read(stdout)
	return a, nil
}

// Stderr returns what the child wrote to stderr so far.
func (a *StdioAgent) Stderr() string { return a.stderr.String() }

// read routes each answer to its waiting request and each notification's
// method to Notes; server requests are dropped.
func (a *StdioAgent) read(stdout io.Reader) {
	defer close(a.done)
	sc := bufio.NewScanner(stdout)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal(sc.Bytes(), &m) != nil {
			continue
		}
		if m.ID == nil {
			select {
			case a.Notes <- m.Method:
			default:
			}
			continue
		}
		a.mu.Lock()
		ch := a.waiting[string(m.ID)]
		delete(a.waiting, string(m.ID))
		a.mu.Unlock()
		if ch != nil {
			ch <- Answer{Msg: bytes.Clone(sc.Bytes())}
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for id, ch := range a.waiting {
		ch <- Answer{Err: fmt.Errorf("the program closed its output before answering %s", id)}
		delete(a.waiting, id)
	}
}

// Start implements RawAgent.
func (a *StdioAgent) Start(ctx context.Context, id string, frame []byte) <-chan Answer {
	ch := make(chan Answer, 1)
	a.mu.Lock()
	a.waiting[`"`+id+`"`] = ch
	a.mu.Unlock()
	if err := a.write(frame); err != nil {
		ch <- Answer{Err: err}
	}
	return ch
}

func (a *StdioAgent) write(frame []byte) error {
	a.inMu.Lock()
	defer a.inMu.Unlock()
	if a.closed {
		return errors.New("stdin of the program is closed")
	}
	_, err := a.stdin.Write(append(bytes.Clone(frame), '\n'))
	return err
}

// Notify implements RawAgent.
func (a *StdioAgent) Notify(frame []byte) error { return a.write(frame) }

// Close closes stdin and waits for the child (and the bank behind it) to
// exit, killing it after 30 seconds. It returns the child's exit error,
// or an error if its stderr reports a data race.
func (a *StdioAgent) Close() error {
	a.inMu.Lock()
	first := !a.closed
	a.closed = true
	a.stdin.Close()
	a.inMu.Unlock()
	if !first {
		return nil
	}
	var err error
	select {
	case <-a.done:
	case <-time.After(30 * time.Second):
		a.cmd.Process.Kill()
		err = errors.New("the program did not close its output within 30s of its stdin closing")
	}
	if werr := a.cmd.Wait(); err == nil && werr != nil {
		err = fmt.Errorf("%s: %w%s", a.cmd.Path, werr, tail(a.Stderr()))
	}
	if err == nil && strings.Contains(a.Stderr(), "WARNING: DATA RACE") {
		err = fmt.Errorf("%s reported a data race%s", a.cmd.Path, tail(a.Stderr()))
	}
	return err
}

// HTTPAgent is a RawAgent of an MCP streamable HTTP endpoint that takes a
// bearer token (bankdoor proxy --listen): each frame is a POST in the
// session, answered on its own response. The answer to initialize sets
// the session; Start and Notify after it may run at once.
type HTTPAgent struct {
	URL, Token string
	mu         sync.Mutex
	session    string
}

// Start implements RawAgent.
func (a *HTTPAgent) Start(ctx context.Context, id string, frame []byte) <-chan Answer {
	ch := make(chan Answer, 1)
	go func() {
		msg, err := a.post(ctx, frame)
		ch <- Answer{msg, err}
	}()
	return ch
}

// Notify implements RawAgent.
func (a *HTTPAgent) Notify(frame []byte) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := a.post(ctx, frame)
	return err
}

// post sends one frame and returns the JSON-RPC answer of its response
// (nil for 202 Accepted).
func (a *HTTPAgent) post(ctx context.Context, frame []byte) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.URL, bytes.NewReader(frame))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+a.Token)
	a.mu.Lock()
	if a.session != "" {
		req.Header.Set("Mcp-Session-Id", a.session)
	}
	a.mu.Unlock()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if sid := resp.Header.Get("Mcp-Session-Id"); sid != "" {
		a.mu.Lock()
		if a.session == "" {
			a.session = sid
		}
		a.mu.Unlock()
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch {
	case resp.StatusCode == http.StatusAccepted:
		return nil, nil
	case mt == "application/json":
		return bytes.TrimSpace(body), nil
	case mt == "text/event-stream":
		if msg := firstAnswer(body); msg != nil {
			return msg, nil
		}
	}
	return nil, fmt.Errorf("HTTP %s, Content-Type %q: %q", resp.Status, resp.Header.Get("Content-Type"), body)
}

// Close ends the session with DELETE.
func (a *HTTPAgent) Close() error {
	a.mu.Lock()
	sid := a.session
	a.mu.Unlock()
	req, err := http.NewRequest(http.MethodDelete, a.URL, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+a.Token)
	req.Header.Set("Mcp-Session-Id", sid)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	return resp.Body.Close()
}
