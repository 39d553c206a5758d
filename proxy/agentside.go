package proxy

import (
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/go-json-experiment/json/jsontext"
)

// An AgentSide is the agent's end of one session: it carries one JSON-RPC
// message per frame, never a batch split across frames. The relay reads
// frames from one goroutine and writes them from several, one at a time.
//
// Run uses a line-delimited AgentSide over the agent's stdin and stdout
// (the MCP stdio transport); a server of agents over HTTP gives each
// session its own AgentSide and calls RunAgent.
type AgentSide interface {
	// ReadFrame returns the agent's next message. It returns io.EOF when
	// the agent is done, and a *FrameTooLargeError for a message that was
	// discarded for its size (reading may go on).
	ReadFrame() ([]byte, error)
	// WriteFrame sends one message to the agent. An error stops the relay.
	WriteFrame(msg []byte) error
}

// A RelatedWriter is an AgentSide that can send a message on the stream
// of the agent's request it relates to, as MCP streamable HTTP does when
// it answers a POST with text/event-stream. The relay calls WriteRelated
// instead of WriteFrame for a message of the server related to one of the
// agent's requests still open at the server (see "Related messages" in
// the package doc): id is that request's id, as the agent sent it. The
// relay writes the request's related messages, then its answer, in the
// order the server sent them, one frame at a time.
type RelatedWriter interface {
	WriteRelated(msg []byte, id jsontext.Value) error
}

// An InputCloser is an AgentSide that can tell the end of the agent's
// input before the relay has read that far. While the relay waits for the
// server's answer to initialize it reads no frame; if the input closes
// meanwhile, it stops waiting and answers the agent's initialize with an
// error, so that a server that never answers does not keep the session.
type InputCloser interface {
	InputClosed() <-chan struct{}
}

// FrameTooLargeError is a message longer than the agent side accepts. The
// relay answers it with frame.too_large and goes on.
type FrameTooLargeError struct{ Max int }

func (e *FrameTooLargeError) Error() string {
	return fmt.Sprintf("message is longer than %d bytes", e.Max)
}

// LineAgent is the MCP stdio transport: newline-delimited messages of at
// most maxFrame bytes (0 means DefaultMaxFrame) read from in, written to
// out with a newline. It reads one line ahead of the relay, and is an
// InputCloser.
func LineAgent(in io.Reader, out io.Writer, maxFrame int) AgentSide {
	return newLineAgent(in, out, maxFrame)
}

func newLineAgent(in io.Reader, out io.Writer, maxFrame int) *lineAgent {
	return &lineAgent{lr: newLineReader(in, maxFrame), out: out,
		lines: make(chan lineRead), closed: make(chan struct{}), stopped: make(chan struct{})}
}

type lineAgent struct {
	lr      *lineReader
	out     io.Writer
	start   sync.Once
	lines   chan lineRead // closed after the error that ends the input
	closed  chan struct{} // closed when the input ends
	end     error         // that error, once lines is closed
	stopped chan struct{} // closed by stop: no more reads are wanted
}

type lineRead struct {
	line []byte
	err  error
}

func (a *lineAgent) ReadFrame() ([]byte, error) {
	a.start.Do(func() { go a.readAhead() })
	l, ok := <-a.lines
	if !ok {
		return nil, a.end
	}
	return l.line, l.err
}

// readAhead reads the lines for ReadFrame, one ahead; each line is a new
// slice, so a line being handled is never overwritten.
func (a *lineAgent) readAhead() {
	for {
		line, err := a.lr.next()
		if errors.Is(err, errTooLong) {
			err = &FrameTooLargeError{Max: a.lr.max}
		} else if err != nil {
			close(a.closed)
		}
		var tooLarge *FrameTooLargeError
		select {
		case a.lines <- lineRead{line, err}:
			if err == nil || errors.As(err, &tooLarge) {
				continue
			}
		case <-a.stopped:
			err = io.EOF
		}
		a.end = err
		close(a.lines)
		return
	}
}

// stop ends readAhead once its read returns: from then on ReadFrame
// returns io.EOF.
func (a *lineAgent) stop() { close(a.stopped) }

func (a *lineAgent) InputClosed() <-chan struct{} { return a.closed }

// WriteFrame writes msg on one line (OneLine): the stdio transport forbids
// newlines in a message.
func (a *lineAgent) WriteFrame(msg []byte) error {
	_, err := a.out.Write(append(OneLine(msg), '\n'))
	return err
}

// OneLine returns a copy of msg, a message the relay writes, with each raw
// CR and LF written as a space. What the relay writes is strict JSON,
// whose strings escape CR and LF, so a raw one can only be whitespace
// between tokens (a server over HTTP may send such JSON), and a space is
// read no differently. Left as it is, it would end a line of a line-based
// transport (stdio, an event stream), and a value on a line of its own
// would be read as a message of its own.
func OneLine(msg []byte) []byte {
	line := make([]byte, 0, len(msg)+1)
	for _, c := range msg {
		if c == '\n' || c == '\r' {
			c = ' '
		}
		line = append(line, c)
	}
	return line
}
