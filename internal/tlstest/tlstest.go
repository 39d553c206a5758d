// Package tlstest makes throwaway X.509 certificates for tests of TLS and
// mutual TLS: a CA, and leaves it issues for 127.0.0.1 that serve as both
// server and client certificates. Keys are ECDSA P-256, certificates are
// valid from an hour ago to an hour ahead, and PEM returns the files a
// server's --tls-cert, --tls-key and --client-ca flags read (CERTIFICATE
// and PKCS #8 PRIVATE KEY blocks). Nothing here is fit for production.
package tlstest

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
	"os"
	"path/filepath"
	"testing"
	"time"
)

// CA is a self-signed certificate authority.
type CA struct {
	Cert *x509.Certificate
	Key  *ecdsa.PrivateKey
}

// NewCA makes a CA whose common name is cn.
func NewCA(tb testing.TB, cn string) *CA {
	tb.Helper()
	cert, key := newCert(tb, cn, nil, nil, nil)
	return &CA{Cert: cert, Key: key}
}

// Pool returns a pool holding only the CA's certificate.
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.Cert)
	return p
}

// Issue returns a leaf certificate for cn and the IP address 127.0.0.1,
// signed by the CA, usable by a server and a client alike.
func (ca *CA) Issue(tb testing.TB, cn string) tls.Certificate {
	tb.Helper()
	return ca.IssueEdited(tb, cn, nil)
}

// IssueEdited is Issue with edit applied to the certificate's template
// before it is signed (if edit is not nil), to make one that should be
// refused: expired, or not for client authentication, say.
func (ca *CA) IssueEdited(tb testing.TB, cn string, edit func(*x509.Certificate)) tls.Certificate {
	tb.Helper()
	cert, key := newCert(tb, cn, ca.Cert, ca.Key, edit)
	return tls.Certificate{Certificate: [][]byte{cert.Raw}, PrivateKey: key, Leaf: cert}
}

// PEM returns the leaf certificate of c and its private key, PEM-encoded.
func PEM(tb testing.TB, c tls.Certificate) (cert, key []byte) {
	tb.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(c.PrivateKey)
	if err != nil {
		tb.Fatal(err)
	}
	return CertPEM(c.Leaf), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
}

// Files are the PEM files of a server: its certificate and key, and the
// certificate of the CA that issued it, for its clients to trust.
type Files struct {
	Cert, Key, CA string
}

// WriteServer issues a leaf for cn and writes it, its key and the CA's
// certificate to dir as cert.pem, key.pem and ca.pem (mode 0600).
func (ca *CA) WriteServer(tb testing.TB, dir, cn string) Files {
	tb.Helper()
	cert, key := PEM(tb, ca.Issue(tb, cn))
	f := Files{Cert: filepath.Join(dir, "cert.pem"), Key: filepath.Join(dir, "key.pem"), CA: filepath.Join(dir, "ca.pem")}
	for path, b := range map[string][]byte{f.Cert: cert, f.Key: key, f.CA: CertPEM(ca.Cert)} {
		if err := os.WriteFile(path, b, 0o600); err != nil {
			tb.Fatal(err)
		}
	}
	return f
}

// CertPEM returns c as a PEM CERTIFICATE block.
func CertPEM(c *x509.Certificate) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
}

// newCert makes a certificate for cn signed by parent, or a self-signed
// CA certificate if parent is nil; edit, if not nil, changes the template.
func newCert(tb testing.TB, cn string, parent *x509.Certificate, parentKey *ecdsa.PrivateKey, edit func(*x509.Certificate)) (*x509.Certificate, *ecdsa.PrivateKey) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		tb.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: cn},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		BasicConstraintsValid: true,
		IsCA:                  parent == nil,
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	if edit != nil {
		edit(tmpl)
	}
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		tb.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		tb.Fatal(err)
	}
	return c, key
}
