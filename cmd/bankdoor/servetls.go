package main

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
)

// fileFlag is a file named by a flag, so that errors name the flag.
type fileFlag struct{ name, path string }

// loadServerTLS returns the TLS configuration of a server (TLS 1.2 or
// later) from its certificate chain and key files, or nil if neither is
// given (plain HTTP). With clientCA, client certificates that the CA
// certificates in that file issue are requested and verified when given
// (tls.VerifyClientCertIfGiven): whether one is needed is up to the
// server's authentication, so that callers with bearer tokens still
// connect. A certificate given and not verified fails the handshake.
func loadServerTLS(cert, key, clientCA fileFlag) (*tls.Config, error) {
	if (cert.path == "") != (key.path == "") {
		return nil, hint(fmt.Errorf("--%s and --%s go together", cert.name, key.name), "pass both or neither")
	}
	if cert.path == "" {
		if clientCA.path != "" {
			return nil, hint(fmt.Errorf("--%s needs TLS", clientCA.name), "pass --%s and --%s too", cert.name, key.name)
		}
		return nil, nil
	}
	pair, err := tls.LoadX509KeyPair(cert.path, key.path)
	if err != nil {
		return nil, fmt.Errorf("--%s, --%s: %w", cert.name, key.name, err)
	}
	c := &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{pair}}
	if clientCA.path == "" {
		return c, nil
	}
	pem, err := os.ReadFile(clientCA.path)
	if err != nil {
		return nil, fmt.Errorf("--%s: %w", clientCA.name, err)
	}
	c.ClientCAs = x509.NewCertPool()
	if !c.ClientCAs.AppendCertsFromPEM(pem) {
		return nil, hint(fmt.Errorf("--%s: %s holds no PEM CERTIFICATE block", clientCA.name, clientCA.path), "give the CA certificates that issue the client certificates")
	}
	c.ClientAuth = tls.VerifyClientCertIfGiven
	return c, nil
}
