package attacks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"github.com/bankdoor/bankdoor/internal/agentkey"
	"github.com/bankdoor/bankdoor/internal/mcptest"
	"github.com/bankdoor/bankdoor/proxy/policy"
	"github.com/bankdoor/bankdoor/verifier"
)

// The rug-pull matrix: the fixture bank changes get_balances's definition
// (and starts sweeping money) at a chosen point of a session, and a raw
// agent calls get_balances through the built proxy. Over every transport,
// for every point, with and without the bank notifying, sequential and
// pipelined, whatever protocol version the agent asks for: no changed
// tool may be called, no money may move, and every refusal must be
// pin.mismatch with a receipt that verifies.

// AgentVersions are the protocol versions the matrix's agents ask for:
// the ones bankdoor implements, what newer clients send, and a version
// that sorts after every real one.
var AgentVersions = []string{"2024-11-05", "2025-06-18", "2025-11-25", "2026-07-28", "9999-12-31"}

// RugPullCalls is how many times each session calls get_balances.
const RugPullCalls = 3

// RugPullPoints are the points of a session at which the fixture
// rug-pulls get_balances (BANK_FIXTURE_RUGPULL_AT): before answering each
// call that another follows, and between pages of the proxy's listings.
// With BANK_FIXTURE_PAGE_SIZE=2 a listing has three pages, get_balances on
// the first: page:1 and page:2 fall between the pages of the listing
// before call 1, page:3 inside the listing after it.
var RugPullPoints = []string{"call:1", "call:2", "page:1", "page:2", "page:3"}

// RugPullTransports are how the agent and the bank reach the proxy:
// stdio both ways, the bank over streamable HTTP (--url), the agent over
// streamable HTTP (--listen).
var RugPullTransports = []string{"stdio", "url", "listen"}

// RugPullCase is one session of the matrix.
type RugPullCase struct {
	Transport string // one of RugPullTransports
	Point     string // one of RugPullPoints
	Notify    bool   // the bank sends notifications/tools/list_changed
	Pipelined bool   // the agent sends every call at once, and never notifications/initialized
	Version   string // the protocolVersion the agent asks for
}

// Name is the case as a test name.
func (c RugPullCase) Name() string {
	order, notify := "sequential", "silent"
	if c.Pipelined {
		order = "pipelined"
	}
	if c.Notify {
		notify = "notify"
	}
	return strings.Join([]string{c.Transport, strings.ReplaceAll(c.Point, ":", ""), notify, order, c.Version}, "_")
}

// RugPullCases is the matrix: every transport, point, notifying or not,
// and order, each with one of AgentVersions, so that every transport
// sees every version in both orders.
func RugPullCases() []RugPullCase {
	var out []RugPullCase
	for _, tr := range RugPullTransports {
		i := 0
		for _, point := range RugPullPoints {
			for _, notify := range []bool{false, true} {
				for _, pipelined := range []bool{false, true} {
					out = append(out, RugPullCase{tr, point, notify, pipelined, AgentVersions[i%len(AgentVersions)]})
					i++
				}
			}
		}
	}
	return out
}

// RugPullEnv is what the matrix runs with.
type RugPullEnv struct {
	Bankdoor, BankServer string // the binaries
	Policy               string // pinned against BankServer
	// Home is BANKDOOR_HOME, with the signing key of the stdio and --url
	// proxies; --listen proxies keep the agent's key in Home/agents/AGENT.
	Home string
	// Tokens is a tokens file (--agent-tokens) naming Agent with Token.
	Tokens, Agent, Token string
}

// RugPullResult is what happened in one session.
type RugPullResult struct {
	Case     RugPullCase
	Allowed  int   // calls answered with a result
	Denied   int   // calls denied with pin.mismatch
	Moved    int64 // cents moved, in absolute value
	Problems []string
	Stderr   string // the proxy's (and bank's) stderr, for a failure
}

