package proxy

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Timeouts of the HTTP client that talks to a remote bank server. There is
// no overall request timeout: the notification stream and the SSE answers
// to slow calls are long-lived.
const (
	httpDialTimeout   = 10 * time.Second
	httpTLSTimeout    = 10 * time.Second
	httpHeaderTimeout = 60 * time.Second // until a response's headers arrive
	httpIdleTimeout   = 90 * time.Second // an idle keep-alive connection is closed
)

// HTTPServer says how to reach a bank server over MCP streamable HTTP.
type HTTPServer struct {
	// URL is the MCP endpoint. https, or http only to a loopback address.
	URL string
	// RootCAs, if not nil, replaces the system roots (a private CA).
	RootCAs *x509.CertPool
	// Header is sent with every request (e.g. Authorization). It must not
	// set the headers the transport owns (see reservedHeaders).
	Header http.Header
}

// reservedHeaders are set by the MCP transport or net/http; a configured
// header must not override them.
var reservedHeaders = []string{"Accept", "Content-Type", "Content-Length", "Host", "Mcp-Session-Id",
	"Mcp-Protocol-Version", "Last-Event-Id", "Transfer-Encoding", "Connection"}

// ErrURLCredentials is CheckURL's error for a URL with a user name or
// password in it.
var ErrURLCredentials = errors.New("credentials in the URL would show in process listings")

// CheckURL checks an MCP endpoint URL: https, or http to a loopback
// address (localhost, 127.0.0.0/8, ::1) so that a credential or a tool
// result never crosses a network in the clear; nor may it hold
// credentials (ErrURLCredentials).
func CheckURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("not a URL: %v", err)
	}
	if u.User != nil {
		return nil, ErrURLCredentials
	}
	if u.Host == "" {
		return nil, fmt.Errorf("%q has no host; give a full URL such as https://bank.example/mcp", raw)
	}
	switch u.Scheme {
	case "https":
		return u, nil
	case "http":
		if isLoopback(u.Hostname()) {
			return u, nil
		}
		return nil, fmt.Errorf("plain http is allowed only to a loopback address, not %q; use https", u.Hostname())
	}
	return nil, fmt.Errorf("scheme %q is not https (or http to loopback)", u.Scheme)
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// CheckHeader checks one configured header: a valid name that the
// transport does not own, and a value without control characters.
func CheckHeader(name, value string) error {
	if name == "" || strings.IndexFunc(name, func(c rune) bool { return !isTokenChar(c) }) >= 0 {
		return fmt.Errorf("header name %q is not an HTTP token", name)
	}
	for _, r := range reservedHeaders {
		if strings.EqualFold(name, r) {
			return fmt.Errorf("header %s is set by the MCP transport and cannot be overridden", r)
		}
	}
	if strings.ContainsFunc(value, func(c rune) bool { return c < ' ' && c != '\t' || c == 0x7f }) {
		return fmt.Errorf("header %s: value has a control character", name)
	}
	return nil
}

func isTokenChar(c rune) bool {
	return c < 0x7f && c > ' ' && !strings.ContainsRune(`"(),/:;<=>?@[\]{}`, c)
}

// LoadCA reads a PEM file of CA certificates for HTTPServer.RootCAs.
func LoadCA(path string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s holds no PEM certificate", path)
	}
	return pool, nil
}

// errRedirect refuses every redirect: a redirect could carry the session's
// credentials, or its tool calls, to another origin.
var errRedirect = errors.New("the bank server answered with a redirect, which the proxy never follows; use the final URL")

// Client returns the HTTP client for s: TLS verified (TLS 1.2 or later),
// redirects refused, bounded dial, handshake and header timeouts, and
// s.Header added to every request.
func (s *HTTPServer) Client() *http.Client {
	tr := &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: httpDialTimeout, KeepAlive: 30 * time.Second}).DialContext,
		TLSClientConfig:       &tls.Config{RootCAs: s.RootCAs, MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout:   httpTLSTimeout,
		ResponseHeaderTimeout: httpHeaderTimeout,
		IdleConnTimeout:       httpIdleTimeout,
		ForceAttemptHTTP2:     true,
	}
	return &http.Client{
		Transport:     &headerTransport{next: tr, header: s.Header},
		CheckRedirect: func(*http.Request, []*http.Request) error { return errRedirect },
	}
}

// headerTransport adds configured headers to every request.
type headerTransport struct {
	next   http.RoundTripper
	header http.Header
}

func (t *headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if len(t.header) > 0 {
		req = req.Clone(req.Context())
		for k, v := range t.header {
			req.Header[k] = v
		}
	}
	return t.next.RoundTrip(req)
}

// DialHTTP returns a connection to the bank server at s, ready for a Relay.
// Nothing is sent until the relay writes the agent's initialize.
func DialHTTP(ctx context.Context, s *HTTPServer) (mcp.Connection, error) {
	if _, err := CheckURL(s.URL); err != nil {
		return nil, fmt.Errorf("bank server URL: %w", err)
	}
	client := s.Client()
	t := &mcp.StreamableClientTransport{
		Endpoint:   s.URL,
		HTTPClient: client,
		MaxRetries: -1, // a broken stream ends the session; the relay fails closed
		// The SDK opens its own notification stream only for its own
		// client sessions; notifyConn opens it for the relay.
		DisableStandaloneSSE: true,
	}
	c, err := t.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return newNotifyConn(c, client, s.URL), nil
}
