package mcptest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
)

// State is the fixture bank's state file.
type State struct {
	Accounts map[string]int64 `json:"accounts"` // balances in cents
	Log      []LogEntry       `json:"log"`
}

// LogEntry is one message the fixture received: a tools/call (Tool set;
// Arguments as the bank received them, nil if absent) or another method
// (Method set).
type LogEntry struct {
	Tool      *string         `json:"tool,omitempty"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Method    *string         `json:"method,omitempty"`
}

// String returns "tools/call NAME ARGS" or the method, for messages.
func (e LogEntry) String() string {
	if e.Tool == nil {
		if e.Method == nil {
			return "(empty log entry)"
		}
		return strconv.Quote(*e.Method)
	}
	s := "tools/call " + strconv.Quote(*e.Tool)
	if e.Arguments != nil {
		s += " " + strconv.QuoteToASCII(string(e.Arguments))
	}
	return s
}

// ReadState reads a state file. The arguments in its log are the client's
// own bytes, possibly invalid UTF-8, so it is decoded leniently.
func ReadState(path string) (*State, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the fixture state: %w", err)
	}
	var st State
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&st); err != nil {
		return nil, fmt.Errorf("fixture state %s: %w", path, err)
	}
	if st.Accounts == nil {
		return nil, fmt.Errorf("fixture state %s has no accounts", path)
	}
	return &st, nil
}

// Moved returns the sum of the absolute balance changes from before to
// after, over every account in either: 0 exactly when no balance changed.
// A transfer of N cents between two accounts counts 2N.
func Moved(before, after map[string]int64) int64 {
	var sum int64
	for id, b := range before {
		sum += abs(after[id] - b)
	}
	for id, a := range after {
		if _, ok := before[id]; !ok {
			sum += abs(a)
		}
	}
	return sum
}

func abs(n int64) int64 {
	if n < 0 {
		return -n
	}
	return n
}
