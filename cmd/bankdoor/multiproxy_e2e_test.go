package main_test

// End to end, through the built binaries: many bankdoor proxies on one
// machine (issue 13). Proxies started at once on one $BANKDOOR_HOME and
// one receipts directory write one chain and one embedded ledger; the
// ledger's holder killed in a burst is replaced by another proxy; sibling
// receipts directories with their own keys each keep their own ledger; a
// stdio proxy and a --listen gateway share one directory and one ledger.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bankdoor/bankdoor/internal/agentkey"
	"github.com/bankdoor/bankdoor/internal/mcptest"
	"github.com/bankdoor/bankdoor/ledger/receipt"
)

// What a proxy with -v logs about the embedded ledger (package
// ledger/station).
const (
	logHolding  = "holding the ledger: shipping every chain of the receipts directory"
	logStandby  = "another proxy holds the ledger and ships this receipts directory"
	logTookOver = "took over the ledger from a proxy that stopped"
)

// TestE2EMultiProxyOneChain: 8 stdio proxies started at the same moment on
// one $BANKDOOR_HOME with no key yet and one receipts directory, each with
// its own agent denied 80 transfers while the others are: one signing
// key and one log key are made, one proxy holds the ledger, and the
// directory is one chain of seq 1..640 that verify accepts, in which
// every receipt an agent was answered with is its own. Once all have
// stopped the embedded ledger holds the 640 receipts once each, and an
// export of it verifies offline against its checkpoint.
func TestE2EMultiProxyOneChain(t *testing.T) {
	t.Parallel()
	const proxies, calls = 8, 80
	w := keylessWorld(t)
	ps := startProxies(t, w, proxies, "-v")
	if holders := holderOf(ps); len(holders) != 1 {
		t.Errorf("proxies %v say they hold the ledger; want exactly one", holders)
	}
	ctx := testContext(t, 5*time.Minute)
	began := time.Now()
	answered := make([][]string, proxies)
	errs := make([]error, proxies)
	var wg sync.WaitGroup
	for i, p := range ps {
		wg.Go(func() { answered[i], errs[i] = denyWhile(ctx, p.s.Client(), func(n int) bool { return n < calls }) })
	}
	wg.Wait()
	t.Logf("%d proxies x %d denies, each with its durable receipt, at once: %v", proxies, calls, time.Since(began).Round(time.Millisecond))
	for i, err := range errs {
		if err != nil {
			t.Fatalf("agent of proxy %d, after %d denies: %v\nstderr:\n%s", i, len(answered[i]), err, stderrTail(ps[i].log.String()))
		}
	}
	var stderr strings.Builder
	for _, p := range ps {
		stderr.WriteString(p.log.String())
	}
	for _, made := range []string{"created signing key ", "created log key "} {
		if n := strings.Count(stderr.String(), made); n != 1 {
			t.Errorf("%d proxies logged %q; want exactly one to make the key and the others to use it", n, made)
		}
	}
	if n := strings.Count(stderr.String(), logTookOver); n != 0 {
		t.Errorf("%d proxies took over the ledger while all were running; want none", n)
	}

	checkAnswered(t, w.receipts, answered, proxies*calls)
	if code, out := w.verify(w.receipts); code != 0 || !strings.Contains(out, fmt.Sprintf("ok: %d receipts, seq 1..%d", proxies*calls, proxies*calls)) {
		t.Errorf("bankdoor verify: exit %d, want 0 and one chain of seq 1..%d\n%s", code, proxies*calls, out)
	}
	stopAll(t, ps)
	checkLedgerHolds(t, w.embeddedEntries(), receiptFiles(t, w.receipts, proxies*calls))
	w.exportAndVerifyChain(w.receipts, w.pub, proxies*calls, "")
}

