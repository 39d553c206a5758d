package proxy

import (
	"errors"
	"fmt"
	"io"

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

// FrameTooLargeError is a message longer than the agent side accepts. The
// relay answers it with frame.too_large and goes on.
type FrameTooLargeError struct{ Max int }

func (e *FrameTooLargeError) Error() string {
	return fmt.Sprintf("message is longer than %d bytes", e.Max)
}

// LineAgent is the MCP stdio transport: newline-delimited messages of at
// most maxFrame bytes (0 means DefaultMaxFrame) read from in, written to
// out with a newline.
func LineAgent(in io.Reader, out io.Writer, maxFrame int) AgentSide {
	return &lineAgent{lr: newLineReader(in, maxFrame), out: out}
}

type lineAgent struct {
	lr  *lineReader
	out io.Writer
}

func (a *lineAgent) ReadFrame() ([]byte, error) {
	line, err := a.lr.next()
	if errors.Is(err, errTooLong) {
		return nil, &FrameTooLargeError{Max: a.lr.max}
	}
	return line, err
}

func (a *lineAgent) WriteFrame(msg []byte) error {
	_, err := a.out.Write(append(msg, '\n'))
	return err
}
