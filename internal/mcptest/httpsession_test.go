package mcptest

import "testing"

// TestFirstAnswer: the answer in a text/event-stream body is the data of
// the first event that is an answer, its data lines joined, whatever the
// line endings; server requests and notifications before it are skipped.
func TestFirstAnswer(t *testing.T) {
	for _, tt := range []struct{ body, want string }{
		{"event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n", `{"jsonrpc":"2.0","id":1,"result":{}}`},
		{"data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\n\n" +
			"data: {\"jsonrpc\":\"2.0\",\"id\":\"s1\",\"method\":\"roots/list\"}\n\n" +
			"id: 7\r\ndata: {\"jsonrpc\":\"2.0\",\r\ndata: \"id\":null,\"error\":{\"code\":-32700}}\r\n\r\n",
			"{\"jsonrpc\":\"2.0\",\n\"id\":null,\"error\":{\"code\":-32700}}"},
		{"data: {\"jsonrpc\":\"2.0\",\"method\":\"ping\"}\n\n", ""},
		{"data: not json\n\n", ""},
		{"", ""},
	} {
		if got := string(firstAnswer([]byte(tt.body))); got != tt.want {
			t.Errorf("firstAnswer(%q) = %q, want %q", tt.body, got, tt.want)
		}
	}
}
