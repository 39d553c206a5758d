package main_test

import (
	"crypto/tls"
	"net/http"
	"testing"

	"connectrpc.com/connect"

	"github.com/bankdoor/bankdoor/internal/tlstest"
	ledgerv1 "github.com/bankdoor/bankdoor/proto/gen/bankdoor/ledger/v1"
	"github.com/bankdoor/bankdoor/proto/gen/bankdoor/ledger/v1/ledgerv1connect"
)

// TestLedgerServeMutualTLS: with --tls-cert, --tls-key and --client-ca
// the server speaks gRPC over HTTP/2 with TLS; a client certificate from
// the CA authenticates an Append, none is Unauthenticated, and reads stay
// open.
func TestLedgerServeMutualTLS(t *testing.T) {
	t.Parallel()
	w := newLedgerWorld(t)
	a := newChainAgent(t, w)
	ca := tlstest.NewCA(t, "ledger test CA")
	tf := ca.WriteServer(t, w.dir, "127.0.0.1")
	s := w.serve("--tls-cert", tf.Cert, "--tls-key", tf.Key, "--client-ca", tf.CA)
	pool := ca.Pool()
	client := func(certs ...tls.Certificate) ledgerv1connect.LedgerServiceClient {
		hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: certs}, ForceAttemptHTTP2: true}}
		t.Cleanup(hc.CloseIdleConnections)
		return ledgerv1connect.NewLedgerServiceClient(hc, s.url, connect.WithGRPC())
	}
	rs := a.receipts(t, 1)
	_, err := client().Append(t.Context(), appendRequest(rs...))
	if connectCode(err) != connect.CodeUnauthenticated {
		t.Fatalf("Append without a client certificate: %v, want unauthenticated", err)
	}
	if _, err := client().GetCheckpoint(t.Context(), connect.NewRequest(&ledgerv1.GetCheckpointRequest{})); err != nil {
		t.Fatalf("GetCheckpoint without a client certificate: %v", err)
	}
	if _, err := client(ca.Issue(t, "shipper")).Append(t.Context(), appendRequest(rs...)); err != nil {
		t.Fatalf("Append with a client certificate: %v", err)
	}
}
