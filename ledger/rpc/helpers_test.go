package rpc_test

import (
	"crypto/ed25519"
	"crypto/sha256"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/transparency-dev/formats/log"
	"golang.org/x/mod/sumdb/note"

	"github.com/bankdoor/bankdoor/internal/agentchain/chaintest"
	"github.com/bankdoor/bankdoor/internal/scratchlog"
	"github.com/bankdoor/bankdoor/ledger"
	"github.com/bankdoor/bankdoor/ledger/rpc"
	ledgerv1 "github.com/bankdoor/bankdoor/proto/gen/bankdoor/ledger/v1"
	"github.com/bankdoor/bankdoor/proto/gen/bankdoor/ledger/v1/ledgerv1connect"
)

const testOrigin = "ledger.example/rpc-test"

// testLedger is a real Log in a bbolt file under t.TempDir(), served by
// an httptest server that speaks HTTP/1.1 and h2c.
type testLedger struct {
	t        testing.TB
	dir      string
	agents   string // the --agents directory
	db       string
	log      *ledger.Log
	svc      *rpc.Service
	srv      *httptest.Server
	verifier note.Verifier
	vkey     string // the log's verifier key
}

// newTestLedger starts a ledger with the agents enrolled and auth (nil:
// none). With tlsServer, the server speaks HTTPS (HTTP/1.1 and HTTP/2).
func newTestLedger(t testing.TB, auth *rpc.Auth, agents ...*agent) *testLedger {
	t.Helper()
	l := openTestLedger(t, agents...)
	l.srv = httptest.NewUnstartedServer(l.mux(auth))
	var p http.Protocols
	p.SetHTTP1(true)
	p.SetUnencryptedHTTP2(true)
	l.srv.Config.Protocols = &p
	l.srv.Start()
	t.Cleanup(l.srv.Close)
	return l
}

// openTestLedger opens the log and its service without a server.
func openTestLedger(t testing.TB, agents ...*agent) *testLedger {
	t.Helper()
	dir := t.TempDir()
	l := &testLedger{t: t, dir: dir, agents: filepath.Join(dir, "agents"), db: filepath.Join(dir, "ledger.db")}
	if err := os.Mkdir(l.agents, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, a := range agents {
		l.enroll(a)
	}
	dirAgents, err := rpc.LoadDirectory(l.agents)
	if err != nil {
		t.Fatal(err)
	}
	sl, err := scratchlog.Open(l.db, ledger.Options{Origin: testOrigin, Agents: dirAgents})
	if err != nil {
		t.Fatal(err)
	}
	l.log, l.verifier, l.vkey = sl.Log, sl.Verifier, sl.VKey
	t.Cleanup(func() {
		if err := l.log.Close(); err != nil {
			t.Error(err)
		}
	})
	l.svc = rpc.New(l.log, nil)
	return l
}

func (l *testLedger) mux(auth *rpc.Auth) *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle(l.svc.Handler(auth))
	mux.Handle("GET /healthz", l.svc.Health())
	return mux
}

// enroll writes a's public key into the agents directory.
func (l *testLedger) enroll(a *agent) {
	l.t.Helper()
	writePub(l.t, filepath.Join(l.agents, a.KeyID+".pem"), a.Public())
}

func writePub(t testing.TB, path string, pub ed25519.PublicKey) {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
}

// protocols are the two wire protocols every RPC test runs over.
var protocols = []struct {
	name   string
	client func(l *testLedger, opts ...connect.ClientOption) ledgerv1connect.LedgerServiceClient
}{
	{"connect-json-http1", (*testLedger).connectJSON},
	{"grpc-h2c", (*testLedger).grpc},
}

// connectJSON is a Connect-protocol client sending JSON over HTTP/1.1.
func (l *testLedger) connectJSON(opts ...connect.ClientOption) ledgerv1connect.LedgerServiceClient {
	c := &http.Client{Transport: &http.Transport{}}
	l.t.Cleanup(c.CloseIdleConnections)
	return ledgerv1connect.NewLedgerServiceClient(c, l.srv.URL, append([]connect.ClientOption{connect.WithProtoJSON()}, opts...)...)
}

// grpc is a gRPC client over HTTP/2 without TLS (h2c).
func (l *testLedger) grpc(opts ...connect.ClientOption) ledgerv1connect.LedgerServiceClient {
	var p http.Protocols
	p.SetUnencryptedHTTP2(true)
	c := &http.Client{Transport: &http.Transport{Protocols: &p}}
	l.t.Cleanup(c.CloseIdleConnections)
	return ledgerv1connect.NewLedgerServiceClient(c, l.srv.URL, append([]connect.ClientOption{connect.WithGRPC()}, opts...)...)
}

// checkpoint parses and verifies the log's checkpoint note.
func (l *testLedger) checkpoint(b []byte) *log.Checkpoint {
	l.t.Helper()
	cp, _, _, err := log.ParseCheckpoint(b, testOrigin, l.verifier)
	if err != nil {
		l.t.Fatalf("checkpoint does not verify: %v\n%s", err, b)
	}
	return cp
}

// agent signs a chain of real receipts (package agentchain), stamped
// from a fixed time.
type agent = chaintest.Agent

var receiptsStart = time.Date(2026, 12, 3, 8, 0, 0, 0, time.UTC)

func newAgent(t testing.TB) *agent { return chaintest.Generate(t, receiptsStart) }

// leafHash is the RFC 6962 leaf hash of a receipt file.
func leafHash(b []byte) []byte {
	h := sha256.New()
	h.Write([]byte{0})
	h.Write(b)
	return h.Sum(nil)
}

func appendReq(rs ...[]byte) *connect.Request[ledgerv1.AppendRequest] {
	return connect.NewRequest(&ledgerv1.AppendRequest{Receipts: rs})
}

// wantCode fails the test unless err is a Connect error with code whose
// message contains each of want.
func wantCode(t testing.TB, err error, code connect.Code, want ...string) {
	t.Helper()
	var ce *connect.Error
	if !errors.As(err, &ce) {
		t.Fatalf("err = %v, want a Connect error with code %v", err, code)
	}
	t.Logf("%v: %s", ce.Code(), ce.Message())
	if ce.Code() != code {
		t.Fatalf("code = %v (%s), want %v", ce.Code(), ce.Message(), code)
	}
	for _, w := range want {
		if !strings.Contains(ce.Message(), w) {
			t.Errorf("message %q does not say %q", ce.Message(), w)
		}
	}
}

// token returns the Token for secret, named shipper.
func token(t testing.TB, secret string) rpc.Token {
	t.Helper()
	tok, err := rpc.NewToken("shipper", secret)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}
