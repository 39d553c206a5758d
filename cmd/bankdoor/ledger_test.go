package main_test

// Tests of bankdoor ledger serve and fsck through the built binary: a
// real server process on a real bbolt file (or PostgreSQL database, see
// ledger_postgres_test.go), killed and restarted.

import (
	"bufio"
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"io"
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

	"github.com/bankdoor/bankdoor/internal/agentkey"
	"github.com/bankdoor/bankdoor/internal/mcptest"
	"github.com/bankdoor/bankdoor/ledger/receipt"
	ledgerv1 "github.com/bankdoor/bankdoor/proto/gen/bankdoor/ledger/v1"
	"github.com/bankdoor/bankdoor/proto/gen/bankdoor/ledger/v1/ledgerv1connect"
)

const ledgerOrigin = "ledger.example/e2e"

// ledgerWorld is one test's log key, agents directory and ledger file.
type ledgerWorld struct {
	t      *testing.T
	dir    string
	key    string   // --log-key
	agents string   // --agents
	db     string   // --db
	dbArgs []string // flags after --db: a PostgreSQL database's password
	env    []string // more environment for serve, e.g. OTEL_* settings
}

func newLedgerWorld(t *testing.T) *ledgerWorld {
	t.Helper()
	dir := t.TempDir()
	w := &ledgerWorld{t: t, dir: dir, key: filepath.Join(dir, "log.key"), agents: filepath.Join(dir, "agents"), db: filepath.Join(dir, "ledger.db")}
	if err := os.Mkdir(w.agents, 0o755); err != nil {
		t.Fatal(err)
	}
	if code, out := runBankdoor(t, dir, "ledger", "keygen", "--out", w.key, "--origin", ledgerOrigin); code != 0 {
		t.Fatalf("bankdoor ledger keygen: exit %d\n%s", code, out)
	}
	return w
}

// logKey returns the verifier key of the log key, from its .vkey file.
func (w *ledgerWorld) logKey() string {
	w.t.Helper()
	b, err := os.ReadFile(w.key + ".vkey")
	if err != nil {
		w.t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// fsck runs bankdoor ledger fsck and fails the test unless it exits 0.
func (w *ledgerWorld) fsck() string {
	w.t.Helper()
	code, out := runBankdoor(w.t, w.dir, append([]string{"ledger", "fsck", "--db", w.db, "--log-key", w.logKey()}, w.dbArgs...)...)
	if code != 0 {
		w.t.Fatalf("bankdoor ledger fsck: exit %d\n%s", code, out)
	}
	return out
}

// ledgerServer is a running bankdoor ledger serve process.
type ledgerServer struct {
	t      *testing.T
	cmd    *exec.Cmd
	url    string
	mu     sync.Mutex
	stderr bytes.Buffer
	exited chan struct{}
}

var listening = regexp.MustCompile(`^bankdoor: listening on (https?://\S+)$`)

// serve starts bankdoor ledger serve on a free port and waits until it
// listens. The process is killed at the end of the test if still running.
func (w *ledgerWorld) serve(extra ...string) *ledgerServer {
	w.t.Helper()
	args := append([]string{"ledger", "serve", "--db", w.db}, w.dbArgs...)
	args = append(append(args, "--addr", "127.0.0.1:0", "--log-key", w.key, "--origin", ledgerOrigin, "--agents", w.agents), extra...)
	s := &ledgerServer{t: w.t, cmd: exec.Command(built.bankdoor, args...), exited: make(chan struct{})}
	s.cmd.Env = mcptest.Env(w.env...)
	pipe, err := s.cmd.StderrPipe()
	if err != nil {
		w.t.Fatal(err)
	}
	if err := s.cmd.Start(); err != nil {
		w.t.Fatal(err)
	}
	w.t.Cleanup(func() {
		s.cmd.Process.Kill()
		<-s.exited
	})
	addr := make(chan string, 1)
	go s.readStderr(pipe, addr)
	select {
	case s.url = <-addr:
	case <-s.exited:
		w.t.Fatalf("bankdoor ledger serve exited before listening:\n%s", s.output())
	case <-time.After(time.Minute):
		w.t.Fatalf("bankdoor ledger serve did not listen within a minute:\n%s", s.output())
	}
	return s
}

func (s *ledgerServer) readStderr(r io.Reader, addr chan<- string) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		s.mu.Lock()
		s.stderr.WriteString(line + "\n")
		s.mu.Unlock()
		if m := listening.FindStringSubmatch(line); m != nil {
			addr <- m[1]
		}
	}
	s.cmd.Wait()
	close(s.exited)
}

