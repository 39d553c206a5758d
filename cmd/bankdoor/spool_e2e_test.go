package main_test

// End-to-end tests of the ledger behind the proxy, through the built
// binaries: the embedded default ledger, and a remote `bankdoor ledger
// serve` that is down when the proxy starts.

import (
	"bufio"
	"bytes"
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bankdoor/bankdoor/internal/agentkey"
	"github.com/bankdoor/bankdoor/internal/mcptest"
	"github.com/bankdoor/bankdoor/internal/tlstest"
	"github.com/bankdoor/bankdoor/ledger"
	"github.com/bankdoor/bankdoor/ledger/receipt"
	ledgerv1 "github.com/bankdoor/bankdoor/proto/gen/bankdoor/ledger/v1"
	"github.com/bankdoor/bankdoor/proto/gen/bankdoor/ledger/v1/ledgerv1connect"
)

// deny calls transfer, which the gate always denies, and checks that the
// answer names receipt seq.
func deny(t *testing.T, s *mcptest.Session, seq uint64) {
	t.Helper()
	ctx := testContext(t, 30*time.Second)
	_, err := s.Client().CallTool(ctx, &mcp.CallToolParams{Name: "transfer",
		Arguments: map[string]any{"from_account": "acc_checking", "to_account": "acc_mallory", "amount_cents": 5}})
	if want := "receipt " + receipt.FileName(seq); err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("transfer through the proxy: %v; want a deny naming %s\nstderr:\n%s", err, want, s.Stderr())
	}
}

// receiptFiles returns the receipt files 1..n of dir.
func receiptFiles(t *testing.T, dir string, n int) [][]byte {
	t.Helper()
	var files [][]byte
	for seq := 1; seq <= n; seq++ {
		b, err := os.ReadFile(filepath.Join(dir, receipt.FileName(uint64(seq))))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, b)
	}
	if _, err := os.Stat(filepath.Join(dir, receipt.FileName(uint64(n+1)))); err == nil {
		t.Fatalf("%s holds more than %d receipts", dir, n)
	}
	return files
}

func (w *world) keyID() string {
	w.t.Helper()
	pub, err := agentkey.LoadPublic(w.pub)
	if err != nil {
		w.t.Fatal(err)
	}
	return agentkey.KeyID(pub)
}

