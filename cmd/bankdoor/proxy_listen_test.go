package main_test

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bankdoor/bankdoor/internal/attacks"
	"github.com/bankdoor/bankdoor/internal/mcptest"
	"github.com/bankdoor/bankdoor/internal/tlstest"
	"github.com/bankdoor/bankdoor/proxy"
)

// startListening starts bankdoor proxy --listen 127.0.0.1:0 with the
// flags auth (how agents authenticate) and f behind it (each session
// starts its own f), and stops it at the end of the test if it is still
// running.
func startListening(t *testing.T, w *world, f mcptest.Fixture, auth ...string) *mcptest.Server {
	t.Helper()
	args := append([]string{"proxy", "--policy", w.policy, "--server", "bank", "--receipts", w.receipts, "--listen", "127.0.0.1:0"}, auth...)
	cmd := exec.Command(built.bankdoor, append(args, "--", f.Bin)...)
	cmd.Env = mcptest.Env(append([]string{"BANKDOOR_HOME=" + w.home}, f.Environ()...)...)
	p, err := mcptest.Serve(testContext(t, time.Minute), cmd, mcptest.ProxyServing)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Stop() }) // the error, if any, is stopListening's to report
	return p
}

// stopListening sends SIGTERM and checks that the proxy exits 0 and
// reported no data race (with -race the binaries are built with it).
func stopListening(t *testing.T, p *mcptest.Server) {
	t.Helper()
	if err := p.Stop(); err != nil {
		t.Errorf("bankdoor proxy --listen: %v", err)
	}
}

