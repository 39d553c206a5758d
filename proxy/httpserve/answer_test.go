package httpserve

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// progressSteps is how many progress notifications the report tool sends.
const progressSteps = 3

// newProgressBank is an MCP server with two tools: report, which sends
// progressSteps progress notifications with the call's progressToken
// before its result, and transfer.
func newProgressBank() *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "bank", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "report", Description: "A slow read."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ map[string]any) (*mcp.CallToolResult, any, error) {
			for i := range progressSteps {
				err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
					ProgressToken: req.Params.GetProgressToken(), Progress: float64(i + 1), Total: progressSteps})
				if err != nil {
					return nil, nil, err
				}
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "transfer", Description: "Moves money."},
		func(context.Context, *mcp.CallToolRequest, map[string]any) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "moved"}}}, nil, nil
		})
	return srv
}

const reportPolicy = "version: 1\nid: answer-test\ndefault: deny\nservers:\n  bank:\n    tools:\n      report:\n        args: {}\n"

// events returns the data of each event of a text/event-stream body.
func events(body string) []string {
	var out []string
	for ev := range strings.SplitSeq(body, "\n\n") {
		var data []string
		for l := range strings.SplitSeq(ev, "\n") {
			if d, ok := strings.CutPrefix(l, "data: "); ok {
				data = append(data, d)
			}
		}
		if data != nil {
			out = append(out, strings.Join(data, "\n"))
		}
	}
	return out
}

// message is what the tests read of a JSON-RPC message.
type message struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		ProgressToken json.RawMessage `json:"progressToken"`
		Progress      float64         `json:"progress"`
	} `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Data struct{ Rule string }
	} `json:"error"`
}

// describe is one line per message: "progress TOKEN N", "result ID" or
// "error ID RULE".
func describe(t *testing.T, msgs []string) []string {
	t.Helper()
	var out []string
	for _, raw := range msgs {
		var m message
		if err := json.Unmarshal([]byte(raw), &m); err != nil {
			t.Fatalf("%q: %v", raw, err)
		}
		switch {
		case m.Method == "notifications/progress":
			out = append(out, fmt.Sprintf("progress %s %g", m.Params.ProgressToken, m.Params.Progress))
		case m.Method != "":
			out = append(out, m.Method)
		case m.Error != nil:
			out = append(out, fmt.Sprintf("error %s %s", m.ID, m.Error.Data.Rule))
		default:
			out = append(out, fmt.Sprintf("result %s", m.ID))
		}
	}
	return out
}

func callReport(id, token string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"report","arguments":{},"_meta":{"progressToken":` + token + `}}}`
}

// TestRelatedOnPOSTStream: a request whose server sends progress before
// its result is answered as text/event-stream: the progress notifications
// in order, then the result, then the end of the stream; the GET stream
// gets none of them. A denied call, and a call without related messages,
// are answered application/json as before. A POST that does not accept
// text/event-stream gets its result as application/json, and its
// progress goes to the GET stream as before, in order ahead of later
// messages.
//
// If related messages still went to the GET stream, the first POST would
// be answered application/json with no progress event, and the GET
// stream's first events would carry token "a" instead of "c".
func TestRelatedOnPOSTStream(t *testing.T) {
	ts := newPolicyServer(t, newProgressBank(), reportPolicy, &memRecorder{}, 0)
	resp, body := do(t, ts, req{method: "POST", token: tokenA, ctype: "application/json",
		body: `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`})
	sid := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != 200 || sid == "" {
		t.Fatalf("initialize: %s %q", resp.Status, body)
	}
	stream, _ := do(t, ts, req{method: "GET", token: tokenA, session: sid, accept: "text/event-stream"})
	defer stream.Body.Close()
	post := func(accept, body string) (string, []string) {
		resp, got := do(t, ts, req{method: "POST", token: tokenA, session: sid, ctype: "application/json", accept: accept, body: body})
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %s %q", body, resp.Status, got)
		}
		ct := resp.Header.Get("Content-Type")
		if ct == "text/event-stream" {
			return ct, describe(t, events(got))
		}
		return ct, describe(t, []string{got})
	}
	both := "application/json, text/event-stream"

	for i := range 5 {
		id := fmt.Sprint(10 + i)
		ct, got := post(both, callReport(id, `"a"`))
		want := []string{`progress "a" 1`, `progress "a" 2`, `progress "a" 3`, "result " + id}
		if ct != "text/event-stream" || fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("report, run %d: %s %q; want text/event-stream %q", i, ct, got, want)
		}
	}
	ct, got := post(both, `{"jsonrpc":"2.0","id":"b","method":"tools/call","params":{"name":"transfer","arguments":{}}}`)
	if ct != "application/json" || fmt.Sprint(got) != `[error "b" name.write_word]` {
		t.Errorf("denied transfer: %s %q; want application/json and the gate's error", ct, got)
	}
	if ct, got := post(both, `{"jsonrpc":"2.0","id":"l","method":"tools/list"}`); ct != "application/json" || fmt.Sprint(got) != `[result "l"]` {
		t.Errorf("tools/list: %s %q; want application/json and its result", ct, got)
	}
	ct, got = post("application/json", callReport("20", "7"))
	if ct != "application/json" || fmt.Sprint(got) != "[result 20]" {
		t.Errorf("report accepting JSON only: %s %q; want application/json and the result", ct, got)
	}

	sc := bufio.NewScanner(stream.Body)
	var onGET []string
	for range progressSteps {
		var ev strings.Builder
		for sc.Scan() && sc.Text() != "" {
			ev.WriteString(sc.Text() + "\n")
		}
		onGET = append(onGET, describe(t, events(ev.String()))...)
	}
	if want := []string{"progress 7 1", "progress 7 2", "progress 7 3"}; fmt.Sprint(onGET) != fmt.Sprint(want) {
		t.Errorf("the GET stream's first events: %q; want %q (the JSON-only call's progress, nothing of the streamed calls)", onGET, want)
	}
	if err := sc.Err(); err != nil && err != io.EOF {
		t.Fatal(err)
	}
}

