package proxy

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/bankdoor/bankdoor/internal/jsonobj"
)

// JSON-RPC error codes the relay answers with.
const (
	codeParseError     = -32700
	codeInvalidRequest = -32600
	codeMethodNotFound = -32601
	codeInvalidParams  = -32602
	codeInternalError  = -32603
	// CodeDenied is the JSON-RPC error code of a call the gate denied.
	CodeDenied = -32001
	// CodeServerGone is the code of a request the bank server can no
	// longer answer because it exited.
	CodeServerGone = -32002
)

// DefaultMaxFrame is the largest line, in bytes, the relay reads from the
// agent. Longer lines are discarded and answered with frame.too_large.
const DefaultMaxFrame = 4 << 20

// frame is one JSON-RPC 2.0 message from the agent, split but not decoded.
type frame struct {
	raw    []byte
	id     jsontext.Value // nil for a notification
	method string         // "" for a response
	params jsontext.Value // nil if absent
	result jsontext.Value
	errVal jsontext.Value
	trace  *reqTrace // its spans, if traced (trace.go)
	read   time.Time // when the relay read it (set by handleFrame)
}

func (f *frame) isResponse() bool { return f.method == "" }

// envelopeMembers are the only members a JSON-RPC 2.0 message may have.
var envelopeMembers = map[string]bool{"jsonrpc": true, "id": true, "method": true, "params": true, "result": true, "error": true}

// parseFrame splits one line into a frame. Invalid UTF-8 is let through
// inside params so that the gate can name it (args.encoding); everything
// the relay forwards without the gate is checked strictly by the caller.
func parseFrame(line []byte) (*frame, *denial) {
	lead := len(line) - len(bytes.TrimLeft(line, jsonSpace))
	trimmed := bytes.Trim(line, jsonSpace)
	if len(trimmed) > 0 && trimmed[0] == '[' {
		return nil, &denial{code: codeInvalidRequest, rule: "frame.invalid", reason: "JSON-RPC batches are not relayed; send one message per line"}
	}
	obj, err := jsonobj.ParseLenient(trimmed)
	if err != nil {
		var dup *jsonobj.DuplicateError
		var se *jsontext.SyntacticError
		switch {
		case errors.As(err, &dup):
			return nil, &denial{code: codeInvalidRequest, rule: "frame.invalid", reason: fmt.Sprintf("message has member %q twice", truncate(dup.Name, 64))}
		case errors.Is(err, jsonobj.ErrNotObject):
			return nil, &denial{code: codeInvalidRequest, rule: "frame.invalid", reason: "message is not a JSON object"}
		case errors.As(err, &se):
			// The offset, never jsontext's text: its JSON pointer could
			// carry an argument's value into a receipt.
			return nil, &denial{code: codeParseError, rule: "frame.parse", reason: fmt.Sprintf("not valid JSON (syntax error at byte %d); only space, tab, CR and LF may surround a message", int64(lead)+se.ByteOffset)}
		}
		return nil, &denial{code: codeParseError, rule: "frame.parse", reason: "not valid JSON (data after the message); send one message per line"}
	}
	f := &frame{raw: trimmed}
	for _, m := range obj {
		if !envelopeMembers[m.Name] {
			return nil, &denial{code: codeInvalidRequest, rule: "frame.invalid", reason: fmt.Sprintf("unknown member %q in JSON-RPC message", truncate(m.Name, 64))}
		}
	}
	if v, ok := jsonobj.String(obj.Get("jsonrpc")); !ok || v != "2.0" {
		return nil, &denial{code: codeInvalidRequest, rule: "frame.invalid", reason: `member "jsonrpc" must be "2.0"`}
	}
	if id := obj.Get("id"); id != nil {
		if !validID(id) {
			return nil, &denial{code: codeInvalidRequest, rule: "frame.invalid", reason: `member "id" must be a string or an integer`}
		}
		f.id = id
	}
	f.params, f.result, f.errVal = obj.Get("params"), obj.Get("result"), obj.Get("error")
	if raw := obj.Get("method"); raw != nil {
		m, ok := jsonobj.String(raw)
		if !ok || m == "" {
			return f, &denial{code: codeInvalidRequest, rule: "frame.invalid", reason: `member "method" must be a non-empty string`}
		}
		f.method = m
		if f.result != nil || f.errVal != nil {
			return f, &denial{code: codeInvalidRequest, rule: "frame.invalid", reason: `a request has no "result" or "error"`}
		}
		if f.params != nil && f.params.Kind() != '{' {
			return f, &denial{code: codeInvalidParams, rule: "frame.invalid", reason: `member "params" must be an object`}
		}
		return f, nil
	}
	if f.id == nil || (f.result == nil) == (f.errVal == nil) {
		return nil, &denial{code: codeInvalidRequest, rule: "frame.invalid", reason: `a response has an "id" and exactly one of "result" or "error"`}
	}
	return f, nil
}

