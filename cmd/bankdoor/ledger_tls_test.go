package main_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"connectrpc.com/connect"

	ledgerv1 "github.com/bankdoor/bankdoor/proto/gen/bankdoor/ledger/v1"
	"github.com/bankdoor/bankdoor/proto/gen/bankdoor/ledger/v1/ledgerv1connect"
)

// TestLedgerServeMutualTLS: with --tls-cert, --tls-key and --client-ca
// the server speaks gRPC over HTTP/2 with TLS; a client certificate from
// the CA authenticates an Append, none is Unauthenticated, and reads stay
// open.
func TestLedgerServeMutualTLS(t *testing.T) {
	w := newLedgerWorld(t)
	a := newChainAgent(t, w)
	ca, caKey := makeCert(t, "ledger test CA", nil, nil)
	serverCert, serverKey := makeCert(t, "127.0.0.1", ca, caKey)
	clientCert, clientKey := makeCert(t, "shipper", ca, caKey)
	files := map[string][]byte{
		"ca.pem":   pemCert(ca),
		"cert.pem": pemCert(serverCert),
		"key.pem":  pemKey(t, serverKey),
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(w.dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	s := w.serve("--tls-cert", filepath.Join(w.dir, "cert.pem"), "--tls-key", filepath.Join(w.dir, "key.pem"),
		"--client-ca", filepath.Join(w.dir, "ca.pem"))
	pool := x509.NewCertPool()
	pool.AddCert(ca)
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
	withCert := tls.Certificate{Certificate: [][]byte{clientCert.Raw}, PrivateKey: clientKey}
	if _, err := client(withCert).Append(t.Context(), appendRequest(rs...)); err != nil {
		t.Fatalf("Append with a client certificate: %v", err)
	}
}

func makeCert(t *testing.T, cn string, parent *x509.Certificate, parentKey *ecdsa.PrivateKey) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(time.Now().UnixNano()),
		Subject:               pkix.Name{CommonName: cn},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		BasicConstraintsValid: true,
		IsCA:                  parent == nil,
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		t.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return c, key
}

func pemCert(c *x509.Certificate) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
}

func pemKey(t *testing.T, k *ecdsa.PrivateKey) []byte {
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
}