// TestE2EMultiProxyHolderKilled: 4 proxies on one key and one receipts
// directory; the one that holds the ledger is killed (SIGKILL) in the
// middle of a burst of denies from every agent, once its own agent has
// been answered some. Another proxy takes over the ledger within 2 s and
// the others' bursts go on. Every deny any agent got, the killed proxy's
// agent's included, has its receipt; the directory is one chain that
// verify accepts, with no partial receipt; and once all have stopped the
// ledger holds every receipt of the directory, once.
func TestE2EMultiProxyHolderKilled(t *testing.T) {
	t.Parallel()
	const proxies, beforeKill, afterTakeover = 4, 40, 50
	w := newWorld(t)
	ps := startProxies(t, w, proxies, "-v")
	holders := holderOf(ps)
	if len(holders) != 1 {
		t.Fatalf("proxies %v say they hold the ledger; want exactly one", holders)
	}
	holder := holders[0]
	ctx := testContext(t, 5*time.Minute)

	// The holder's agent denies until its proxy dies; the others until the
	// takeover (or the test gives up on it), then afterTakeover more.
	holderAnswered, takenOver := make(chan struct{}), make(chan struct{})
	var endBursts sync.Once
	defer endBursts.Do(func() { close(takenOver) })
	answered := make([][]string, proxies)
	errs := make([]error, proxies)
	var wg sync.WaitGroup
	for i, p := range ps {
		more := untilThenMore(takenOver, afterTakeover)
		if i == holder {
			more = func(n int) bool {
				if n == beforeKill {
					close(holderAnswered)
				}
				return true
			}
		}
		wg.Go(func() { answered[i], errs[i] = denyWhile(ctx, p.s.Client(), more) })
	}
	select {
	case <-holderAnswered:
	case <-ctx.Done():
		t.Fatalf("the holder's agent got no %d denies: %v", beforeKill, errs[holder])
	}
	killed := time.Now()
	if err := ps[holder].cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	var survivors []*stdioProxy
	for i, p := range ps {
		if i != holder {
			survivors = append(survivors, p)
		}
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	by, err := firstToLog(wctx, survivors, logTookOver)
	took := time.Since(killed)
	endBursts.Do(func() { close(takenOver) })
	wg.Wait()
	if err != nil {
		t.Fatalf("no proxy took over the ledger after its holder was killed: %v", err)
	}
	t.Logf("proxy %d took over the ledger %v after the holder was killed", by, took.Round(time.Millisecond))
	if took > 2*time.Second {
		t.Errorf("the takeover took %v; want at most 2 s", took)
	}

	if errs[holder] == nil || len(answered[holder]) < beforeKill {
		t.Errorf("the killed proxy's agent: %d denies, then %v; want at least %d, then an error", len(answered[holder]), errs[holder], beforeKill)
	}
	total := 0
	for i, names := range answered {
		total += len(names)
		if i != holder && errs[i] != nil {
			t.Errorf("agent of proxy %d, after %d denies: %v\nstderr:\n%s", i, len(names), errs[i], stderrTail(ps[i].log.String()))
		}
	}
	var stderr strings.Builder
	for _, p := range survivors {
		stderr.WriteString(p.log.String())
	}
	if n := strings.Count(stderr.String(), logTookOver); n != 1 {
		t.Errorf("%d proxies say they took over the ledger; want one", n)
	}
	// The killed proxy may have written one receipt it did not answer.
	names, err := mcptest.Receipts(w.receipts)
	if err != nil {
		t.Fatal(err)
	}
	if len(names) != total && len(names) != total+1 {
		t.Errorf("%d receipts in the directory for %d denies answered; want as many, or one more", len(names), total)
	}
	checkAnswered(t, w.receipts, answered, len(names))
	if code, out := w.verify(w.receipts); code != 0 || !strings.Contains(out, fmt.Sprintf("ok: %d receipts, seq 1..%d", len(names), len(names))) {
		t.Errorf("bankdoor verify after the kill: exit %d, want 0 and seq 1..%d\n%s", code, len(names), out)
	}
	stopAll(t, survivors)
	ps[holder].s.Close() // reports the kill
	checkLedgerHolds(t, w.embeddedEntries(), receiptFiles(t, w.receipts, len(names)))
}

// TestE2EMultiProxySiblingDirs: two proxies with their own keys
// ($BANKDOOR_HOME) and sibling receipts directories X/agent-a and
// X/agent-b run side by side, each with its own embedded ledger in its
// directory. One stops and starts again while the other runs: its chain
// goes on. Each directory verifies with its own key, and each ledger holds
// its directory's receipts.
func TestE2EMultiProxySiblingDirs(t *testing.T) {
	t.Parallel()
	x := t.TempDir()
	a, b := newWorld(t), newWorld(t)
	a.receipts, b.receipts = filepath.Join(x, "agent-a"), filepath.Join(x, "agent-b")
	if a.keyID() == b.keyID() {
		t.Fatal("the two homes have one key")
	}
	sa := start(t, a.proxy(a.fixture()).Command(), nil)
	sb := start(t, b.proxy(b.fixture()).Command(), nil)
	for seq := range uint64(3) {
		deny(t, sa, seq+1)
		deny(t, sb, seq+1)
	}
	for _, w := range []*world{a, b} {
		if _, err := os.Stat(filepath.Join(w.receipts, ".ledger.db")); err != nil {
			t.Errorf("the embedded ledger of %s: %v", w.receipts, err)
		}
	}
	if err := sa.Close(); err != nil {
		t.Fatalf("proxy of agent-a: %v\n%s", err, sa.Stderr())
	}
	sa = start(t, a.proxy(a.fixture()).Command(), nil)
	deny(t, sa, 4)
	deny(t, sb, 4)
	deny(t, sb, 5)
	for _, s := range []*mcptest.Session{sa, sb} {
		if err := s.Close(); err != nil {
			t.Fatalf("proxy: %v\n%s", err, s.Stderr())
		}
		checkNoLedgerTrouble(t, s.Stderr())
	}
	if _, err := os.Stat(filepath.Join(x, "ledger.db")); err == nil {
		t.Errorf("a ledger file %s between the two directories", filepath.Join(x, "ledger.db"))
	}
	for w, n := range map[*world]int{a: 4, b: 5} {
		if code, out := w.verify(w.receipts); code != 0 || !strings.Contains(out, fmt.Sprintf("ok: %d receipts, seq 1..%d, key_id %s", n, n, w.keyID())) {
			t.Errorf("bankdoor verify %s: exit %d, want 0, seq 1..%d under its own key\n%s", w.receipts, code, n, out)
		}
		checkLedgerHolds(t, w.embeddedEntries(), receiptFiles(t, w.receipts, n))
	}
}

// TestE2EMultiProxyStdioAndGateway: a stdio proxy and a --listen gateway
// on one $BANKDOOR_HOME and one receipts directory R at once, the one or
// the other holding the embedded ledger: the stdio proxy's chain in R and
// the gateway agent's in R/alice both verify, and the ledger holds both
// whole once the two have stopped.
func TestE2EMultiProxyStdioAndGateway(t *testing.T) {
	t.Parallel()
	t.Run("StdioHolds", func(t *testing.T) { t.Parallel(); testStdioAndGateway(t, true) })
	t.Run("GatewayHolds", func(t *testing.T) { t.Parallel(); testStdioAndGateway(t, false) })
}

func testStdioAndGateway(t *testing.T, stdioFirst bool) {
	const calls = 20
	w := newWorld(t)
	tokens, toks := agentTokens(t)
	var sp *stdioProxy
	var gw *mcptest.Server
	if stdioFirst {
		sp = startProxies(t, w, 1, "-v")[0]
		gw = startListening(t, w, w.fixture(), "--agent-tokens", tokens, "-v")
	} else {
		gw = startListening(t, w, w.fixture(), "--agent-tokens", tokens, "-v")
		sp = startProxies(t, w, 1, "-v")[0]
	}
	holders := holderOf([]*stdioProxy{sp})
	if stdioFirst != (len(holders) == 1) || stdioFirst == strings.Contains(gw.Stderr(), logHolding) {
		t.Fatalf("the stdio proxy holds the ledger: %v; the gateway: %v; want the first started to\nstdio:\n%s\ngateway:\n%s",
			len(holders) == 1, strings.Contains(gw.Stderr(), logHolding), sp.log.String(), gw.Stderr())
	}

	ctx := testContext(t, 2*time.Minute)
	alice, err := mcptest.ConnectHTTP(ctx, gw.URL, toks["alice"])
	if err != nil {
		t.Fatal(err)
	}
	answered := make([][]string, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for i, c := range []*mcp.ClientSession{sp.s.Client(), alice} {
		wg.Go(func() { answered[i], errs[i] = denyWhile(ctx, c, func(n int) bool { return n < calls }) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("denies: %v", err)
	}
	alice.Close()
	var stops sync.WaitGroup
	stops.Go(func() { stopAll(t, []*stdioProxy{sp}) })
	stops.Go(func() { stopListening(t, gw) })
	stops.Wait()
	checkNoLedgerTrouble(t, sp.log.String())
	checkNoLedgerTrouble(t, gw.Stderr())

	aliceDir := filepath.Join(w.receipts, "alice")
	checkAnswered(t, w.receipts, answered[:1], calls)
	checkAnswered(t, aliceDir, answered[1:], calls)
	alicePub := filepath.Join(w.home, "agents", "alice", agentkey.PublicFile)
	for dir, pub := range map[string]string{w.receipts: w.pub, aliceDir: alicePub} {
		code, out := runBankdoor(t, w.home, "verify", dir, "--pub", pub, "--policy", w.policy)
		if code != 0 || !strings.Contains(out, fmt.Sprintf("ok: %d receipts, seq 1..%d", calls, calls)) {
			t.Errorf("bankdoor verify %s --pub %s: exit %d, want 0 and seq 1..%d\n%s", dir, pub, code, calls, out)
		}
	}
	own, agent := receiptFiles(t, w.receipts, calls), receiptFiles(t, aliceDir, calls)
	checkLedgerHolds(t, w.embeddedEntries(), own, agent)
	w.exportAndVerifyChain(w.receipts, w.pub, calls, "")
	w.exportAndVerify("alice", calls, "")
}

// keylessWorld is a world with no key in its home yet: the first proxy
// started makes it.
func keylessWorld(t *testing.T) *world {
	t.Helper()
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	return &world{t: t, home: home, pub: filepath.Join(home, agentkey.PublicFile),
		receipts: filepath.Join(dir, "receipts"), policy: pinnedPolicy(t, dir)}
}

// stdioProxy is one of several stdio proxies: its command (to kill it),
// its session and its stderr.
type stdioProxy struct {
	cmd *exec.Cmd
	s   *mcptest.Session
	log *lineWatch
}

// startProxies starts n stdio proxies of w with flags at the same moment,
// each with its own fixture, and returns them once each has answered the
// MCP handshake and said whether it holds the ledger. They are killed at
// the end of the test if still running.
func startProxies(t *testing.T, w *world, n int, flags ...string) []*stdioProxy {
	t.Helper()
	ctx := testContext(t, 2*time.Minute)
	ps := make([]*stdioProxy, n)
	errs := make([]error, n)
	for i := range ps {
		p := w.proxy(w.fixture())
		p.Flags = flags
		ps[i] = &stdioProxy{cmd: p.Command(), log: newLineWatch()}
		ps[i].cmd.Stderr = ps[i].log
	}
	ready := make(chan struct{})
	var wg sync.WaitGroup
	for i, p := range ps {
		wg.Go(func() {
			<-ready
			if p.s, errs[i] = mcptest.Start(ctx, p.cmd, nil); errs[i] == nil {
				_, errs[i] = p.log.wait(ctx, p.s.Exited(), logHolding, logStandby)
			}
		})
	}
	close(ready)
	wg.Wait()
	for _, p := range ps {
		if p.s != nil {
			t.Cleanup(func() { p.s.Close() }) // the test checks Close when it matters
		}
	}
	for i, err := range errs {
		if err != nil {
			t.Fatalf("proxy %d of %d started at once: %v\nstderr:\n%s", i, n, err, stderrTail(ps[i].log.String()))
		}
	}
	return ps
}

// holderOf returns the indexes of the proxies that logged holding the
// ledger.
func holderOf(ps []*stdioProxy) []int {
	var holders []int
	for i, p := range ps {
		if strings.Contains(p.log.String(), logHolding) {
			holders = append(holders, i)
		}
	}
	return holders
}

// firstToLog waits until one of ps logs a line containing sub and
// returns its index in ps.
func firstToLog(ctx context.Context, ps []*stdioProxy, sub string) (int, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	found := make(chan int, len(ps))
	for i, p := range ps {
		go func() {
			if _, err := p.log.wait(ctx, p.s.Exited(), sub); err == nil {
				found <- i
			}
		}()
	}
	select {
	case i := <-found:
		return i, nil
	case <-ctx.Done():
		return -1, fmt.Errorf("no line %q: %w", sub, ctx.Err())
	}
}

// stopAll closes the proxies' sessions at once and checks that each exits
// 0 with no data race.
func stopAll(t *testing.T, ps []*stdioProxy) {
	t.Helper()
	errs := make([]error, len(ps))
	var wg sync.WaitGroup
	for i, p := range ps {
		wg.Go(func() { errs[i] = p.s.Close() })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("stopping proxy %d: %v\nstderr:\n%s", i, err, stderrTail(ps[i].log.String()))
		}
	}
}

// denyWhile calls transfer through c, which the gate denies, as long as
// more(the number of denies so far) is true, and returns the receipt names
// the denies gave, in order. It stops at the first answer that is not such
// a deny and returns its error.
func denyWhile(ctx context.Context, c *mcp.ClientSession, more func(n int) bool) ([]string, error) {
	var names []string
	for n := 0; more(n); n++ {
		_, err := c.CallTool(ctx, &mcp.CallToolParams{Name: "transfer",
			Arguments: map[string]any{"from_account": "acc_checking", "to_account": "acc_mallory", "amount_cents": n + 1}})
		var we *jsonrpc.Error
		var data struct{ Rule, Receipt string }
		if !errors.As(err, &we) || json.Unmarshal(we.Data, &data) != nil || data.Rule != "name.write_word" {
			return names, fmt.Errorf("transfer %d: %v; want a deny with rule name.write_word", n+1, err)
		}
		names = append(names, data.Receipt)
	}
	return names, nil
}

// untilThenMore is denyWhile's more: true until done is closed, then for
// extra more denies.
func untilThenMore(done <-chan struct{}, extra int) func(int) bool {
	last := -1
	return func(n int) bool {
		if last < 0 {
			select {
			case <-done:
				last = n + extra
			default:
				return true
			}
		}
		return n < last
	}
}

// checkAnswered checks that the receipts directory dir holds exactly the
// receipts seq 1..n, and that the receipt names the agents were answered
// with (one list per agent) are distinct and each a receipt of dir.
func checkAnswered(t *testing.T, dir string, answered [][]string, n int) {
	t.Helper()
	names, err := mcptest.Receipts(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := make([]string, n)
	for i := range want {
		want[i] = receipt.FileName(uint64(i + 1))
	}
	if !slices.Equal(names, want) {
		t.Errorf("%s holds %d receipts (first %q, last %q); want exactly seq 1..%d", dir, len(names), first(names), last(names), n)
	}
	by := map[string]int{} // receipt name -> the agent answered with it
	for agent, got := range answered {
		for _, name := range got {
			if other, dup := by[name]; dup {
				t.Errorf("agents %d and %d were both answered with receipt %s", other, agent, name)
			}
			by[name] = agent
			if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
				t.Errorf("agent %d was answered with receipt %s: %v", agent, name, err)
			}
		}
	}
}

func first(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}

func last(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[len(s)-1]
}

// checkLedgerHolds checks that the ledger's entries are the receipts of
// the chains given (each the receipt files of one chain, seq 1..n), every
// receipt once and each chain in seq order, and nothing else.
func checkLedgerHolds(t *testing.T, entries [][]byte, chains ...[][]byte) {
	t.Helper()
	type at struct{ chain, seq int }
	where := map[string]at{}
	total := 0
	for c, files := range chains {
		total += len(files)
		for i, f := range files {
			where[string(f)] = at{c, i + 1}
		}
	}
	if len(entries) != total {
		t.Errorf("the embedded ledger holds %d entries; want the %d receipts", len(entries), total)
	}
	next := make([]int, len(chains)) // the seq last found, per chain
	for i, e := range entries {
		w, ok := where[string(e)]
		if !ok || w.seq != next[w.chain]+1 {
			t.Errorf("entry %d of the embedded ledger is not the next receipt of a chain (found: %v, chain %d seq %d, after seq %d)",
				i, ok, w.chain, w.seq, next[w.chain])
			return
		}
		next[w.chain] = w.seq
	}
}

// lineWatch is a program's stderr, kept so that a test can wait for a
// line.
type lineWatch struct {
	mu   sync.Mutex
	text strings.Builder
	more chan struct{} // closed at the next write
}

func newLineWatch() *lineWatch { return &lineWatch{more: make(chan struct{})} }

func (l *lineWatch) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.text.Write(p)
	close(l.more)
	l.more = make(chan struct{})
	return len(p), nil
}

func (l *lineWatch) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.text.String()
}

// wait waits until the text holds one of subs and returns it. It fails
// when ctx is done, or when exited is closed (the program has been
// reaped, so its stderr is all there) without one.
func (l *lineWatch) wait(ctx context.Context, exited <-chan struct{}, subs ...string) (string, error) {
	for gone := false; ; {
		l.mu.Lock()
		text, more := l.text.String(), l.more
		l.mu.Unlock()
		for _, sub := range subs {
			if strings.Contains(text, sub) {
				return sub, nil
			}
		}
		if gone {
			return "", fmt.Errorf("the program exited without logging any of %q", subs)
		}
		select {
		case <-more:
		case <-exited:
			gone = true
		case <-ctx.Done():
			return "", fmt.Errorf("waiting for any of %q: %w", subs, ctx.Err())
		}
	}
}

// stderrTail is the end of a program's stderr, for messages.
func stderrTail(s string) string {
	const max = 3000
	if len(s) > max {
		return "…" + s[len(s)-max:]
	}
	return s
}
