package main_test

// The rug-pull matrix: the fixture bank changes get_balances's definition
// (and starts sweeping money) at a chosen point of a session, and an agent
// speaking raw JSON-RPC calls get_balances through the built proxy. Over
// every transport, for every point, with and without the server
// notifying, sequential and pipelined, whatever protocol version the agent
// asks for: no changed tool is ever called, no money moves, and every
// refusal is pin.mismatch with a receipt that verifies.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bankdoor/bankdoor/internal/agentkey"
	"github.com/bankdoor/bankdoor/internal/mcptest"
	"github.com/bankdoor/bankdoor/proxy/policy"
	"github.com/bankdoor/bankdoor/verifier"
)

// agentVersions are the protocol versions the matrix's agents ask for:
// the ones bankdoor implements, what newer clients send, and a version
// that sorts after every real one.
var agentVersions = []string{"2024-11-05", "2025-06-18", "2025-11-25", "2026-07-28", "9999-12-31"}

// rugCalls is how many times each session calls get_balances.
const rugCalls = 3

// rugPoints are the points of a session at which the fixture rug-pulls
// get_balances: before answering each call that another follows, and
// between pages of the proxy's listings. With BANK_FIXTURE_PAGE_SIZE=2 a
// listing has three pages, get_balances on the first: page:1 and page:2
// fall between the pages of the listing before call 1, page:3 inside the
// listing after it.
var rugPoints = []string{"call:1", "call:2", "page:1", "page:2", "page:3"}

// seedBalances are the fixture's balances in a new state file (see the
// package doc of fixtures/bank-server).
var seedBalances = map[string]int64{"acc_checking": 250000, "acc_savings": 1000000, "acc_business": 4200000, "acc_mallory": 0}

// rugCase is one session of the matrix.
type rugCase struct {
	transport string // stdio, url or listen
	point     string // BANK_FIXTURE_RUGPULL_AT
	notify    bool
	pipelined bool
	version   string
}

func (c rugCase) name() string {
	order := "sequential"
	if c.pipelined {
		order = "pipelined"
	}
	notify := "silent"
	if c.notify {
		notify = "notify"
	}
	return strings.Join([]string{c.transport, strings.ReplaceAll(c.point, ":", ""), notify, order, c.version}, "_")
}

// rugCases is the matrix: every transport, point, notifying or not, and
// order, each with one of the agent versions, so that every transport
// sees every version in both orders.
func rugCases() []rugCase {
	var out []rugCase
	for _, tr := range []string{"stdio", "url", "listen"} {
		i := 0
		for _, point := range rugPoints {
			for _, notify := range []bool{false, true} {
				for _, pipelined := range []bool{false, true} {
					out = append(out, rugCase{tr, point, notify, pipelined, agentVersions[i%len(agentVersions)]})
					i++
				}
			}
		}
	}
	return out
}

// TestRugPullMatrix runs the matrix, several sessions at a time.
func TestRugPullMatrix(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	tokens, toks := agentTokens(t)
	sem := make(chan struct{}, 6) // sessions at once: each is one or two processes, mostly waiting
	var wg sync.WaitGroup
	cases := rugCases()
	// The first --listen session creates the keys the others share (the
	// embedded ledger's log key, alice's signing key): two proxies that
	// both find them missing would race to create them.
	first := slices.IndexFunc(cases, func(c rugCase) bool { return c.transport == "listen" })
	t.Run(cases[first].name(), func(t *testing.T) { runRugCase(t, w, cases[first], tokens, toks["alice"]) })
	for _, c := range slices.Delete(cases, first, first+1) {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			t.Run(c.name(), func(t *testing.T) {
				runRugCase(t, w, c, tokens, toks["alice"])
			})
		})
	}
	wg.Wait()
}