// TestE2EListenTwoAgents: two agents at once through one listening proxy,
// each with its own bank session; reads pass, writes are denied, and each
// agent's receipts form their own chain under their own key.
func TestE2EListenTwoAgents(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	f := w.fixture()
	tokens, toks := agentTokens(t)
	p := startListening(t, w, f, "--agent-tokens", tokens)

	if resp, err := http.Post(p.URL, "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize"}`)); err != nil || resp.StatusCode != 401 {
		t.Errorf("initialize without a token: %v %v, want 401", resp, err)
	}
	clients := bearerClients(p.URL, toks)
	readAndBeDenied(t, p, f, clients)
	checkAgentChains(t, w, map[string]int{"alice": 2, "bob": 2})
}

// bearerClients returns, for each agent, an HTTP client of url that
// sends the agent's bearer token.
func bearerClients(url string, tokens map[string]string) map[string]*http.Client {
	clients := map[string]*http.Client{}
	for agent, tok := range tokens {
		clients[agent] = (&proxy.HTTPServer{URL: url, Header: http.Header{"Authorization": {"Bearer " + tok}}}).Client()
	}
	return clients
}

// readAndBeDenied runs one session per agent at once, each with its own
// client of the listening proxy p: list_accounts passes, transfer and
// pay_bill are denied (a receipt each). It then stops p and checks that
// the bank f saw the reads only.
func readAndBeDenied(t *testing.T, p *mcptest.Server, f mcptest.Fixture, clients map[string]*http.Client) {
	t.Helper()
	ctx := testContext(t, time.Minute)
	var wg sync.WaitGroup
	for agent, hc := range clients {
		wg.Go(func() {
			cs, err := mcptest.ConnectHTTPClient(ctx, p.URL, hc)
			if err != nil {
				t.Errorf("%s: %v", agent, err)
				return
			}
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
		})
	}
	wg.Wait()
	stopListening(t, p)

	st, err := mcptest.ReadState(f.State)
	if err != nil {
		t.Fatal(err)
	}
	got := logLines(st)
	for _, l := range got {
		if !strings.Contains(l, "list_accounts") {
			t.Errorf("the bank's log has %q; want list_accounts only", l)
		}
	}
	if len(got) != len(clients) {
		t.Errorf("the bank's log: %q, want one list_accounts per agent", got)
	}
}

// agentTokens writes a tokens file for the agents alice and bob and
// returns its path and their tokens.
func agentTokens(t *testing.T) (string, map[string]string) {
	t.Helper()
	tokens := filepath.Join(t.TempDir(), "tokens")
	toks := map[string]string{"alice": strings.Repeat("a1", 20), "bob": strings.Repeat("b2", 20)}
	if err := os.WriteFile(tokens, []byte(fmt.Sprintf("alice %s\nbob %s\n", toks["alice"], toks["bob"])), 0o600); err != nil {
		t.Fatal(err)
	}
	return tokens, toks
}

// checkAgentChains checks that each agent's receipts directory holds the
// number of receipts given, numbered 1..n, all under one key that is not
// another agent's, and that it verifies with that agent's public key as
// its own chain, and not with another agent's key.
func checkAgentChains(t *testing.T, w *world, want map[string]int) {
	t.Helper()
	keyOf := map[string]string{} // key_id -> agent
	for agent, n := range want {
		dir := filepath.Join(w.receipts, agent)
		names, err := mcptest.Receipts(dir)
		if err != nil || len(names) != n {
			t.Errorf("%s: %d receipts (%v), want %d", agent, len(names), err, n)
		}
		for i, name := range names {
			rc, err := mcptest.ReadReceipt(dir, name)
			if err != nil {
				t.Fatal(err)
			}
			if other, ok := keyOf[rc.KeyID]; rc.Seq != uint64(i+1) || ok && other != agent {
				t.Errorf("%s: receipt %s has seq %d, key_id %s (also %s's); want seq %d under %s's own key", agent, name, rc.Seq, rc.KeyID, other, i+1, agent)
			}
			keyOf[rc.KeyID] = agent
		}
		pub := filepath.Join(w.home, "agents", agent, "bankdoor.pub.pem")
		if code, out := runBankdoor(t, w.home, "verify", dir, "--pub", pub, "--policy", w.policy); code != 0 {
			t.Errorf("verify %s's receipts with %s's key: exit %d\n%s", agent, agent, code, out)
		}
	}
	if len(keyOf) != len(want) {
		t.Errorf("%d distinct key_ids across %d agents; want one each", len(keyOf), len(want))
	}
	agents := slices.Sorted(maps.Keys(want))
	firstPub := filepath.Join(w.home, "agents", agents[0], "bankdoor.pub.pem")
	if code, _ := runBankdoor(t, w.home, "verify", filepath.Join(w.receipts, agents[1]), "--pub", firstPub); code == 0 {
		t.Errorf("%s's receipts verify under %s's key; want separate keys", agents[1], agents[0])
	}
}

// TestE2EListenAttacks: the whole catalogue through bankdoor proxy
// --listen, run by two agents at once (alice and bob: each its own token,
// key and receipts directory), one proxy per fixture variant. Every attack
// is denied with its rule and a receipt recording it, none reaches the
// bank (but the allowed requests whose answer is refused), no money moves,
// and each agent's receipts form their own chain.
func TestE2EListenAttacks(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.policy = w.cataloguePolicy()
	ctx := testContext(t, 4*time.Minute)
	tokens, toks := agentTokens(t)
	all := attacks.Catalogue()
	results := map[string][]attacks.Result{}
	var mu sync.Mutex
	for _, v := range attacks.Variants(all) {
		f := w.fixture(variantEnv(v)...)
		p := startListening(t, w, f, "--agent-tokens", tokens)
		// The agents' sessions share the bank's state file; an attack after
		// warmup calls is judged by what reached the bank meanwhile, so
		// those variants run one agent after the other.
		warm := slices.ContainsFunc(attacks.ForVariant(all, v), func(a attacks.Attack) bool { return len(a.Warmup) > 0 })
		var wg sync.WaitGroup
		for agent, tok := range toks {
			if warm {
				wg.Wait()
			}
			wg.Go(func() {
				s, err := mcptest.DialHTTP(ctx, p.URL, tok)
				if err != nil {
					t.Errorf("%s (variant %q): %v\n%s", agent, v, err, p.Stderr())
					return
				}
				rs := attacks.Run(ctx, attacks.Target{Session: s, State: f.State, Receipts: filepath.Join(w.receipts, agent)}, attacks.ForVariant(all, v))
				if err := s.Close(); err != nil {
					t.Errorf("%s (variant %q): closing the session: %v", agent, v, err)
				}
				mu.Lock()
				results[agent] = append(results[agent], rs...)
				mu.Unlock()
			})
		}
		wg.Wait()
		stopListening(t, p)
	}
	want := map[string]int{}
	for agent := range toks {
		rs := results[agent]
		t.Logf("attacks by %s through the listening proxy:\n%s", agent, attacks.Table(rs))
		for _, r := range rs {
			if p := r.Problems(); len(p) > 0 {
				t.Errorf("%s: %s (%s): %s", agent, r.Attack.ID, r.Attack.Description, strings.Join(p, "; "))
			}
		}
		if len(rs) != len(all) {
			t.Errorf("%s ran %d attacks, want %d", agent, len(rs), len(all))
		}
		want[agent] = len(all)
	}
	checkAgentChains(t, w, want)
}

// TestE2EListenMTLS: bankdoor proxy --listen over HTTPS with two agents at
// once, alice by her bearer token and carol by a client certificate of
// --agent-ca (her name its CommonName); each reads and is denied a
// transfer and a payment, and each one's receipts form their own chain
// under their own key. A certificate of another CA fails the handshake,
// and a request with neither a certificate nor a token gets 401.
func TestE2EListenMTLS(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	f := w.fixture()
	tokens, toks := agentTokens(t)
	serverCA, agentCA, otherCA := tlstest.NewCA(t, "server CA"), tlstest.NewCA(t, "agents CA"), tlstest.NewCA(t, "other CA")
	dir := t.TempDir()
	listen := serverCA.WriteServer(t, dir, "bankdoor proxy")
	agentsCA := filepath.Join(dir, "agents-ca.pem")
	if err := os.WriteFile(agentsCA, tlstest.CertPEM(agentCA.Cert), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startListening(t, w, f, "--agent-tokens", tokens, "--listen-cert", listen.Cert,
		"--listen-key", listen.Key, "--agent-ca", agentsCA)
	if !strings.HasPrefix(p.URL, "https://127.0.0.1:") {
		t.Fatalf("the proxy serves at %s, want https://127.0.0.1:PORT/mcp", p.URL)
	}
	presenting := func(c tls.Certificate) *http.Client {
		return &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: serverCA.Pool(), MinVersion: tls.VersionTLS12,
			GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &c, nil }}}}
	}
	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`
	if _, err := presenting(otherCA.Issue(t, "carol")).Post(p.URL, "application/json", strings.NewReader(initialize)); err == nil || !strings.Contains(err.Error(), "tls: ") {
		t.Errorf("carol's name in a certificate of another CA: %v, want the TLS handshake to fail", err)
	}
	anon := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: serverCA.Pool()}}}
	if resp, err := anon.Post(p.URL, "application/json", strings.NewReader(initialize)); err != nil || resp.StatusCode != 401 {
		t.Errorf("initialize with neither a certificate nor a token: %v %v, want 401", resp, err)
	} else {
		resp.Body.Close()
	}
	alice := (&proxy.HTTPServer{URL: p.URL, RootCAs: serverCA.Pool(), Header: http.Header{"Authorization": {"Bearer " + toks["alice"]}}}).Client()
	readAndBeDenied(t, p, f, map[string]*http.Client{"alice": alice, "carol": presenting(agentCA.Issue(t, "carol"))})
	checkAgentChains(t, w, map[string]int{"alice": 2, "carol": 2})
}

