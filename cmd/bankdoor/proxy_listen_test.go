package main_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bankdoor/bankdoor/internal/mcptest"
	"github.com/bankdoor/bankdoor/proxy"
)

var listeningLine = regexp.MustCompile(`^bankdoor proxy: serving agents at (http://\S+)$`)

// listeningProxy is bankdoor proxy --listen, one stdio fixture per session.
type listeningProxy struct {
	url    string
	cmd    *exec.Cmd
	done   chan struct{}
	mu     sync.Mutex
	stderr strings.Builder
}

func (p *listeningProxy) log() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stderr.String()
}

func startListening(t *testing.T, w *world, state, tokens string) *listeningProxy {
	t.Helper()
	cmd := exec.Command(built.bankdoor, "proxy", "--policy", w.policy, "--server", "bank", "--receipts", w.receipts,
		"--listen", "127.0.0.1:0", "--agent-tokens", tokens, "--", built.bankServer)
	cmd.Env = mcptest.Env("BANKDOOR_HOME="+w.home, "BANK_FIXTURE_STATE="+state)
	pipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &listeningProxy{cmd: cmd, done: make(chan struct{})}
	ready := make(chan string, 1)
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			p.mu.Lock()
			p.stderr.WriteString(sc.Text() + "\n")
			p.mu.Unlock()
			if m := listeningLine.FindStringSubmatch(sc.Text()); m != nil {
				ready <- m[1]
			}
		}
	}()
	t.Cleanup(func() { cmd.Process.Kill(); <-p.done; cmd.Wait() })
	select {
	case p.url = <-ready:
	case <-p.done:
		t.Fatalf("bankdoor proxy --listen exited:\n%s", p.log())
	case <-time.After(30 * time.Second):
		t.Fatalf("bankdoor proxy --listen printed no URL:\n%s", p.log())
	}
	return p
}

// stop sends SIGTERM and checks that the proxy exits 0.
func (p *listeningProxy) stop(t *testing.T) {
	t.Helper()
	p.cmd.Process.Signal(syscall.SIGTERM)
	<-p.done
	if err := p.cmd.Wait(); err != nil {
		t.Errorf("bankdoor proxy --listen after SIGTERM: %v\n%s", err, p.log())
	}
}

// connectAgent opens an MCP session to the proxy with token.
func connectAgent(t *testing.T, ctx context.Context, url, token string) *mcp.ClientSession {
	t.Helper()
	hs := &proxy.HTTPServer{URL: url, Header: http.Header{"Authorization": {"Bearer " + token}}}
	c := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hs.Client()}, nil)
	if err != nil {
		t.Fatalf("connecting to %s: %v", url, err)
	}
	return cs
}

// TestE2EListenTwoAgents: two agents at once through one listening proxy,
// each with its own bank session; reads pass, writes are denied, and each
// agent's receipts form their own chain under their own key.
func TestE2EListenTwoAgents(t *testing.T) {
	w := newWorld(t)
	ctx := testContext(t, time.Minute)
	state := filepath.Join(t.TempDir(), "state.json")
	tokens := filepath.Join(t.TempDir(), "tokens")
	toks := map[string]string{"alice": strings.Repeat("a1", 20), "bob": strings.Repeat("b2", 20)}
	if err := os.WriteFile(tokens, []byte(fmt.Sprintf("alice %s\nbob %s\n", toks["alice"], toks["bob"])), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startListening(t, w, state, tokens)

	if resp, err := http.Post(p.url, "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize"}`)); err != nil || resp.StatusCode != 401 {
		t.Errorf("initialize without a token: %v %v, want 401", resp, err)
	}
	var wg sync.WaitGroup
	for agent, tok := range toks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cs := connectAgent(t, ctx, p.url, tok)
			defer cs.Close()
			if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "list_accounts"}); err != nil || res.IsError {
				t.Errorf("%s: list_accounts: %v %v", agent, res, err)
			}
			for _, tool := range []string{"transfer", "pay_bill"} {
				_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"amount_cents": 1}})
				var we *jsonrpc.Error
				if !errors.As(err, &we) || !strings.Contains(we.Message, "name.write_word") {
					t.Errorf("%s: %s: %v, want denied with name.write_word", agent, tool, err)
				}
			}
		}()
	}
	wg.Wait()
	p.stop(t)

	st, err := mcptest.ReadState(state)
	if err != nil {
		t.Fatal(err)
	}
	if got := logLines(st); len(got) != 2 || !strings.Contains(got[0], "list_accounts") || !strings.Contains(got[1], "list_accounts") {
		t.Errorf("the bank's log: %q, want the two list_accounts only", got)
	}
	for agent := range toks {
		dir := filepath.Join(w.receipts, agent)
		names, err := mcptest.Receipts(dir)
		if err != nil || len(names) != 2 {
			t.Errorf("%s: receipts %q (%v), want 2", agent, names, err)
		}
		pub := filepath.Join(w.home, "agents", agent, "bankdoor.pub.pem")
		if code, out := runBankdoor(t, w.home, "verify", dir, "--pub", pub, "--policy", w.policy); code != 0 {
			t.Errorf("verify %s's receipts with %s's key: exit %d\n%s", agent, agent, code, out)
		}
	}
	alicePub := filepath.Join(w.home, "agents", "alice", "bankdoor.pub.pem")
	if code, _ := runBankdoor(t, w.home, "verify", filepath.Join(w.receipts, "bob"), "--pub", alicePub); code == 0 {
		t.Errorf("bob's receipts verify under alice's key; want separate keys")
	}
}
