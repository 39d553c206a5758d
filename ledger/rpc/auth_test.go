package rpc_test

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"connectrpc.com/connect"

	"github.com/bankdoor/bankdoor/internal/tlstest"
	"github.com/bankdoor/bankdoor/ledger/rpc"
	ledgerv1 "github.com/bankdoor/bankdoor/proto/gen/bankdoor/ledger/v1"
	"github.com/bankdoor/bankdoor/proto/gen/bankdoor/ledger/v1/ledgerv1connect"
)

const (
	goodToken  = "s3cr3t-token-for-the-shipper-0001"
	otherToken = "s3cr3t-token-for-the-shipper-0002"
)

func withToken[T any](req *connect.Request[T], header string) *connect.Request[T] {
	if header != "" {
		req.Header().Set("Authorization", header)
	}
	return req
}

// TestBearerTokens: Append needs one of the configured tokens; a missing
// or wrong token is Unauthenticated and stores nothing; reads stay open
// unless Reads is set.
func TestBearerTokens(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		header string
		reads  bool
		append connect.Code // 0: accepted
		read   connect.Code
		want   string
	}{
		{"no token", "", false, connect.CodeUnauthenticated, 0, "Append requires authentication; send \"Authorization: Bearer TOKEN\""},
		{"wrong token", "Bearer " + otherToken, false, connect.CodeUnauthenticated, 0, "bearer token is not accepted"},
		{"token prefix", "Bearer " + goodToken[:len(goodToken)-1], false, connect.CodeUnauthenticated, 0, "not accepted"},
		{"token with suffix", "Bearer " + goodToken + "x", false, connect.CodeUnauthenticated, 0, "not accepted"},
		{"basic scheme", "Basic " + goodToken, false, connect.CodeUnauthenticated, 0, "not accepted"},
		{"right token", "Bearer " + goodToken, false, 0, 0, ""},
		{"scheme is case-insensitive", "bearer " + goodToken, false, 0, 0, ""},
		{"reads need auth: none", "", true, connect.CodeUnauthenticated, connect.CodeUnauthenticated, "requires authentication"},
		{"reads need auth: right token", "Bearer " + goodToken, true, 0, 0, ""},
	}
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			for _, tc := range tests {
				t.Run(tc.name, func(t *testing.T) {
					a := newAgent(t)
					l := newTestLedger(t, &rpc.Auth{Tokens: []rpc.Token{token(t, goodToken)}, Reads: tc.reads}, a)
					c := p.client(l)
					_, err := c.Append(t.Context(), withToken(appendReq(a.Chain(t, 1)...), tc.header))
					checkAuth(t, err, tc.append, tc.want)
					if want := map[bool]uint64{true: 0, false: 1}[tc.append != 0]; l.log.Size() != want {
						t.Fatalf("log size %d after Append, want %d", l.log.Size(), want)
					}
					_, err = c.GetCheckpoint(t.Context(), withToken(connect.NewRequest(&ledgerv1.GetCheckpointRequest{}), tc.header))
					checkAuth(t, err, tc.read, tc.want)
					checkWatchAuth(t, c, tc.header, tc.read)
				})
			}
		})
	}
}

func checkAuth(t *testing.T, err error, code connect.Code, want string) {
	t.Helper()
	if code == 0 {
		if err != nil {
			t.Fatalf("refused: %v", err)
		}
		return
	}
	wantCode(t, err, code, want)
}

// checkWatchAuth: the streaming call is checked like the unary ones.
func checkWatchAuth(t *testing.T, c ledgerv1connect.LedgerServiceClient, header string, code connect.Code) {
	t.Helper()
	stream, err := c.WatchCheckpoints(t.Context(), withToken(connect.NewRequest(&ledgerv1.WatchCheckpointsRequest{}), header))
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	got := stream.Receive()
	if code == 0 && !got {
		t.Fatalf("watch refused: %v", stream.Err())
	}
	if code != 0 {
		if got {
			t.Fatalf("watch sent a checkpoint to an unauthenticated caller")
		}
		wantCode(t, stream.Err(), code)
	}
}