// TestSessionRouting: what the relay writes goes, in order, to the POST
// of its request (related messages only to a POST that accepts
// text/event-stream), else to the GET stream; an answer whose POST has
// returned is dropped, never put on the GET stream.
func TestSessionRouting(t *testing.T) {
	s := newSession("s", "alice", time.Now())
	events, _ := s.await("1", true)
	jsonOnly, _ := s.await(`"j"`, false)
	gone, _ := s.await("2", true)
	s.forget("2", gone)

	progress := func(n int) []byte {
		return []byte(fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":%d}}`, n))
	}
	s.WriteRelated(progress(1), jsontext.Value("1"))
	s.WriteRelated(progress(2), jsontext.Value(`"j"`))
	s.WriteRelated(progress(3), jsontext.Value("2"))
	s.WriteRelated(progress(4), jsontext.Value("1"))
	s.WriteFrame([]byte(`{"jsonrpc":"2.0","id":2,"result":{}}`))
	s.WriteFrame([]byte(`{"jsonrpc":"2.0","id":1,"result":{}}`))
	s.WriteFrame([]byte(`{"jsonrpc":"2.0","id":"j","result":{}}`))
	s.WriteFrame([]byte(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`))

	drain := func(c chan postMsg) []string {
		var out []string
		for len(c) > 0 {
			m := <-c
			out = append(out, fmt.Sprintf("%v %s", m.answer, m.msg))
		}
		return out
	}
	want := []string{"false " + string(progress(1)), "false " + string(progress(4)), `true {"jsonrpc":"2.0","id":1,"result":{}}`}
	if got := drain(events.msgs); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("the POST accepting events got %q, want %q", got, want)
	}
	if got := drain(jsonOnly.msgs); fmt.Sprint(got) != fmt.Sprint([]string{`true {"jsonrpc":"2.0","id":"j","result":{}}`}) {
		t.Errorf("the POST accepting JSON only got %q, want its answer alone", got)
	}
	var stream []string
	for len(s.stream) > 0 {
		stream = append(stream, string(<-s.stream))
	}
	want = []string{string(progress(2)), string(progress(3)), `{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`}
	if fmt.Sprint(stream) != fmt.Sprint(want) {
		t.Errorf("the GET stream got %q, want %q (no answer)", stream, want)
	}
}

// TestEventRawLineEnds: a relayed message may hold raw CR or LF between
// its tokens. A WHATWG event-stream client ends a line at CR, LF or CRLF,
// so the data it reads must be the message, not a part of it.
func TestEventRawLineEnds(t *testing.T) {
	msg := "{\"jsonrpc\":\"2.0\",\"id\":1,\r\"result\":{\"content\":[],\r\n\"isError\":true}\n}"
	w := httptest.NewRecorder()
	writeEvent(w, []byte(msg))
	var data []string
	for _, line := range strings.FieldsFunc(w.Body.String(), func(r rune) bool { return r == '\r' || r == '\n' }) {
		if v, ok := strings.CutPrefix(line, "data:"); ok {
			data = append(data, strings.TrimPrefix(v, " "))
		}
	}
	got := strings.Join(data, "\n")
	if want := `{"jsonrpc":"2.0","id":1, "result":{"content":[],  "isError":true} }`; got != want {
		t.Fatalf("a WHATWG client reads data %q, want %q", got, want)
	}
}
