package mcptest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"sync"
)

// rawPrefix starts every raw id.
const rawPrefix = "raw-"

// demux reads the child's stdout line by line and routes each line to the
// raw side or to the SDK client (see the package doc). At end of output it
// closes both sides and reaps the child.
func (s *Session) demux(stdout io.Reader, toClient *io.PipeWriter) {
	r := bufio.NewReaderSize(stdout, 64<<10)
	clientOK := true
	for {
		line, err := r.ReadBytes('\n')
		if trimmed := bytes.TrimRight(line, "\r\n"); len(bytes.TrimSpace(trimmed)) > 0 {
			if isRaw(trimmed) {
				s.raw.put(bytes.Clone(trimmed))
			} else if clientOK {
				// After the client has closed its end, its lines are dropped.
				_, werr := toClient.Write(append(bytes.Clone(trimmed), '\n'))
				clientOK = werr == nil
			}
		}
		if err != nil {
			break
		}
	}
	toClient.CloseWithError(io.EOF)
	s.raw.close()
	s.waitErr = s.cmd.Wait()
	close(s.exited)
}

// isRaw reports whether a line goes to the raw side: its id is a raw id or
// null, or it is not a JSON object at all.
func isRaw(line []byte) bool {
	var msg map[string]json.RawMessage
	if err := json.Unmarshal(line, &msg); err != nil {
		return true
	}
	id, ok := msg["id"]
	if !ok {
		return false // a notification
	}
	if string(id) == "null" {
		return true
	}
	var sid string
	return json.Unmarshal(id, &sid) == nil && strings.HasPrefix(sid, rawPrefix)
}

// rawQueue holds the lines routed to the raw side, oldest first.
type rawQueue struct {
	mu     sync.Mutex
	lines  [][]byte
	ready  chan struct{} // has a token while lines is not empty or closed
	closed bool
}

func newRawQueue() *rawQueue { return &rawQueue{ready: make(chan struct{}, 1)} }

func (q *rawQueue) put(line []byte) {
	q.mu.Lock()
	q.lines = append(q.lines, line)
	q.mu.Unlock()
	q.signal()
}

func (q *rawQueue) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.signal()
}

func (q *rawQueue) signal() {
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

// errOutputClosed is returned when the child closed its stdout.
var errOutputClosed = errors.New("the program closed its output")

// take returns the oldest line, or nil and errOutputClosed if there is none
// and the output has ended, or nil and nil if there is none yet.
func (q *rawQueue) take() ([]byte, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.lines) > 0 {
		line := q.lines[0]
		q.lines = q.lines[1:]
		if len(q.lines) > 0 || q.closed {
			q.signal()
		}
		return line, nil
	}
	if q.closed {
		q.signal()
		return nil, errOutputClosed
	}
	return nil, nil
}

// drain removes and returns every line queued so far.
func (q *rawQueue) drain() [][]byte {
	q.mu.Lock()
	defer q.mu.Unlock()
	lines := q.lines
	q.lines = nil
	return lines
}