// pki is a throwaway CA with a server and a client certificate, and a
// client certificate from another CA.
type pki struct {
	pool           *x509.CertPool
	server, client tls.Certificate
	rogue          tls.Certificate
}

func newPKI(t *testing.T) *pki {
	ca, rogue := tlstest.NewCA(t, "test CA"), tlstest.NewCA(t, "rogue CA")
	return &pki{pool: ca.Pool(), server: ca.Issue(t, "127.0.0.1"), client: ca.Issue(t, "shipper-1"), rogue: rogue.Issue(t, "shipper-1")}
}

// TestMutualTLS: with ClientCerts, a client certificate the server's CA
// issued authenticates an Append over gRPC and Connect (HTTP/2 over TLS);
// no certificate is Unauthenticated; a certificate from another CA fails
// the handshake.
func TestMutualTLS(t *testing.T) {
	t.Parallel()
	pk := newPKI(t)
	a := newAgent(t)
	l := openTestLedger(t, a)
	l.srv = httptest.NewUnstartedServer(l.mux(&rpc.Auth{ClientCerts: true}))
	l.srv.TLS = &tls.Config{Certificates: []tls.Certificate{pk.server}, ClientCAs: pk.pool, ClientAuth: tls.VerifyClientCertIfGiven}
	l.srv.EnableHTTP2 = true
	l.srv.StartTLS()
	t.Cleanup(l.srv.Close)
	client := func(cert *tls.Certificate, opts ...connect.ClientOption) ledgerv1connect.LedgerServiceClient {
		cfg := &tls.Config{RootCAs: pk.pool}
		if cert != nil {
			cfg.Certificates = []tls.Certificate{*cert}
		}
		hc := &http.Client{Transport: &http.Transport{TLSClientConfig: cfg, ForceAttemptHTTP2: true}}
		t.Cleanup(hc.CloseIdleConnections)
		return ledgerv1connect.NewLedgerServiceClient(hc, l.srv.URL, opts...)
	}
	for _, proto := range []struct {
		name string
		opts []connect.ClientOption
	}{{"grpc-tls", []connect.ClientOption{connect.WithGRPC()}}, {"connect-proto-tls", nil}} {
		t.Run(proto.name, func(t *testing.T) {
			_, err := client(nil, proto.opts...).Append(t.Context(), appendReq(a.Sign(t, a.Seq+1, a.Prev)))
			wantCode(t, err, connect.CodeUnauthenticated, "present a TLS client certificate issued by a CA this ledger trusts")
			if _, err := client(nil, proto.opts...).GetCheckpoint(t.Context(), connect.NewRequest(&ledgerv1.GetCheckpointRequest{})); err != nil {
				t.Fatalf("GetCheckpoint without a client certificate: %v", err)
			}
			_, err = client(&pk.rogue, proto.opts...).Append(t.Context(), appendReq(a.Sign(t, a.Seq+1, a.Prev)))
			if err == nil || !strings.Contains(err.Error(), "certificate") {
				t.Fatalf("Append with a rogue CA's certificate: %v, want a TLS handshake failure", err)
			}
			resp, err := client(&pk.client, proto.opts...).Append(t.Context(), appendReq(a.Chain(t, 1)...))
			if err != nil {
				t.Fatalf("Append with a good client certificate: %v", err)
			}
			if resp.Msg.Indexes[0] != a.Seq-1 {
				t.Fatalf("index %d, want %d", resp.Msg.Indexes[0], a.Seq-1)
			}
		})
	}
	if l.log.Size() != 2 {
		t.Fatalf("log size %d, want 2: only the authenticated appends", l.log.Size())
	}
}