// runRugCase runs one session: initialize with the case's version (a
// pipelined agent never sends notifications/initialized), then rugCalls
// calls of get_balances, and checks what reached the bank.
func runRugCase(t *testing.T, w *world, c rugCase, tokens, token string) {
	ctx := testContext(t, 2*time.Minute)
	notify := "0"
	if c.notify {
		notify = "1"
	}
	f := w.fixture("BANK_FIXTURE_PAGE_SIZE=2", "BANK_FIXTURE_RUGPULL_AT="+c.point, "BANK_FIXTURE_RUGPULL_NOTIFY="+notify)
	receipts := filepath.Join(t.TempDir(), "receipts")
	a, receiptDir, pub := startRawAgent(t, w, c.transport, f, receipts, tokens, token)

	init := fmt.Sprintf(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":%q,"capabilities":{},"clientInfo":{"name":"rug-agent","version":"1"}}}`, c.version)
	ans, err := a.request(ctx, "init", []byte(init))
	if err != nil || !bytes.Contains(ans, []byte(`"result"`)) {
		t.Fatalf("initialize %s: %s %v", c.version, ans, err)
	}
	if want := negotiated(c.version); !bytes.Contains(ans, []byte(`"protocolVersion":"`+want+`"`)) {
		t.Errorf("initialize %s answered %s, want protocolVersion %s", c.version, ans, want)
	}
	if !c.pipelined {
		if err := a.notify([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)); err != nil {
			t.Fatal(err)
		}
	}
	call := func(i int) (string, []byte) {
		id := fmt.Sprintf("call-%d", i)
		return id, []byte(`{"jsonrpc":"2.0","id":"` + id + `","method":"tools/call","params":{"name":"get_balances","arguments":{"account_id":"acc_checking"}}}`)
	}
	answers := make([][]byte, rugCalls)
	if c.pipelined {
		var cw sync.WaitGroup
		for i := range rugCalls {
			id, frame := call(i + 1)
			ch := a.start(ctx, id, frame)
			cw.Go(func() { answers[i] = (<-ch).msg })
		}
		cw.Wait()
	} else {
		for i := range rugCalls {
			id, frame := call(i + 1)
			ans, err := a.request(ctx, id, frame)
			if err != nil {
				t.Fatalf("call %d: %v", i+1, err)
			}
			answers[i] = ans
		}
	}
	stderr := a.close(t)

	st, err := mcptest.ReadState(f.State)
	if err != nil {
		t.Fatal(err)
	}
	if moved := mcptest.Moved(seedBalances, st.Accounts); moved != 0 {
		t.Errorf("money moved: %d cents; balances %v", moved, st.Accounts)
	}
	allowed := 0
	for i, ans := range answers {
		if bytes.Contains(ans, []byte(`"resultType"`)) {
			t.Errorf("call %d answered %s: the server took the agent's version for its own (a multi-round-trip result)", i+1, ans)
		}
		switch rule, receipt := deniedRule(ans); {
		case rule == "" && bytes.Contains(ans, []byte(`"result"`)) && !bytes.Contains(ans, []byte(`"isError":true`)):
			allowed++
		case rule != "pin.mismatch":
			t.Errorf("call %d answered %s; want a result or a pin.mismatch denial", i+1, ans)
		default:
			if rc, err := mcptest.ReadReceipt(receiptDir, receipt); err != nil || rc.Rule != "pin.mismatch" || rc.Tool != "get_balances" {
				t.Errorf("call %d: receipt %q: %+v %v; want one recording pin.mismatch of get_balances", i+1, receipt, rc, err)
			}
		}
	}
	calls := 0
	for _, e := range st.Log {
		if e.Tool != nil {
			calls++
		}
	}
	if calls != allowed {
		t.Errorf("the bank logged %d calls, %d were answered with a result: a denied call reached the bank\nlog: %v", calls, allowed, logLines(st))
	}
	if kind, k, _ := strings.Cut(c.point, ":"); kind == "call" && fmt.Sprint(allowed) != k && allowed != rugCalls {
		// Calls 1..K run before the pull; every later one must be denied.
		t.Errorf("%d calls were let through with the pull before answering call %s; want exactly %s", allowed, k, k)
	}
	if names, _ := mcptest.Receipts(receiptDir); len(names) > 0 {
		verifyReceipts(t, receiptDir, pub, w.policy)
	}
	if t.Failed() {
		t.Logf("answers:\n%s\nstderr:\n%s", bytes.Join(answers, []byte("\n")), stderr)
	}
}

// negotiated is the version bankdoor answers an agent asking for v: v if
// bankdoor implements it, else the newest it does.
func negotiated(v string) string {
	switch v {
	case "2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25":
		return v
	}
	return "2025-11-25"
}

// verifyReceipts verifies a receipts directory as bankdoor verify --pub
// --policy does, in process.
func verifyReceipts(t *testing.T, dir, pubFile, policyFile string) {
	t.Helper()
	pub, err := agentkey.LoadPublic(pubFile)
	if err != nil {
		t.Fatal(err)
	}
	p, err := policy.Load(policyFile)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := verifier.VerifyDir(dir, pub, verifier.Options{PolicySHA256: p.SHA256}); err != nil {
		t.Errorf("verify %s: %v", dir, err)
	}
}

// deniedRule returns the rule and receipt of a bankdoor denial, or "".
func deniedRule(ans []byte) (rule, receipt string) {
	var m struct {
		Error *struct {
			Data struct{ Rule, Receipt string }
		}
	}
	if json.Unmarshal(ans, &m) != nil || m.Error == nil {
		return "", ""
	}
	return m.Error.Data.Rule, m.Error.Data.Receipt
}

// answer is one JSON-RPC answer, or why there is none.
type answer struct {
	msg []byte
	err error
}

// rawAgent is an agent that writes its own JSON-RPC frames, so that it can
// ask for any protocol version, pipeline its calls and leave out
// notifications/initialized.
type rawAgent interface {
	// start sends a request with the given id (a JSON string's content)
	// and returns where its answer will arrive.
	start(ctx context.Context, id string, frame []byte) <-chan answer
	// notify sends a notification.
	notify(frame []byte) error
	// close ends the session and returns the proxy's stderr so far.
	close(t *testing.T) string
	// request is start, then waiting for the answer.
	request(ctx context.Context, id string, frame []byte) ([]byte, error)
}

// startRawAgent starts the proxy for transport with f behind it and returns
// an agent of it, the receipts directory its denials go to and the public
// key they verify with.
func startRawAgent(t *testing.T, w *world, transport string, f mcptest.Fixture, receipts, tokens, token string) (rawAgent, string, string) {
	t.Helper()
	p := mcptest.Proxy{Bin: built.bankdoor, Policy: w.policy, Server: "bank", Receipts: receipts, Home: w.home, Fixture: f}
	switch transport {
	case "url":
		p.URL = startHTTPFixture(t, f).URL
		fallthrough
	case "stdio":
		return startStdioAgent(t, p.Command()), receipts, w.pub
	}
	lw := *w
	lw.receipts = receipts
	srv := startListening(t, &lw, f, "--agent-tokens", tokens)
	return &httpAgent{url: srv.URL, token: token, srv: srv}, filepath.Join(receipts, "alice"), filepath.Join(w.home, "agents", "alice", "bankdoor.pub.pem")
}

// stdioAgent is a raw agent of bankdoor proxy over stdio.
type stdioAgent struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr mcptest.SyncBuffer
	done   chan struct{} // closed when stdout is at its end

	mu      sync.Mutex
	waiting map[string]chan answer // by id, as JSON text
	inMu    sync.Mutex
	// notes gets the methods of the notifications the proxy relays, as
	// long as there is room.
	notes chan string
}

