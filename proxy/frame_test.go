package proxy

import (
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
)

func TestParseFrame(t *testing.T) {
	tests := []struct {
		name, in string
		rule     string // "" for success
		code     int
		method   string
		id       string
	}{
		{name: "request", in: `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`, method: "tools/list", id: "1"},
		{name: "request-string-id", in: ` {"method":"ping","id":"a-1","jsonrpc":"2.0"} `, method: "ping", id: `"a-1"`},
		{name: "notification", in: `{"jsonrpc":"2.0","method":"notifications/initialized"}`, method: "notifications/initialized"},
		{name: "response", in: `{"jsonrpc":"2.0","id":"bankdoor-3","result":{}}`, id: `"bankdoor-3"`},
		{name: "error-response", in: `{"jsonrpc":"2.0","id":7,"error":{"code":1,"message":"x"}}`, id: "7"},
		{name: "batch", in: `[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, rule: "frame.invalid", code: codeInvalidRequest},
		{name: "jsonrpc-1.0", in: `{"jsonrpc":"1.0"}`, rule: "frame.invalid", code: codeInvalidRequest},
		{name: "jsonrpc-missing", in: `{"id":1,"method":"ping"}`, rule: "frame.invalid", code: codeInvalidRequest},
		{name: "jsonrpc-number", in: `{"jsonrpc":2.0,"id":1,"method":"ping"}`, rule: "frame.invalid", code: codeInvalidRequest},
		{name: "unknown-member", in: `{"jsonrpc":"2.0","id":1,"method":"ping","extra":1}`, rule: "frame.invalid", code: codeInvalidRequest},
		{name: "duplicate-member", in: `{"jsonrpc":"2.0","id":1,"method":"ping","method":"tools/call"}`, rule: "frame.invalid", code: codeInvalidRequest},
		{name: "duplicate-id", in: `{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}`, rule: "frame.invalid", code: codeInvalidRequest},
		{name: "id-null", in: `{"jsonrpc":"2.0","id":null,"method":"ping"}`, rule: "frame.invalid", code: codeInvalidRequest},
		{name: "id-float", in: `{"jsonrpc":"2.0","id":1.5,"method":"ping"}`, rule: "frame.invalid", code: codeInvalidRequest},
		{name: "id-object", in: `{"jsonrpc":"2.0","id":{},"method":"ping"}`, rule: "frame.invalid", code: codeInvalidRequest},
		{name: "id-bool", in: `{"jsonrpc":"2.0","id":true,"method":"ping"}`, rule: "frame.invalid", code: codeInvalidRequest},
		{name: "method-empty", in: `{"jsonrpc":"2.0","id":1,"method":""}`, rule: "frame.invalid", code: codeInvalidRequest},
		{name: "method-number", in: `{"jsonrpc":"2.0","id":1,"method":3}`, rule: "frame.invalid", code: codeInvalidRequest},
		{name: "request-with-result", in: `{"jsonrpc":"2.0","id":1,"method":"ping","result":{}}`, rule: "frame.invalid", code: codeInvalidRequest},
		{name: "params-array", in: `{"jsonrpc":"2.0","id":1,"method":"ping","params":[]}`, rule: "frame.invalid", code: codeInvalidParams},
		{name: "response-no-id", in: `{"jsonrpc":"2.0","result":{}}`, rule: "frame.invalid", code: codeInvalidRequest},
		{name: "response-both", in: `{"jsonrpc":"2.0","id":1,"result":{},"error":{}}`, rule: "frame.invalid", code: codeInvalidRequest},
		{name: "response-neither", in: `{"jsonrpc":"2.0","id":1}`, rule: "frame.invalid", code: codeInvalidRequest},
		{name: "not-object", in: `"hello"`, rule: "frame.invalid", code: codeInvalidRequest},
		{name: "not-json", in: `hello`, rule: "frame.parse", code: codeParseError},
		{name: "truncated", in: `{"jsonrpc":"2.0","id":1,`, rule: "frame.parse", code: codeParseError},
		{name: "trailing", in: `{"jsonrpc":"2.0","id":1,"method":"ping"} {}`, rule: "frame.parse", code: codeParseError},
		{name: "json-space", in: " \t\r{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\t \r", method: "ping", id: "1"},
		{name: "nbsp-before", in: "\u00a0" + `{"jsonrpc":"2.0","id":1,"method":"ping"}`, rule: "frame.parse", code: codeParseError},
		{name: "line-separator-after", in: `{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\u2028", rule: "frame.parse", code: codeParseError},
		{name: "ideographic-space", in: "\u3000" + `{"jsonrpc":"2.0","id":1,"method":"ping"}`, rule: "frame.parse", code: codeParseError},
		{name: "byte-order-mark", in: "\ufeff" + `{"jsonrpc":"2.0","id":1,"method":"ping"}`, rule: "frame.parse", code: codeParseError},
		{name: "next-line", in: `{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\u0085", rule: "frame.parse", code: codeParseError},
		{name: "vertical-tab", in: "\v" + `{"jsonrpc":"2.0","id":1,"method":"ping"}`, rule: "frame.parse", code: codeParseError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, dn := parseFrame([]byte(tt.in))
			if tt.rule != "" {
				if dn == nil {
					t.Fatalf("parseFrame(%s) accepted, want %s", tt.in, tt.rule)
				}
				if dn.rule != tt.rule || dn.code != tt.code {
					t.Errorf("parseFrame(%s) = %s %d (%s), want %s %d", tt.in, dn.rule, dn.code, dn.reason, tt.rule, tt.code)
				}
				return
			}
			if dn != nil {
				t.Fatalf("parseFrame(%s) = %s: %s, want success", tt.in, dn.rule, dn.reason)
			}
			if f.method != tt.method || string(f.id) != tt.id {
				t.Errorf("parseFrame(%s) = method %q id %q, want %q %q", tt.in, f.method, f.id, tt.method, tt.id)
			}
		})
	}
}

func TestParseFrameLenientParams(t *testing.T) {
	in := "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"x\",\"arguments\":{\"a\":\"\xff\"}}}"
	f, dn := parseFrame([]byte(in))
	if dn != nil {
		t.Fatalf("parseFrame with invalid UTF-8 in params = %s: %s, want it let through", dn.rule, dn.reason)
	}
	if f.method != "tools/call" || f.params == nil {
		t.Fatalf("parseFrame = %+v", f)
	}
	if jsontext.Value(f.raw).IsValid() {
		t.Error("raw frame with invalid UTF-8 reports IsValid() = true")
	}
}

func TestLineReader(t *testing.T) {
	long := strings.Repeat("x", 40)
	in := "a\r\n\nb\n" + long + "\n" + "c\n" + long + long + "\r\n\r\nlast"
	lr := newLineReader(strings.NewReader(in), 16)
	want := []struct {
		line string
		err  error
	}{
		{"a", nil}, {"", nil}, {"b", nil}, {"", errTooLong}, {"c", nil}, {"", errTooLong}, {"", nil}, {"last", nil}, {"", io.EOF},
	}
	for i, w := range want {
		got, err := lr.next()
		if !errors.Is(err, w.err) || (w.err == nil && string(got) != w.line) {
			t.Fatalf("line %d: next() = %q, %v; want %q, %v", i, got, err, w.line, w.err)
		}
	}
}

func TestLineReaderLongerThanBuffer(t *testing.T) {
	big := strings.Repeat("y", 200<<10) // over bufio's 64 KiB buffer
	in := big + "\n" + big + "zzz\nok\n"
	lr := newLineReader(strings.NewReader(in), len(big))
	if got, err := lr.next(); err != nil || string(got) != big {
		t.Fatalf("line of exactly max bytes: len %d, %v", len(got), err)
	}
	if _, err := lr.next(); !errors.Is(err, errTooLong) {
		t.Fatalf("line of max+3 bytes: err = %v, want errTooLong", err)
	}
	if got, err := lr.next(); err != nil || string(got) != "ok" {
		t.Fatalf("line after a long one = %q, %v; want ok", got, err)
	}
	if _, err := lr.next(); !errors.Is(err, io.EOF) {
		t.Fatalf("at end: err = %v, want EOF", err)
	}
}

// TestLineReaderMaxPlusOne: a line of max+1 bytes ending in "\n" must be
// too long. frame.go's check (len(buf)+len(chunk) > l.max+2) allows two
// bytes for "\r\n" whatever the ending, so max+1 bytes + "\n" is accepted.
func TestLineReaderMaxPlusOne(t *testing.T) {
	lr := newLineReader(strings.NewReader("12345\n"), 4)
	if got, err := lr.next(); !errors.Is(err, errTooLong) {
		t.Errorf("5-byte line with max 4 = %q, %v; want errTooLong", got, err)
	}
}

func FuzzParseFrame(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_balances","arguments":{}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":"x","result":{}}`,
		`[{"jsonrpc":"2.0"}]`, `{"jsonrpc":"1.0"}`, `{"id":1,"id":1}`, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"a\",\"params\":{\"\xff\":1}}",
		`{"jsonrpc":"2.0","id":1e400,"method":"a"}`, `{"jsonrpc":"2.0","id":"\ud800","method":"a"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		fr, dn := parseFrame(line)
		if dn == nil {
			if fr == nil {
				t.Fatal("parseFrame returned neither a frame nor a denial")
			}
			if fr.id != nil && !validID(fr.id) {
				t.Fatalf("accepted frame with invalid id %q", fr.id)
			}
			if fr.method == "" && fr.id == nil {
				t.Fatalf("accepted a response with no id: %q", line)
			}
		} else if dn.rule == "" || dn.code == 0 {
			t.Fatalf("denial without rule or code: %+v", dn)
		}
	})
}

// TestFrameParseReasonHoldsNoValue: a frame.parse reason gives a byte
// offset, never jsontext's text with its JSON pointer, which would carry
// a nested member name (an argument's value) into the receipt.
func TestFrameParseReasonHoldsNoValue(t *testing.T) {
	for _, in := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_balances","arguments":{"a":{"SECRET-4111":}}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_balances","arguments":{"SECRET-4111":1 "x":2}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{"a":["SECRET-4111" 1]}}}`,
	} {
		_, dn := parseFrame([]byte(in))
		if dn == nil || dn.rule != "frame.parse" || strings.Contains(dn.reason, "SECRET") || strings.Contains(dn.reason, "4111") || !strings.Contains(dn.reason, "byte ") {
			t.Errorf("parseFrame(%s) = %+v; want frame.parse with a byte offset and no member name", in, dn)
		}
	}
}

// TestToolsCallStrictMeta: a tools/call whose _meta is not strict JSON
// below its top level is denied as every other method's frame is
// (frame.parse), and the bank never sees it. Before, _meta was checked
// only at its top level and the call was decided and forwarded.
func TestToolsCallStrictMeta(t *testing.T) {
	for name, meta := range map[string]string{
		"nested-duplicate":    `{"progressToken":"p","x":{"a":1,"a":2}}`,
		"top-duplicate":       `{"progressToken":"p","progressToken":"q"}`,
		"nested-invalid-utf8": "{\"x\":[\"\xff\"]}",
		"lone-surrogate":      `{"x":{"y":"\ud800"}}`,
	} {
		t.Run(name, func(t *testing.T) {
			s := startScript(t, Config{})
			bank := s.serveBank()
			frame := `{"jsonrpc":"2.0","id":"1","method":"tools/call","params":{"name":"get_balances","arguments":{"account":"acc_1"},"_meta":` + meta + `}}`
			if jsontext.Value(frame).IsValid() {
				t.Fatal("frame is strict JSON; the test is wrong")
			}
			s.send(frame)
			got := s.recv()
			if !strings.Contains(got, `"id":"1"`) || !strings.Contains(got, `"rule":"frame.parse"`) || !strings.Contains(got, `"code":-32700`) {
				t.Fatalf("answer to a tools/call with _meta %s: %s, want a frame.parse denial", meta, got)
			}
			if ev, _ := s.rec.(*sliceRecorder).last(); ev.Rule != "frame.parse" || ev.Tool != "get_balances" {
				t.Fatalf("receipt rule %q tool %q, want frame.parse for get_balances", ev.Rule, ev.Tool)
			}
			s.send(callBalances("2"))
			call := bank.expectOther("tools/call")
			if !strings.Contains(string(call.Params), `"acc_1"`) || strings.Contains(string(call.Params), `"_meta"`) {
				t.Fatalf("the bank got %s, want the second call", call.Params)
			}
		})
	}
}