// jsonSpace is the whitespace of RFC 8259, the only bytes that may
// surround a message: U+00A0, U+2028, U+3000, a byte order mark and the
// other characters Unicode calls spaces make a frame.parse.
const jsonSpace = " \t\r\n"

// isBlank reports whether a frame holds nothing but JSON whitespace
// (space, tab, CR, LF); such a frame is skipped.
func isBlank(b []byte) bool {
	for _, c := range b {
		if c != ' ' && c != '\t' && c != '\r' && c != '\n' {
			return false
		}
	}
	return true
}

// ReadEnvelope reads msg the way the relay does: its id as raw JSON (nil
// for a notification) and its method ("" for a response). It returns an
// error saying why for any message the relay denies on reading it (not
// JSON, not one object, a batch, a duplicate or unknown member, a bad
// "jsonrpc", id, method or params, a request with a result), and then the
// id the relay's answer carries: the message's own where it could be read,
// else nil for id null, the id JSON-RPC 2.0 §5 gives the answer to a
// message whose id could not be read. A server of agents (proxy/httpserve)
// uses it to know which of its requests the relay's answer belongs to.
func ReadEnvelope(msg []byte) (id jsontext.Value, method string, err error) {
	f, dn := parseFrame(msg)
	if dn != nil {
		if f != nil {
			id = f.id
		}
		return id, "", errors.New(dn.reason)
	}
	return f.id, f.method, nil
}

// validID reports whether id is a JSON string of valid UTF-8 or an integer.
func validID(id jsontext.Value) bool {
	switch id.Kind() {
	case '"':
		return id.IsValid()
	case '0':
		tok, err := jsontext.NewDecoder(bytes.NewReader(id)).ReadToken()
		if err != nil {
			return false
		}
		_, err = tok.Int()
		return err == nil
	}
	return false
}

// lineReader reads newline-delimited frames of at most max bytes.
type lineReader struct {
	r   *bufio.Reader
	max int
}

func newLineReader(r io.Reader, max int) *lineReader {
	if max <= 0 {
		max = DefaultMaxFrame
	}
	return &lineReader{r: bufio.NewReaderSize(r, 64<<10), max: max}
}

// errTooLong is returned for a line longer than the limit; the line has
// been consumed and reading may go on.
var errTooLong = errors.New("line too long")

// next returns the next line without its line ending.
func (l *lineReader) next() ([]byte, error) {
	var buf []byte
	for {
		chunk, err := l.r.ReadSlice('\n')
		if len(buf)+len(bytes.TrimRight(chunk, "\r\n")) > l.max {
			buf = nil
			if err := l.discard(err); err != nil {
				return nil, err
			}
			return nil, errTooLong
		}
		buf = append(buf, chunk...)
		switch {
		case err == nil:
			return bytes.TrimRight(buf, "\r\n"), nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && len(buf) > 0:
			return bytes.TrimRight(buf, "\r"), nil
		default:
			return nil, err
		}
	}
}

// discard consumes input up to and including the next newline.
func (l *lineReader) discard(err error) error {
	for errors.Is(err, bufio.ErrBufferFull) {
		_, err = l.r.ReadSlice('\n')
	}
	if errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && (s[n]&0xC0) == 0x80 {
		n--
	}
	return s[:n] + "…"
}
