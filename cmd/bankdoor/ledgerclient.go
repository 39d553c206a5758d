package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"time"

	"connectrpc.com/connect"

	"github.com/bankdoor/bankdoor/proto/gen/bankdoor/ledger/v1/ledgerv1connect"
)

// Timeouts of the connection to a remote ledger. Each call is also bounded
// by its caller's context.
const (
	ledgerDialTimeout   = 5 * time.Second
	ledgerHeaderTimeout = 15 * time.Second
	ledgerCallTimeout   = 30 * time.Second
	ledgerMaxResponse   = 64 << 20 // GetEntries: 1000 receipts of at most 16 KiB, with room
)

// remoteFlags name a remote ledger: its URL, the CA that issued its
// certificate, and the environment variable holding a bearer token (so
// the token is not in the process list).
type remoteFlags struct {
	url, ca, tokenEnv string
}

func (f *remoteFlags) register(fs *flag.FlagSet, urlHelp string) {
	fs.StringVar(&f.url, "ledger", "", urlHelp)
	fs.StringVar(&f.ca, "ledger-ca", "", "PEM CA certificates that issued the --ledger server's certificate (a private CA); default: the system's")
	fs.StringVar(&f.tokenEnv, "ledger-token-env", "", "name of an environment variable holding a bearer token for --ledger")
}

// endpoint returns the ledger's URL (f.url), an HTTP client with its TLS
// settings (--ledger-ca) and the bearer token of --ledger-token-env, ""
// without it.
func (f *remoteFlags) endpoint() (u *url.URL, hc *http.Client, token string, err error) {
	if u, err = parseLedgerURL(f.url); err != nil {
		return nil, nil, "", err
	}
	tlsConf, err := f.tlsConfig(u)
	if err != nil {
		return nil, nil, "", err
	}
	if f.tokenEnv != "" {
		if token, err = f.token(u); err != nil {
			return nil, nil, "", err
		}
	}
	return u, ledgerHTTPClient(tlsConf), token, nil
}

// client returns a Connect client (Connect protocol, HTTP/1.1) for the
// ledger at f.url, with extra options (such as tracing's interceptor)
// after its own.
func (f *remoteFlags) client(extra ...connect.Option) (ledgerv1connect.LedgerServiceClient, error) {
	u, hc, tok, err := f.endpoint()
	if err != nil {
		return nil, err
	}
	var opts []connect.ClientOption
	if tok != "" {
		opts = append(opts, connect.WithInterceptors(bearer(tok)))
	}
	opts = append(opts, connect.WithReadMaxBytes(ledgerMaxResponse))
	for _, o := range extra {
		opts = append(opts, o)
	}
	return ledgerv1connect.NewLedgerServiceClient(hc, u.String(), opts...), nil
}

// parseLedgerURL accepts an http or https URL with a host and nothing
// after the path. Messages never repeat a password the URL may hold.
func parseLedgerURL(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, hint(fmt.Errorf("--ledger: not a URL: %v", err), "give one like --ledger https://ledger.example:8443")
	}
	shown := u.Redacted()
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, hint(fmt.Errorf("--ledger %q: not an http:// or https:// URL", shown), "give one like --ledger https://ledger.example:8443")
	case u.Host == "":
		return nil, hint(fmt.Errorf("--ledger %q: no host", shown), "give one like --ledger https://ledger.example:8443")
	case u.User != nil:
		return nil, hint(fmt.Errorf("--ledger %q: credentials in the URL show in process listings", shown),
			"put a bearer token in an environment variable and name it with --ledger-token-env VAR")
	case u.RawQuery != "" || u.Fragment != "":
		return nil, fmt.Errorf("--ledger %q: a ledger URL has no query or fragment", shown)
	}
	return u, nil
}

func (f *remoteFlags) tlsConfig(u *url.URL) (*tls.Config, error) {
	c := &tls.Config{MinVersion: tls.VersionTLS12}
	if f.ca == "" {
		return c, nil
	}
	if u.Scheme != "https" {
		return nil, hint(fmt.Errorf("--ledger-ca is for an https:// --ledger; %s is plain HTTP", u.Redacted()), "give the ledger's https:// URL, or drop --ledger-ca")
	}
	pem, err := os.ReadFile(f.ca)
	if err != nil {
		return nil, fmt.Errorf("--ledger-ca: %w", err)
	}
	c.RootCAs = x509.NewCertPool()
	if !c.RootCAs.AppendCertsFromPEM(pem) {
		return nil, hint(fmt.Errorf("--ledger-ca: %s holds no PEM CERTIFICATE block", f.ca), "give the CA certificate that issued the ledger's")
	}
	return c, nil
}

// token reads the bearer token, and refuses to send it in clear text
// anywhere but to this machine.
func (f *remoteFlags) token(u *url.URL) (string, error) {
	tok := os.Getenv(f.tokenEnv)
	if tok == "" {
		return "", hint(fmt.Errorf("--ledger-token-env %s: the environment variable %s is unset or empty", f.tokenEnv, f.tokenEnv), "set %s to the ledger's bearer token", f.tokenEnv)
	}
	if u.Scheme == "http" && !isLoopback(u.Hostname()) {
		return "", hint(fmt.Errorf("--ledger-token-env: a bearer token would cross the network in clear text to %s", u.Host), "use an https:// --ledger URL")
	}
	return tok, nil
}

// ledgerHint adds what fixes a remote ledger's answer err, if it is one
// the caller can fix.
func ledgerHint(err error) error {
	switch connect.CodeOf(err) {
	case connect.CodeUnauthenticated:
		return hint(err, "set an environment variable to a bearer token the ledger accepts and name it with --ledger-token-env VAR")
	case connect.CodeUnavailable:
		return hint(err, "check that --ledger is the URL of a running ledger server (bankdoor ledger serve)")
	}
	return err
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// ledgerHTTPClient speaks HTTP/1.1 with bounded dial, TLS handshake,
// response header and whole-call times.
func ledgerHTTPClient(tlsConf *tls.Config) *http.Client {
	var protos http.Protocols
	protos.SetHTTP1(true)
	return &http.Client{
		Timeout: ledgerCallTimeout,
		Transport: &http.Transport{
			Proxy:                 http.ProxyFromEnvironment,
			DialContext:           (&net.Dialer{Timeout: ledgerDialTimeout}).DialContext,
			TLSClientConfig:       tlsConf,
			TLSHandshakeTimeout:   ledgerDialTimeout,
			ResponseHeaderTimeout: ledgerHeaderTimeout,
			IdleConnTimeout:       90 * time.Second,
			Protocols:             &protos,
		},
	}
}

// bearer sets "Authorization: Bearer TOKEN" (RFC 6750) on every call,
// unary and streaming (bankdoor anchor's WatchCheckpoints).
type bearer string

func (b bearer) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		req.Header().Set("Authorization", "Bearer "+string(b))
		return next(ctx, req)
	}
}

func (b bearer) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return func(ctx context.Context, spec connect.Spec) connect.StreamingClientConn {
		conn := next(ctx, spec)
		conn.RequestHeader().Set("Authorization", "Bearer "+string(b))
		return conn
	}
}

func (b bearer) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return next
}
