package mcptest

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"
)

// TestMain runs the test binary as a child program when asked to (see
// inOrderServer), and the tests otherwise.
func TestMain(m *testing.M) {
	if os.Getenv("MCPTEST_CHILD") == "inorder" {
		os.Exit(inOrderServer())
	}
	os.Exit(m.Run())
}

// inOrderServer is a minimal MCP stdio server that handles its input one
// line at a time, as bankdoor proxy does. It answers initialize and ping,
// and answers the notification notifications/answer-me (which JSON-RPC
// forbids) with an id-null error, slowly, so that the answer comes well
// after the notification was written.
func inOrderServer() int {
	in := bufio.NewScanner(os.Stdin)
	out := bufio.NewWriter(os.Stdout)
	for in.Scan() {
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if err := json.Unmarshal(in.Bytes(), &msg); err != nil {
			return 1
		}
		switch {
		case msg.Method == "initialize":
			fmt.Fprintf(out, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":%q,"capabilities":{},"serverInfo":{"name":"inorder","version":"1"}}}`+"\n", msg.ID, ProtocolVersion)
		case msg.Method == "notifications/answer-me":
			time.Sleep(100 * time.Millisecond) // a slow handler, not a test's wait
			fmt.Fprintln(out, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"answered a notification"}}`)
		case msg.Method == "ping" && msg.ID != nil:
			fmt.Fprintf(out, `{"jsonrpc":"2.0","id":%s,"result":{}}`+"\n", msg.ID)
		}
		if out.Flush() != nil {
			return 1
		}
	}
	return 0
}

// TestUnsolicitedWaitsForThePing: an answer to a notification that a
// program writes late is still returned, because Unsolicited waits for
// the answer to a ping sent after the notification; a second call finds
// nothing more.
func TestUnsolicitedWaitsForThePing(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "MCPTEST_CHILD=inorder")
	s, err := Start(ctx, cmd, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.RawNoReply([]byte(`{"jsonrpc":"2.0","method":"notifications/answer-me"}`)); err != nil {
		t.Fatal(err)
	}
	got, err := s.Unsolicited(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || !json.Valid(got[0]) || !isRaw(got[0]) {
		t.Fatalf("Unsolicited = %q; want the one id-null answer", got)
	}
	if got, err := s.Unsolicited(ctx); err != nil || len(got) != 0 {
		t.Errorf("second Unsolicited = %q, %v; want nothing", got, err)
	}
}