func TestLoadTokens(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, content string
		perm          os.FileMode
		n             int
		err           string
	}{
		{"two tokens", "# shipper tokens\nshipper " + goodToken + "\n\n\tanchor\t" + otherToken + "\r\n", 0o600, 2, ""},
		{"base64 with padding", "auditor YWJjZGVmZ2hpamtsbW5vcHFyc3R1dnd4eXo=\n", 0o600, 1, ""},
		{"short", "shipper short\n", 0o600, 0, "line 1: name shipper: token is 5 characters, want at least 32"},
		{"16 characters", "shipper 0123456789abcdef\n", 0o600, 0, "line 1: name shipper: token is 16 characters, want at least 32"},
		{"no name", goodToken + "\n", 0o600, 0, "line 1: want \"NAME TOKEN\", got 1 fields"},
		{"space inside", "shipper " + goodToken + " x\n", 0o600, 0, "line 1: want \"NAME TOKEN\", got 3 fields"},
		{"comma inside", "shipper " + goodToken + ",\n", 0o600, 0, "line 1: name shipper: token holds ',' at column 34"},
		{"bad name", "Shipper " + goodToken + "\n", 0o600, 0, "line 1: name \"Shipper\""},
		{"bad character late", "# c\nshipper " + goodToken + "\nanchor " + goodToken + "é\n", 0o600, 0, "line 3"},
		{"token twice", "shipper " + goodToken + "\nanchor " + goodToken + "\n", 0o600, 0, "line 2: name anchor: this token is already given"},
		{"only comments", "# none\n\n", 0o600, 0, "holds no tokens"},
		{"world readable", "shipper " + goodToken + "\n", 0o644, 0, "run chmod 600"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.perm&0o077 != 0 && runtime.GOOS == "windows" {
				t.Skip("no Unix modes")
			}
			path := filepath.Join(t.TempDir(), "tokens")
			if err := os.WriteFile(path, []byte(tc.content), tc.perm); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(path, tc.perm); err != nil { // past the umask
				t.Fatal(err)
			}
			got, err := rpc.LoadTokens(path)
			if tc.err == "" {
				if err != nil || len(got) != tc.n {
					t.Fatalf("LoadTokens = %d tokens, %v; want %d", len(got), err, tc.n)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), path) {
				t.Fatalf("LoadTokens error %v, want one naming %s and saying %q", err, path, tc.err)
			}
		})
	}
	if _, err := rpc.LoadTokens(filepath.Join(t.TempDir(), "missing")); err == nil || !strings.Contains(err.Error(), "token file") {
		t.Fatalf("LoadTokens(missing) = %v", err)
	}
}

// TestAuthBeforeBody: a call without credentials is refused before its
// body is read: an unauthenticated Append over the size limit is
// Unauthenticated, not ResourceExhausted, and a request in no RPC
// protocol gets a plain 401.
func TestAuthBeforeBody(t *testing.T) {
	t.Parallel()
	a := newAgent(t)
	l := newTestLedger(t, &rpc.Auth{Tokens: []rpc.Token{token(t, goodToken)}}, a)
	big := make([][]byte, rpc.MaxRequestBytes/(16<<10)+1)
	for i := range big {
		big[i] = make([]byte, 16<<10)
	}
	_, err := l.grpc().Append(t.Context(), appendReq(big...))
	wantCode(t, err, connect.CodeUnauthenticated, "Append requires authentication")

	resp, err := http.Post(l.srv.URL+"/bankdoor.ledger.v1.LedgerService/Append", "text/plain", strings.NewReader("hello"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("plain POST to Append: %s, want 401", resp.Status)
	}

	// The check and the router see the same path: an escaped spelling of
	// Append is still Append.
	body := `{"receipts":["` + base64.StdEncoding.EncodeToString(a.Chain(t, 1)[0]) + `"]}`
	resp, err = http.Post(l.srv.URL+"/bankdoor.ledger.v1.LedgerService/%41ppend", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || l.log.Size() != 0 {
		t.Fatalf("POST to .../%%41ppend: %s, log size %d; want 401 and 0", resp.Status, l.log.Size())
	}
}

// TestReadRequestLimit: a read request is capped far below an Append.
func TestReadRequestLimit(t *testing.T) {
	t.Parallel()
	l := newTestLedger(t, nil)
	req := &ledgerv1.GetInclusionProofRequest{Leaf: &ledgerv1.GetInclusionProofRequest_LeafHash{LeafHash: make([]byte, rpc.MaxReadRequestBytes)}}
	for _, p := range protocols {
		_, err := p.client(l).GetInclusionProof(t.Context(), connect.NewRequest(req))
		wantCode(t, err, connect.CodeResourceExhausted)
	}
}