// RunRugPull runs one session of the matrix in work, a directory it
// creates if need be and that no other session uses.
func RunRugPull(ctx context.Context, env RugPullEnv, c RugPullCase, work string) (res RugPullResult) {
	res.Case = c
	problem := func(format string, a ...any) { res.Problems = append(res.Problems, fmt.Sprintf(format, a...)) }
	if err := os.MkdirAll(work, 0o755); err != nil {
		problem("%v", err)
		return res
	}
	notify := "0"
	if c.Notify {
		notify = "1"
	}
	f := mcptest.Fixture{Bin: env.BankServer, State: filepath.Join(work, "state.json"),
		Env: []string{"BANK_FIXTURE_PAGE_SIZE=2", "BANK_FIXTURE_RUGPULL_AT=" + c.Point, "BANK_FIXTURE_RUGPULL_NOTIFY=" + notify}}
	s, err := startRugPull(ctx, env, c.Transport, f, filepath.Join(work, "receipts"))
	if err != nil {
		problem("starting the session: %v", err)
		return res
	}
	answers, err := s.drive(ctx, c)
	if cerr := s.close(); cerr != nil {
		problem("ending the session: %v", cerr)
	}
	res.Stderr = s.stderr()
	if err != nil {
		problem("%v", err)
		return res
	}
	st, err := mcptest.ReadState(f.State)
	if err != nil {
		problem("%v", err)
		return res
	}
	if res.Moved = mcptest.Moved(answers.seed, st.Accounts); res.Moved != 0 {
		problem("money moved: %d cents; balances %v", res.Moved, st.Accounts)
	}
	for i, ans := range answers.calls {
		if bytes.Contains(ans, []byte(`"resultType"`)) {
			problem("call %d answered %s: the bank took the agent's version for its own (a multi-round-trip result)", i+1, ans)
		}
		switch rule, receipt := deniedRule(ans); {
		case rule == "" && bytes.Contains(ans, []byte(`"result"`)) && !bytes.Contains(ans, []byte(`"isError":true`)):
			res.Allowed++
		case rule != "pin.mismatch":
			problem("call %d answered %s; want a result or a pin.mismatch denial", i+1, ans)
		default:
			res.Denied++
			if rc, err := mcptest.ReadReceipt(s.receipts, receipt); err != nil || rc.Rule != "pin.mismatch" || rc.Tool != "get_balances" {
				problem("call %d: receipt %q: %+v %v; want one recording pin.mismatch of get_balances", i+1, receipt, rc, err)
			}
		}
	}
	calls := 0
	for _, e := range st.Log {
		if e.Tool != nil {
			calls++
		}
	}
	if calls != res.Allowed {
		problem("the bank logged %d calls, %d were answered with a result: a denied call reached the bank", calls, res.Allowed)
	}
	if kind, k, _ := strings.Cut(c.Point, ":"); kind == "call" && fmt.Sprint(res.Allowed) != k {
		problem("%d calls were let through with the pull before answering call %s; want exactly %s", res.Allowed, k, k)
	}
	if res.Denied > 0 {
		if err := verifyReceipts(s.receipts, s.pub, env.Policy); err != nil {
			problem("%v", err)
		}
	}
	return res
}

// rugAnswers are the seed balances and the answers of one session.
type rugAnswers struct {
	seed  map[string]int64
	calls [][]byte
}

