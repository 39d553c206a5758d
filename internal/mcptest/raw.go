package mcptest

import (
	"context"
	"fmt"
	"strconv"
	"time"
)

// NextID returns a fresh raw id as JSON text, quotes included: "raw-1",
// "raw-2", ...
func (s *Session) NextID() string { return rawID(s.ids.Add(1)) }

// rawID is the n-th raw id as JSON text.
func rawID(n int64) string { return strconv.Quote(rawPrefix + strconv.FormatInt(n, 10)) }

// Raw writes line (one JSON-RPC message, no newline) to the child's stdin
// and returns the next line the child writes to the raw side: the answer
// to a line carrying a raw id, or an answer with id null. Lines that
// reached the raw side earlier without being asked for are set aside
// first (see Unsolicited).
func (s *Session) Raw(ctx context.Context, line []byte) ([]byte, error) {
	s.rawMu.Lock()
	defer s.rawMu.Unlock()
	s.setAside()
	if err := s.stdin.writeLine(line); err != nil {
		return nil, fmt.Errorf("writing a raw frame: %w", err)
	}
	for {
		resp, err := s.raw.take()
		if err != nil {
			return nil, fmt.Errorf("no answer to the raw frame: %w%s", err, s.stderrTail())
		}
		if resp != nil {
			return resp, nil
		}
		select {
		case <-s.raw.ready:
		case <-ctx.Done():
			return nil, fmt.Errorf("no answer to the raw frame: %w", ctx.Err())
		}
	}
}

// RawNoReply writes line, a message that gets no answer (a notification),
// to the child's stdin.
func (s *Session) RawNoReply(line []byte) error {
	s.rawMu.Lock()
	defer s.rawMu.Unlock()
	s.setAside()
	if err := s.stdin.writeLine(line); err != nil {
		return fmt.Errorf("writing a raw frame: %w", err)
	}
	return nil
}

// Unsolicited waits up to d, then returns the lines that reached the raw
// side without a Raw call waiting for them (since the last call), and
// forgets them.
func (s *Session) Unsolicited(d time.Duration) [][]byte {
	if d > 0 {
		time.Sleep(d)
	}
	s.rawMu.Lock()
	defer s.rawMu.Unlock()
	s.setAside()
	lines := s.unsolicited
	s.unsolicited = nil
	return lines
}

// setAside moves queued raw lines to the unsolicited list; rawMu is held.
func (s *Session) setAside() {
	s.unsolicited = append(s.unsolicited, s.raw.drain()...)
}