// TestE2EListenAbandonedSessions: 60 sessions of two agents (ten times
// what the two caps hold together), opened and
// abandoned without DELETE (as the TypeScript SDK's close() and the
// conformance runner leave them), against --max-sessions 3 and
// --max-bank-sessions 4: every new session is served (the least recently
// used idle one is evicted for it), the bank processes the proxy runs
// never outnumber 4, and a request outside a session leaves a receipt in
// its agent's chain that verifies.
func TestE2EListenAbandonedSessions(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	f := w.fixture()
	tokens, toks := agentTokens(t)
	p := startListening(t, w, f, "--agent-tokens", tokens, "--max-sessions", "3", "--max-bank-sessions", "4")
	agents := []string{"alice", "bob"}
	most := 0
	const sessions = 60
	for i := range sessions {
		tok := toks[agents[i%2]]
		sid := openListSession(t, p.URL, tok)
		if sid == "" {
			t.Fatalf("session %d was not served\n%s", i, p.Stderr())
		}
		n := len(childProcesses(t, p.Pid()))
		most = max(most, n)
		if n > 4 {
			t.Fatalf("after session %d the proxy runs %d bank processes, want at most 4", i, n)
		}
	}
	t.Logf("%d abandoned sessions: at most %d bank processes at once; proxy RSS %d KiB", sessions, most, rssKiB(t, p.Pid()))
	for _, agent := range agents {
		status, body := postJSON(t, p.URL, toks[agent], "", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"list_accounts"}}`)
		if status != 400 || !strings.Contains(body, "session.missing") || !strings.Contains(body, "receipt 000001.json") {
			t.Errorf("%s: a call without a session: %d %q, want 400 naming session.missing and its receipt", agent, status, body)
		}
	}
	stopListening(t, p)
	checkAgentChains(t, w, map[string]int{"alice": 1, "bob": 1})
}

// TestE2EListenSessionMemory measures what a session costs the gateway:
// the proxy's resident memory per idle session and per session with its
// GET stream open, and the bank process each session runs. It logs the
// figures and fails if a session costs the proxy more than 8 MiB.
func TestE2EListenSessionMemory(t *testing.T) {
	t.Parallel()
	const n = 30
	w := newWorld(t)
	f := w.fixture()
	tokens, toks := agentTokens(t)
	p := startListening(t, w, f, "--agent-tokens", tokens, "--max-sessions", "64")
	if openListSession(t, p.URL, toks["alice"]) == "" { // opens alice's key and chain
		t.Fatalf("the first session was not served\n%s", p.Stderr())
	}
	before := rssKiB(t, p.Pid())
	sids := make([]string, n)
	for i := range sids {
		if sids[i] = openListSession(t, p.URL, toks["alice"]); sids[i] == "" {
			t.Fatalf("session %d was not served\n%s", i, p.Stderr())
		}
	}
	idle := rssKiB(t, p.Pid())
	for _, sid := range sids {
		req, _ := http.NewRequest("GET", p.URL, nil)
		req.Header.Set("Authorization", "Bearer "+toks["alice"])
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set("Mcp-Session-Id", sid)
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("GET stream: %v %v", resp, err)
		}
		defer resp.Body.Close()
	}
	open := rssKiB(t, p.Pid())
	kids := childProcesses(t, p.Pid())
	bank := 0
	for _, pid := range kids {
		bank += rssKiB(t, pid)
	}
	t.Logf("proxy RSS %d KiB with 1 session; per idle session %d KiB; per session with its GET stream open %d KiB; bank process %d KiB each (%d sessions)",
		before, (idle-before)/n, (open-before)/n, bank/len(kids), n)
	if len(kids) != n+1 {
		t.Errorf("%d bank processes for %d sessions", len(kids), n+1)
	}
	if (open-before)/n > 8<<10 {
		t.Errorf("a session costs the proxy %d KiB, want at most 8 MiB", (open-before)/n)
	}
	stopListening(t, p)
}

// openListSession initializes a session at url with token, lists the
// tools in it, and returns its id ("" if any step was refused).
func openListSession(t *testing.T, url, token string) string {
	t.Helper()
	status, _, sid := post(t, url, token, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"abandoner","version":"1"}}}`)
	if status != 200 || sid == "" {
		return ""
	}
	if status, _ := postJSON(t, url, token, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); status != 202 {
		return ""
	}
	if status, body := postJSON(t, url, token, sid, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`); status != 200 || !strings.Contains(body, "list_accounts") {
		return ""
	}
	return sid
}

func postJSON(t *testing.T, url, token, sid, body string) (int, string) {
	t.Helper()
	status, b, _ := post(t, url, token, sid, body)
	return status, b
}

// post POSTs body to url as agent token in session sid (none if ""), and
// returns the status, the body and the Mcp-Session-Id of the answer.
func post(t *testing.T, url, token, sid, body string) (int, string, string) {
	t.Helper()
	req, err := http.NewRequest("POST", url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b), resp.Header.Get("Mcp-Session-Id")
}

// childProcesses returns the processes whose parent is pid, zombies
// included, from /proc.
func childProcesses(t *testing.T, pid int) []int {
	t.Helper()
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil {
		t.Fatal(err)
	}
	var kids []int
	for _, p := range stats {
		b, err := os.ReadFile(p)
		if err != nil {
			continue // the process ended meanwhile
		}
		// pid (comm) state ppid ...; comm may hold spaces and parentheses.
		rest := string(b[strings.LastIndexByte(string(b), ')')+1:])
		if f := strings.Fields(rest); len(f) > 1 && f[1] == strconv.Itoa(pid) {
			child, _ := strconv.Atoi(filepath.Base(filepath.Dir(p)))
			kids = append(kids, child)
		}
	}
	return kids
}

// rssKiB returns pid's resident memory (VmRSS) in KiB.
func rssKiB(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for l := range strings.Lines(string(b)) {
		if f := strings.Fields(l); len(f) == 3 && f[0] == "VmRSS:" {
			n, err := strconv.Atoi(f[1])
			if err != nil {
				t.Fatalf("/proc/%d/status: %q", pid, l)
			}
			return n
		}
	}
	t.Fatalf("/proc/%d/status has no VmRSS", pid)
	return 0
}