func startStdioAgent(t *testing.T, cmd *exec.Cmd) *stdioAgent {
	t.Helper()
	a := &stdioAgent{cmd: cmd, done: make(chan struct{}), waiting: make(map[string]chan answer), notes: make(chan string, 16)}
	cmd.Stderr = &a.stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	a.stdin = stdin
	go a.read(stdout)
	t.Cleanup(func() { a.close(t) })
	return a
}

// read routes each answer to its waiting request and each notification's
// method to notes; server requests are dropped.
func (a *stdioAgent) read(stdout io.Reader) {
	defer close(a.done)
	sc := bufio.NewScanner(stdout)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal(sc.Bytes(), &m) != nil {
			continue
		}
		if m.ID == nil {
			select {
			case a.notes <- m.Method:
			default:
			}
			continue
		}
		a.mu.Lock()
		ch := a.waiting[string(m.ID)]
		delete(a.waiting, string(m.ID))
		a.mu.Unlock()
		if ch != nil {
			ch <- answer{msg: bytes.Clone(sc.Bytes())}
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for id, ch := range a.waiting {
		ch <- answer{err: fmt.Errorf("the proxy closed its output before answering %s", id)}
		delete(a.waiting, id)
	}
}

func (a *stdioAgent) start(ctx context.Context, id string, frame []byte) <-chan answer {
	ch := make(chan answer, 1)
	a.mu.Lock()
	a.waiting[`"`+id+`"`] = ch
	a.mu.Unlock()
	if err := a.write(frame); err != nil {
		ch <- answer{err: err}
	}
	return ch
}

func (a *stdioAgent) write(frame []byte) error {
	a.inMu.Lock()
	defer a.inMu.Unlock()
	_, err := a.stdin.Write(append(bytes.Clone(frame), '\n'))
	return err
}

func (a *stdioAgent) notify(frame []byte) error { return a.write(frame) }

func (a *stdioAgent) request(ctx context.Context, id string, frame []byte) ([]byte, error) {
	return await(ctx, a.start(ctx, id, frame))
}

// close closes stdin and waits for the proxy (and the bank behind it) to
// exit, so that the bank's state and the receipts are final.
func (a *stdioAgent) close(t *testing.T) string {
	a.inMu.Lock()
	a.stdin.Close()
	a.inMu.Unlock()
	select {
	case <-a.done:
	case <-time.After(30 * time.Second):
		a.cmd.Process.Kill()
		t.Errorf("the proxy did not close its output within 30s of its stdin closing")
	}
	if err := a.cmd.Wait(); err != nil && !strings.Contains(err.Error(), "Wait was already called") {
		t.Errorf("the proxy exited with %v\nstderr:\n%s", err, &a.stderr)
	}
	if strings.Contains(a.stderr.String(), "WARNING: DATA RACE") {
		t.Errorf("data race:\n%s", &a.stderr)
	}
	return a.stderr.String()
}

func await(ctx context.Context, ch <-chan answer) ([]byte, error) {
	select {
	case ans := <-ch:
		return ans.msg, ans.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// httpAgent is a raw agent of bankdoor proxy --listen: each frame is a
// POST in the session, answered on its own response.
type httpAgent struct {
	url, token string
	srv        *mcptest.Server
	session    string
	closed     bool
}

func (a *httpAgent) start(ctx context.Context, id string, frame []byte) <-chan answer {
	ch := make(chan answer, 1)
	go func() {
		msg, err := a.post(ctx, frame)
		ch <- answer{msg, err}
	}()
	return ch
}

func (a *httpAgent) request(ctx context.Context, id string, frame []byte) ([]byte, error) {
	return await(ctx, a.start(ctx, id, frame))
}

func (a *httpAgent) notify(frame []byte) error {
	_, err := a.post(context.Background(), frame)
	return err
}

// post sends one frame and returns the JSON-RPC answer of its response
// (nil for 202 Accepted); the answer to initialize sets the session.
func (a *httpAgent) post(ctx context.Context, frame []byte) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.url, bytes.NewReader(frame))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+a.token)
	if a.session != "" {
		req.Header.Set("Mcp-Session-Id", a.session)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if sid := resp.Header.Get("Mcp-Session-Id"); sid != "" && a.session == "" {
		a.session = sid
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch {
	case resp.StatusCode == http.StatusAccepted:
		return nil, nil
	case mt == "application/json":
		return bytes.TrimSpace(body), nil
	case mt == "text/event-stream":
		for line := range bytes.SplitSeq(body, []byte("\n")) {
			if data, ok := bytes.CutPrefix(line, []byte("data: ")); ok && bytes.Contains(data, []byte(`"id"`)) {
				return data, nil
			}
		}
	}
	return nil, fmt.Errorf("HTTP %s, Content-Type %q: %q", resp.Status, resp.Header.Get("Content-Type"), body)
}

// close ends the session with DELETE and stops the listening proxy, so
// that its bank session ends and the receipts are final.
func (a *httpAgent) close(t *testing.T) string {
	if a.closed {
		return a.srv.Stderr()
	}
	a.closed = true
	req, _ := http.NewRequest(http.MethodDelete, a.url, nil)
	req.Header.Set("Authorization", "Bearer "+a.token)
	req.Header.Set("Mcp-Session-Id", a.session)
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
	}
	if err := a.srv.Stop(); err != nil && !errors.Is(err, context.Canceled) {
		t.Errorf("bankdoor proxy --listen: %v", err)
	}
	return a.srv.Stderr()
}