func TestE2EEmbeddedLedger(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	s := start(t, w.proxy(w.fixture()).Command(), nil)
	for seq := range uint64(3) {
		deny(t, s, seq+1)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("proxy: %v\n%s", err, s.Stderr())
	}
	for _, line := range strings.Split(s.Stderr(), "\n") {
		if strings.Contains(line, "ledger=") && (strings.Contains(line, "level=WARN") || strings.Contains(line, "level=ERROR")) {
			t.Errorf("the proxy logged a ledger problem with the embedded ledger: %s", line)
		}
	}

	// The ledger file is beside the receipts directory; its log key and
	// the verifier key are in the key directory.
	db := filepath.Join(w.receipts, ".ledger.db")
	signer, err := ledger.LoadSigner(filepath.Join(w.home, "ledger.key"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "bankdoor.local/embedded/" + w.keyID(); signer.Name() != want {
		t.Errorf("embedded ledger origin %q, want %q", signer.Name(), want)
	}
	if diff := cmp.Diff(receiptFiles(t, w.receipts, 3), w.embeddedEntries()); diff != "" {
		t.Errorf("the embedded ledger does not hold exactly receipts 1..3 in order (-want +got):\n%s", diff)
	}
	vkey := readLine(t, filepath.Join(w.home, "ledger.key.vkey"))
	v, err := ledger.LoadVerifier(vkey)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ledger.Fsck(context.Background(), db, v); err != nil {
		t.Errorf("ledger.Fsck: %v", err)
	}
	if code, out := w.verify(w.receipts); code != 0 {
		t.Errorf("bankdoor verify: exit %d\n%s", code, out)
	}

	// The embedded ledger file, served, verifies online.
	url := w.serveLedger(db, filepath.Join(w.home, "ledger.key"), signer.Name(), "")
	if code, out := w.verify(w.receipts, "--ledger", url, "--log-key", vkey); code != 0 || !strings.Contains(out, "3 receipts in the log "+signer.Name()) {
		t.Errorf("bankdoor verify --ledger: exit %d\n%s", code, out)
	}
}

// TestE2EEmbeddedLedgerAfterKill: a proxy killed with SIGKILL makes no
// final attempt; the next proxy started on the directory ships what is
// left, and nothing twice.
func TestE2EEmbeddedLedgerAfterKill(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	cmd := w.proxy(w.fixture()).Command()
	s, err := mcptest.Start(testContext(t, time.Minute), cmd, nil)
	if err != nil {
		t.Fatal(err)
	}
	for seq := range uint64(3) {
		deny(t, s, seq+1)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	s.Close() // reports the kill

	s = start(t, w.proxy(w.fixture()).Command(), nil)
	deny(t, s, 4)
	if err := s.Close(); err != nil {
		t.Fatalf("proxy: %v\n%s", err, s.Stderr())
	}
	if diff := cmp.Diff(receiptFiles(t, w.receipts, 4), w.embeddedEntries()); diff != "" {
		t.Errorf("the embedded ledger does not hold exactly receipts 1..4 in order (-want +got):\n%s", diff)
	}
}

// embeddedEntries opens the embedded ledger in the receipts directory,
// with the log key in the key directory, and returns all its entries.
func (w *world) embeddedEntries() [][]byte {
	w.t.Helper()
	signer, err := ledger.LoadSigner(filepath.Join(w.home, "ledger.key"))
	if err != nil {
		w.t.Fatal(err)
	}
	pub, err := agentkey.LoadPublic(w.pub)
	if err != nil {
		w.t.Fatal(err)
	}
	var keys ledger.AgentKeys
	keys.Enroll(pub)
	db := filepath.Join(w.receipts, ".ledger.db")
	l, err := ledger.Open(db, ledger.Options{Origin: signer.Name(), Signer: signer, Agents: &keys})
	if err != nil {
		w.t.Fatalf("open the embedded ledger after the proxy exited: %v", err)
	}
	defer l.Close()
	var entries [][]byte
	for uint64(len(entries)) < l.Size() {
		page, err := l.Entries(uint64(len(entries)), l.Size())
		if err != nil {
			w.t.Fatal(err)
		}
		entries = append(entries, page...)
	}
	return entries
}

func readLine(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// ledgerKey makes a log key with bankdoor ledger keygen and returns its
// file and verifier key.
func (w *world) ledgerKey(origin string) (file, vkey string) {
	w.t.Helper()
	file = filepath.Join(w.t.TempDir(), "log.key")
	w.bankdoor(0, "ledger", "keygen", "--out", file, "--origin", origin)
	return file, readLine(w.t, file+".vkey")
}

// agentsDir returns a directory enrolling the world's agent key.
func (w *world) agentsDir() string {
	w.t.Helper()
	dir := w.t.TempDir()
	b, err := os.ReadFile(w.pub)
	if err != nil {
		w.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "agent.pem"), b, 0o644); err != nil {
		w.t.Fatal(err)
	}
	return dir
}

// serveLedger starts bankdoor ledger serve on addr ("" for a free port)
// with more flags, stops it at the end of the test, and returns its URL
// once it listens.
func (w *world) serveLedger(db, logKey, origin, addr string, flags ...string) string {
	w.t.Helper()
	url, _ := w.startLedger(db, logKey, origin, addr, flags...)
	return url
}

// startLedger is serveLedger that also returns a function that stops the
// server (SIGINT) and waits for it to exit.
func (w *world) startLedger(db, logKey, origin, addr string, flags ...string) (string, func()) {
	w.t.Helper()
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	cmd := exec.Command(built.bankdoor, append([]string{"ledger", "serve", "--db", db, "--addr", addr,
		"--log-key", logKey, "--origin", origin, "--agents", w.agentsDir()}, flags...)...)
	cmd.Env = mcptest.Env("BANKDOOR_HOME=" + w.home)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		w.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		w.t.Fatal(err)
	}
	var log syncBuf
	urls := make(chan string, 1)
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		listening := regexp.MustCompile(`listening on (https?://\S+)`)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			log.write(sc.Text() + "\n")
			if m := listening.FindStringSubmatch(sc.Text()); m != nil {
				urls <- m[1]
			}
		}
	}()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cmd.Process.Signal(os.Interrupt)
			<-scanned // stderr is read to its end before Wait closes it
			done := make(chan struct{})
			go func() { cmd.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(20 * time.Second):
				cmd.Process.Kill()
				<-done
			}
		})
	}
	w.t.Cleanup(stop)
	select {
	case u := <-urls:
		return u, stop
	case <-time.After(30 * time.Second):
		w.t.Fatalf("bankdoor ledger serve did not say where it listens:\n%s", log.String())
		return "", nil
	}
}

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) write(str string) { s.mu.Lock(); s.b.WriteString(str); s.mu.Unlock() }
func (s *syncBuf) String() string   { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// waitHead waits until the ledger's head for keyID is seq.
func waitHead(t *testing.T, c ledgerv1connect.LedgerServiceClient, keyID string, seq uint64, stderr func() string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := c.GetAgentHead(context.Background(), connect.NewRequest(&ledgerv1.GetAgentHeadRequest{KeyId: keyID}))
		if err == nil && resp.Msg.GetSeq() == seq {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the ledger's head for key_id %s is %v (err %v), want seq %d\nproxy stderr:\n%s", keyID, resp, err, seq, stderr())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestE2ERemoteLedgerDownThenUp(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	const origin = "e2e.bankdoor.test/ledger"
	logKey, vkey := w.ledgerKey(origin)
	// The proxy is given the front's address; the ledger behind it
	// listens on a port of its own, a new one after its restart.
	ledger := newFront(t)
	url := ledger.url()

	// The ledger is down: denials still come back, with receipts.
	p := w.proxy(w.fixture())
	p.Flags = []string{"--ledger", url}
	s := start(t, p.Command(), nil)
	for seq := range uint64(3) {
		deny(t, s, seq+1)
	}

	// The ledger comes up; the spool drains into it.
	db := filepath.Join(t.TempDir(), "remote.db")
	got, stop := w.startLedger(db, logKey, origin, "")
	ledger.up(t, got)
	client := ledgerv1connect.NewLedgerServiceClient(http.DefaultClient, url)
	waitHead(t, client, w.keyID(), 3, s.Stderr)

	// The ledger restarts: denials go on meanwhile, and reach it after.
	ledger.down()
	stop()
	deny(t, s, 4)
	deny(t, s, 5)
	got, _ = w.startLedger(db, logKey, origin, "")
	ledger.up(t, got)
	waitHead(t, client, w.keyID(), 5, s.Stderr)
	deny(t, s, 6)
	if err := s.Close(); err != nil {
		t.Fatalf("proxy: %v\n%s", err, s.Stderr())
	}
	waitHead(t, client, w.keyID(), 6, s.Stderr)

	// Every receipt is in the log once, in order.
	resp, err := client.GetEntries(context.Background(), connect.NewRequest(&ledgerv1.GetEntriesRequest{Start: 0, Count: 0}))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(receiptFiles(t, w.receipts, 6), resp.Msg.GetEntries()); diff != "" {
		t.Errorf("the ledger does not hold exactly receipts 1..6 in order (-want +got):\n%s", diff)
	}

	// verify --ledger passes with the log's key, fails with another key
	// or against another ledger.
	code, out := w.verify(w.receipts, "--ledger", url, "--log-key", vkey)
	if code != 0 || !strings.Contains(out, "ok: 6 receipts in the log "+origin+", checkpoint size 6") {
		t.Errorf("bankdoor verify --ledger: exit %d\n%s", code, out)
	}
	_, otherVkey := w.ledgerKey(origin)
	if code, out := w.verify(w.receipts, "--ledger", url, "--log-key", otherVkey); code != 1 || !strings.Contains(out, "does not verify with the log key") {
		t.Errorf("bankdoor verify --ledger with another log key: exit %d, want 1\n%s", code, out)
	}
	code, out = w.verify(w.receipts, "--ledger", newFront(t).url(), "--log-key", vkey)
	if code != 1 || !strings.Contains(out, "ok: 6 receipts, seq 1..6") || !strings.Contains(out, "get the ledger's checkpoint") {
		t.Errorf("bankdoor verify against a ledger that is down: exit %d, want 1 after the offline checks\n%s", code, out)
	}
	otherURL := w.serveLedger(filepath.Join(t.TempDir(), "other.db"), logKey, origin, "")
	code, out = w.verify(w.receipts, "--ledger", otherURL, "--log-key", vkey)
	if code != 1 || !strings.Contains(out, "000001.json, 000002.json, 000003.json, 000004.json, 000005.json, 000006.json") {
		t.Errorf("bankdoor verify against another ledger: exit %d, want 1 naming every receipt\n%s", code, out)
	}

	// The newest receipt deleted (tail truncation): the chain still
	// verifies offline, but not against the ledger.
	if err := os.Remove(filepath.Join(w.receipts, receipt.FileName(6))); err != nil {
		t.Fatal(err)
	}
	if code, out := w.verify(w.receipts); code != 0 {
		t.Fatalf("bankdoor verify of the truncated directory, offline: exit %d\n%s", code, out)
	}
	code, out = w.verify(w.receipts, "--ledger", url, "--log-key", vkey)
	if code != 1 || !strings.Contains(out, "receipts seq 6..6 are missing from the directory") {
		t.Errorf("bankdoor verify --ledger of the truncated directory: exit %d, want 1 naming seq 6\n%s", code, out)
	}
}

// TestE2ERemoteLedgerRefusal: a ledger that does not enroll the agent
// refuses its receipts; the proxy says so once, and denials go on.
func TestE2ERemoteLedgerRefusal(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	const origin = "e2e.bankdoor.test/refusing"
	logKey, _ := w.ledgerKey(origin)
	stranger := newWorld(t) // the ledger enrolls this other agent only
	url := stranger.serveLedger(filepath.Join(t.TempDir(), "l.db"), logKey, origin, "")
	p := w.proxy(w.fixture())
	p.Flags = []string{"--ledger", url}
	s := start(t, p.Command(), nil)
	deny(t, s, 1)
	deny(t, s, 2)
	if err := s.Close(); err != nil {
		t.Fatalf("proxy: %v\n%s", err, s.Stderr())
	}
	stderr := s.Stderr()
	if n := strings.Count(stderr, "STOPPED"); n != 1 || !strings.Contains(stderr, "enroll the agent") {
		t.Errorf("proxy stderr reports the refusal %d times, want once, saying to enroll the agent:\n%s", n, stderr)
	}
	receiptFiles(t, w.receipts, 2)
}

// TestE2ERemoteLedgerTLSAndToken: a ledger served over TLS with a
// private CA, that wants a bearer token for every call.
func TestE2ERemoteLedgerTLSAndToken(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	const origin = "e2e.bankdoor.test/tls"
	logKey, vkey := w.ledgerKey(origin)
	dir := t.TempDir()
	tf := tlstest.NewCA(t, "bankdoor e2e ledger CA").WriteServer(t, dir, "127.0.0.1")
	const token = "e2e-bearer-token-0123456789abcdef"
	tokens := filepath.Join(dir, "tokens")
	if err := os.WriteFile(tokens, []byte("shipper "+token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	url := w.serveLedger(filepath.Join(dir, "l.db"), logKey, origin, "",
		"--tls-cert", tf.Cert, "--tls-key", tf.Key, "--token-file", tokens, "--auth-reads")
	if !strings.HasPrefix(url, "https://") {
		t.Fatalf("ledger URL %s, want https", url)
	}
	remote := []string{"--ledger", url, "--ledger-ca", tf.CA, "--ledger-token-env", "E2E_LEDGER_TOKEN"}

	p := w.proxy(w.fixture())
	p.Flags = remote
	cmd := p.Command()
	cmd.Env = append(cmd.Env, "E2E_LEDGER_TOKEN="+token)
	s := start(t, cmd, nil)
	deny(t, s, 1)
	deny(t, s, 2)
	if err := s.Close(); err != nil { // the final attempt ships what is left
		t.Fatalf("proxy: %v\n%s", err, s.Stderr())
	}
	if strings.Contains(s.Stderr(), token) {
		t.Errorf("the proxy wrote the bearer token to stderr:\n%s", s.Stderr())
	}

	verify := func(env string, extra ...string) (int, string) {
		t.Helper()
		cmd := exec.Command(built.bankdoor, append([]string{"verify", w.receipts, "--pub", w.pub, "--log-key", vkey}, extra...)...)
		cmd.Env = mcptest.Env("BANKDOOR_HOME="+w.home, env)
		out, _ := cmd.CombinedOutput()
		return cmd.ProcessState.ExitCode(), string(out)
	}
	if code, out := verify("E2E_LEDGER_TOKEN="+token, remote...); code != 0 || !strings.Contains(out, "ok: 2 receipts in the log "+origin) {
		t.Errorf("bankdoor verify over TLS with the token: exit %d\n%s", code, out)
	}
	if code, out := verify("E2E_LEDGER_TOKEN=wrong-token-0123456789", remote...); code != 1 || !strings.Contains(out, "unauthenticated") {
		t.Errorf("bankdoor verify with a wrong token: exit %d, want 1, unauthenticated\n%s", code, out)
	}
	if code, out := verify("E2E_LEDGER_TOKEN="+token, "--ledger", url, "--ledger-token-env", "E2E_LEDGER_TOKEN"); code != 1 || !strings.Contains(out, "certificate") {
		t.Errorf("bankdoor verify without --ledger-ca: exit %d, want 1 naming the certificate\n%s", code, out)
	}
}