func (s *ledgerServer) output() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stderr.String()
}

// stop sends sig and waits for the process to exit; it returns the exit
// code (-1 if killed by a signal).
func (s *ledgerServer) stop(sig os.Signal) int {
	s.t.Helper()
	if err := s.cmd.Process.Signal(sig); err != nil {
		s.t.Fatal(err)
	}
	select {
	case <-s.exited:
	case <-time.After(time.Minute):
		s.t.Fatalf("bankdoor ledger serve did not exit within a minute of %v:\n%s", sig, s.output())
	}
	return s.cmd.ProcessState.ExitCode()
}

// client returns a gRPC (h2c) client of the server.
func (s *ledgerServer) client() ledgerv1connect.LedgerServiceClient {
	var p http.Protocols
	p.SetUnencryptedHTTP2(true)
	hc := &http.Client{Transport: &http.Transport{Protocols: &p}}
	s.t.Cleanup(hc.CloseIdleConnections)
	return ledgerv1connect.NewLedgerServiceClient(hc, s.url, connect.WithGRPC())
}

// jsonClient returns a Connect-protocol JSON client over HTTP/1.1.
func (s *ledgerServer) jsonClient() ledgerv1connect.LedgerServiceClient {
	hc := &http.Client{Transport: &http.Transport{}}
	s.t.Cleanup(hc.CloseIdleConnections)
	return ledgerv1connect.NewLedgerServiceClient(hc, s.url, connect.WithProtoJSON())
}

// chainAgent signs a chain of receipts with a fresh key.
type chainAgent struct {
	priv  ed25519.PrivateKey
	keyID string
}

// newChainAgent makes an agent and, if w is not nil, enrolls it.
func newChainAgent(t *testing.T, w *ledgerWorld) *chainAgent {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	a := &chainAgent{priv: priv, keyID: agentkey.KeyID(priv.Public().(ed25519.PublicKey))}
	if w != nil {
		w.enroll(a)
	}
	return a
}

func (w *ledgerWorld) enroll(a *chainAgent) {
	w.t.Helper()
	der, err := x509.MarshalPKIXPublicKey(a.priv.Public())
	if err != nil {
		w.t.Fatal(err)
	}
	p := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
	if err := os.WriteFile(filepath.Join(w.agents, a.keyID+".pem"), p, 0o644); err != nil {
		w.t.Fatal(err)
	}
}

// receipts returns the agent's first n receipts.
func (a *chainAgent) receipts(t *testing.T, n int) [][]byte {
	t.Helper()
	out := make([][]byte, n)
	prev := receipt.FirstPrev
	for i := range out {
		r := &receipt.Receipt{
			Seq: uint64(i + 1), Time: time.Date(2026, 12, 3, 9, 0, i, 0, time.UTC),
			Decision: receipt.Deny, Server: "bank", Tool: "pay_bill", Rule: "name.write_word",
			Reason:     `tool name token "pay" is a payment/write word`,
			ArgsSHA256: strings.Repeat("0", 64), PolicyID: "bankdoor-fixture-readonly",
			PolicySHA256: strings.Repeat("0", 64), Prev: prev,
		}
		b, err := receipt.Sign(r, a.priv)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = b
		sum := receipt.Hash(b)
		prev = hex.EncodeToString(sum[:])
	}
	return out
}

func appendRequest(rs ...[]byte) *connect.Request[ledgerv1.AppendRequest] {
	return connect.NewRequest(&ledgerv1.AppendRequest{Receipts: rs})
}

func connectCode(err error) connect.Code {
	var ce *connect.Error
	if errors.As(err, &ce) {
		return ce.Code()
	}
	return 0
}
