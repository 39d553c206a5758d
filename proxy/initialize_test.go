package proxy

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestInitializeOneVersionDownstream: whatever version the agent asks for,
// the server is asked for 2025-11-25 and never sees the agent's; the agent
// gets its own version if bankdoor implements it, else 2025-11-25.
func TestInitializeOneVersionDownstream(t *testing.T) {
	for _, c := range []struct{ asked, answered string }{
		{"2024-11-05", "2024-11-05"},
		{"2025-03-26", "2025-03-26"},
		{"2025-06-18", "2025-06-18"},
		{"2025-11-25", "2025-11-25"},
		{"2026-07-28", "2025-11-25"},
		{"9999-12-31", "2025-11-25"},
		{"", "2025-11-25"},
	} {
		t.Run(c.asked, func(t *testing.T) {
			s := startBare(t, Config{})
			params := `{"protocolVersion":"` + c.asked + `","capabilities":{"sampling":{},"roots":{},"experimental":{}},"clientInfo":{"name":"agent","version":"7"},"_meta":{"x":1}}`
			s.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":` + params + `}`)
			req := s.srv.expect("initialize")
			var got struct {
				ProtocolVersion string
				Capabilities    map[string]json.RawMessage
				ClientInfo      struct{ Name, Version string }
			}
			if err := json.Unmarshal(req.Params, &got); err != nil {
				t.Fatal(err)
			}
			if got.ProtocolVersion != "2025-11-25" || len(got.Capabilities) != 0 || got.ClientInfo.Name != "agent" || strings.Contains(string(req.Params), "_meta") {
				t.Errorf("the server was sent initialize %s; want protocolVersion 2025-11-25, no capabilities the policy does not relay, the agent's clientInfo, nothing else", req.Params)
			}
			s.srv.answer(req, `{"protocolVersion":"2025-06-18","capabilities":{"tools":{"listChanged":true},"logging":{}},"serverInfo":{"name":"s","version":"1"}}`)
			if n := s.srv.next(); n.Method != "notifications/initialized" {
				t.Errorf("after initialize the relay sent %s, want its own notifications/initialized", n.Method)
			}
			line := s.recv()
			if !strings.Contains(line, `"protocolVersion":"`+c.answered+`"`) || strings.Contains(line, "logging") {
				t.Errorf("the agent got %s; want protocolVersion %s and no logging capability", line, c.answered)
			}
			// The agent's own notifications/initialized is not forwarded, and a
			// second initialize is refused.
			s.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
			s.send(`{"jsonrpc":"2.0","id":2,"method":"initialize","params":` + params + `}`)
			mustDeny(t, "second initialize", s.recv(), "frame.invalid")
			s.send(`{"jsonrpc":"2.0","id":3,"method":"ping"}`)
			if n := s.srv.next(); n.Method != "ping" {
				t.Errorf("the relay forwarded %s %s, want only the ping", n.Method, n.Params)
			}
		})
	}
}

// TestInitializeServerVersionUnknown: a server that answers with a
// version bankdoor does not implement ends the session.
func TestInitializeServerVersionUnknown(t *testing.T) {
	s := startBare(t, Config{})
	s.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}`)
	s.srv.answer(s.srv.expect("initialize"), `{"protocolVersion":"2026-07-28","capabilities":{}}`)
	if line := s.recv(); !strings.Contains(line, `"error"`) || !strings.Contains(line, "2026-07-28") {
		t.Errorf("the agent got %s, want an error naming the server's version", line)
	}
	select {
	case err := <-s.done:
		if err == nil || !strings.Contains(err.Error(), "does not implement") {
			t.Errorf("Run = %v, want the version error", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return")
	}
}

// TestInitializeUnanswered: a server that never answers initialize gets
// the agent an error once Config.ListTimeout has passed, not silence, and
// the relay returns when the agent closes its input.
func TestInitializeUnanswered(t *testing.T) {
	s := startBare(t, Config{ListTimeout: 100 * time.Millisecond})
	s.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"agent","version":"1"}}}`)
	s.srv.expect("initialize")
	line := s.recv()
	if !strings.Contains(line, `"id":1`) || !strings.Contains(line, `"error"`) || !strings.Contains(line, "did not answer initialize") {
		t.Fatalf("initialize = %s, want an error saying the server did not answer", line)
	}
	if err := s.close(); err != nil {
		t.Fatal(err)
	}
}

// TestInitializeUnansweredInputClosed: when the agent closes its input
// while the server has not answered initialize, the relay does not wait
// for the server (Config.ListTimeout is its default 30 s here): the agent
// gets an error and Run returns.
func TestInitializeUnansweredInputClosed(t *testing.T) {
	s := startBare(t, Config{})
	s.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"agent","version":"1"}}}`)
	s.srv.expect("initialize")
	s.in.Close()
	line := s.recv()
	if !strings.Contains(line, `"id":1`) || !strings.Contains(line, `"error"`) || !strings.Contains(line, "closed its input") {
		t.Errorf("initialize = %s, want an error saying the agent closed its input", line)
	}
	if err := s.close(); err != nil {
		t.Fatal(err)
	}
}
