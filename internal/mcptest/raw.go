package mcptest

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
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
	resp, err := s.nextRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("no answer to the raw frame: %w", err)
	}
	return resp, nil
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

// Unsolicited returns the lines that reached the raw side without a Raw
// call waiting for them (since the last call), and forgets them. It first
// sends a ping with a raw id and waits for its answer: a program that
// handles its input in order, as bankdoor proxy does, has written every
// answer to the lines before the ping by then.
func (s *Session) Unsolicited(ctx context.Context) ([][]byte, error) {
	s.rawMu.Lock()
	defer s.rawMu.Unlock()
	s.setAside()
	id := s.NextID()
	if err := s.stdin.writeLine([]byte(`{"jsonrpc":"2.0","id":` + id + `,"method":"ping"}`)); err != nil {
		return nil, fmt.Errorf("writing a ping: %w", err)
	}
	for {
		line, err := s.nextRaw(ctx)
		if err != nil {
			return nil, fmt.Errorf("no answer to the ping: %w", err)
		}
		var msg struct{ ID json.RawMessage }
		if json.Unmarshal(line, &msg) == nil && string(msg.ID) == id {
			break
		}
		s.unsolicited = append(s.unsolicited, line)
	}
	lines := s.unsolicited
	s.unsolicited = nil
	return lines, nil
}

// nextRaw waits for the next line routed to the raw side; rawMu is held.
func (s *Session) nextRaw(ctx context.Context) ([]byte, error) {
	for {
		line, err := s.raw.take()
		if err != nil {
			return nil, fmt.Errorf("%w%s", err, s.stderrTail())
		}
		if line != nil {
			return line, nil
		}
		select {
		case <-s.raw.ready:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// setAside moves queued raw lines to the unsolicited list; rawMu is held.
func (s *Session) setAside() {
	s.unsolicited = append(s.unsolicited, s.raw.drain()...)
}