// drive initializes with the case's version (a pipelined agent never
// sends notifications/initialized) and calls get_balances RugPullCalls
// times.
func (s *rugSession) drive(ctx context.Context, c RugPullCase) (rugAnswers, error) {
	var out rugAnswers
	init := fmt.Sprintf(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":%q,"capabilities":{},"clientInfo":{"name":"rug-agent","version":"1"}}}`, c.Version)
	ans, err := mcptest.Request(ctx, s.agent, "init", []byte(init))
	if err != nil || !bytes.Contains(ans, []byte(`"result"`)) {
		return out, fmt.Errorf("initialize %s: %s %v", c.Version, ans, err)
	}
	if want := NegotiatedVersion(c.Version); !bytes.Contains(ans, []byte(`"protocolVersion":"`+want+`"`)) {
		return out, fmt.Errorf("initialize %s answered %s, want protocolVersion %s", c.Version, ans, want)
	}
	st, err := mcptest.ReadState(s.state)
	if err != nil {
		return out, err
	}
	out.seed = st.Accounts
	if !c.Pipelined {
		if err := s.agent.Notify([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)); err != nil {
			return out, err
		}
	}
	call := func(i int) (string, []byte) {
		id := fmt.Sprintf("call-%d", i)
		return id, []byte(`{"jsonrpc":"2.0","id":"` + id + `","method":"tools/call","params":{"name":"get_balances","arguments":{"account_id":"acc_checking"}}}`)
	}
	out.calls = make([][]byte, RugPullCalls)
	errs := make([]error, RugPullCalls)
	if c.Pipelined {
		var wg sync.WaitGroup
		for i := range RugPullCalls {
			id, frame := call(i + 1)
			ch := s.agent.Start(ctx, id, frame)
			wg.Go(func() {
				select {
				case a := <-ch:
					out.calls[i], errs[i] = a.Msg, a.Err
				case <-ctx.Done():
					errs[i] = ctx.Err()
				}
			})
		}
		wg.Wait()
	} else {
		for i := range RugPullCalls {
			id, frame := call(i + 1)
			out.calls[i], errs[i] = mcptest.Request(ctx, s.agent, id, frame)
		}
	}
	return out, errors.Join(errs...)
}

// NegotiatedVersion is the version bankdoor answers an agent asking for
// v: v if bankdoor implements it, else the newest it does.
func NegotiatedVersion(v string) string {
	switch v {
	case "2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25":
		return v
	}
	return "2025-11-25"
}

// rugSession is one running session: the agent, and what to stop.
type rugSession struct {
	agent    mcptest.RawAgent
	state    string // the bank's state file
	receipts string // where the session's receipts go
	pub      string // the public key they verify with
	servers  []*mcptest.Server
}

// startRugPull starts the proxy for transport with f behind it.
func startRugPull(ctx context.Context, env RugPullEnv, transport string, f mcptest.Fixture, receipts string) (*rugSession, error) {
	s := &rugSession{state: f.State, receipts: receipts, pub: filepath.Join(env.Home, agentkey.PublicFile)}
	p := mcptest.Proxy{Bin: env.Bankdoor, Policy: env.Policy, Server: "bank", Receipts: receipts, Home: env.Home, Fixture: f}
	switch transport {
	case "url":
		cmd := exec.Command(f.Bin, "--http", "127.0.0.1:0")
		cmd.Env = mcptest.Env(f.Environ()...)
		h, err := mcptest.Serve(ctx, cmd, mcptest.FixtureServing)
		if err != nil {
			return nil, err
		}
		s.servers = append(s.servers, h)
		p.URL = h.URL
		fallthrough
	case "stdio":
		a, err := mcptest.StartStdioAgent(p.Command())
		if err != nil {
			s.close()
			return nil, err
		}
		s.agent = a
		return s, nil
	}
	args := []string{"proxy", "--policy", env.Policy, "--server", "bank", "--receipts", receipts,
		"--listen", "127.0.0.1:0", "--agent-tokens", env.Tokens, "--", f.Bin}
	cmd := exec.Command(env.Bankdoor, args...)
	cmd.Env = mcptest.Env(append([]string{"BANKDOOR_HOME=" + env.Home}, f.Environ()...)...)
	h, err := mcptest.Serve(ctx, cmd, mcptest.ProxyServing)
	if err != nil {
		return nil, err
	}
	s.servers = append(s.servers, h)
	s.agent = &mcptest.HTTPAgent{URL: h.URL, Token: env.Token}
	s.receipts = filepath.Join(receipts, env.Agent)
	s.pub = filepath.Join(env.Home, "agents", env.Agent, agentkey.PublicFile)
	return s, nil
}

// close ends the session and stops the servers, so that the bank's state
// and the receipts are final.
func (s *rugSession) close() error {
	var errs []error
	if s.agent != nil {
		errs = append(errs, s.agent.Close())
	}
	for i := len(s.servers) - 1; i >= 0; i-- {
		errs = append(errs, s.servers[i].Stop())
	}
	return errors.Join(errs...)
}

// stderr is what the proxy and the bank wrote to stderr.
func (s *rugSession) stderr() string {
	var b strings.Builder
	if a, ok := s.agent.(*mcptest.StdioAgent); ok {
		b.WriteString(a.Stderr())
	}
	for _, h := range s.servers {
		b.WriteString(h.Stderr())
	}
	return b.String()
}

// verifyReceipts verifies a receipts directory as bankdoor verify --pub
// --policy does, in process.
func verifyReceipts(dir, pubFile, policyFile string) error {
	pub, err := agentkey.LoadPublic(pubFile)
	if err != nil {
		return err
	}
	p, err := policy.Load(policyFile)
	if err != nil {
		return err
	}
	if _, err := verifier.VerifyDir(dir, pub, verifier.Options{PolicySHA256: p.SHA256}); err != nil {
		return fmt.Errorf("verify %s: %w", dir, err)
	}
	return nil
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

// WriteTokens writes a tokens file for one agent (mode 0600) in dir and
// returns its path.
func WriteTokens(dir, agent, token string) (string, error) {
	path := filepath.Join(dir, "tokens")
	return path, os.WriteFile(path, []byte(agent+" "+token+"\n"), 0o600)
}
