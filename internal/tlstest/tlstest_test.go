package tlstest_test

import (
	"crypto/tls"
	"crypto/x509"
	"testing"
	"time"

	"github.com/bankdoor/bankdoor/internal/tlstest"
)

// TestIssue: a leaf verifies against its CA for 127.0.0.1 as a server and
// as a client, not against another CA, and its PEM files load as a key pair.
func TestIssue(t *testing.T) {
	ca, other := tlstest.NewCA(t, "test CA"), tlstest.NewCA(t, "other CA")
	leaf := ca.Issue(t, "shipper")
	for _, usage := range []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth} {
		opts := x509.VerifyOptions{Roots: ca.Pool(), DNSName: "127.0.0.1", KeyUsages: []x509.ExtKeyUsage{usage}}
		if _, err := leaf.Leaf.Verify(opts); err != nil {
			t.Errorf("leaf does not verify for usage %v: %v", usage, err)
		}
		opts.Roots = other.Pool()
		if _, err := leaf.Leaf.Verify(opts); err == nil {
			t.Errorf("leaf verifies against another CA for usage %v", usage)
		}
	}
	cert, key := tlstest.PEM(t, leaf)
	pair, err := tls.X509KeyPair(cert, key)
	if err != nil {
		t.Fatal(err)
	}
	if pair.Leaf.Subject.CommonName != "shipper" {
		t.Errorf("PEM pair is for %q, want shipper", pair.Leaf.Subject.CommonName)
	}
	if _, err := x509.ParseCertificate(leaf.Certificate[0]); err != nil || leaf.Leaf.IsCA {
		t.Errorf("leaf parse error %v, IsCA %v; want a non-CA certificate", err, leaf.Leaf.IsCA)
	}
}

// TestIssueEdited: the edit reaches the signed certificate.
func TestIssueEdited(t *testing.T) {
	ca := tlstest.NewCA(t, "test CA")
	leaf := ca.IssueEdited(t, "old", func(c *x509.Certificate) { c.NotAfter = c.NotBefore.Add(time.Minute) })
	if !leaf.Leaf.NotAfter.Before(time.Now()) {
		t.Errorf("edited leaf is valid until %v, want expired", leaf.Leaf.NotAfter)
	}
	opts := x509.VerifyOptions{Roots: ca.Pool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	if _, err := leaf.Leaf.Verify(opts); err == nil {
		t.Errorf("an expired leaf verifies")
	}
}
