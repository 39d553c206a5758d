package httpserve

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/bankdoor/bankdoor/internal/tlstest"
)

// newTLSTestServer serves over HTTPS, requesting client certificates of
// agentCA and verifying those given (tls.VerifyClientCertIfGiven, as
// bankdoor proxy --agent-ca does), with the tokens of testTokens too.
func newTLSTestServer(t *testing.T, agentCA *tlstest.CA, clientCerts bool) (*httptest.Server, *echo) {
	t.Helper()
	e := &echo{frames: map[string][]string{}}
	s := New(Config{Tokens: testTokens(t), ClientCerts: clientCerts, MaxBody: 1024, IdleTimeout: time.Minute, Start: e.start})
	ts := httptest.NewUnstartedServer(s)
	ts.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshakes
	ts.TLS = &tls.Config{MinVersion: tls.VersionTLS12, ClientCAs: agentCA.Pool(), ClientAuth: tls.VerifyClientCertIfGiven}
	ts.StartTLS()
	t.Cleanup(func() { ts.Close(); s.Close() })
	return ts, e
}

// clientWith returns a client of ts that presents cert whatever CAs the
// server asks for (Go's client would send no certificate of another CA).
func clientWith(ts *httptest.Server, cert tls.Certificate) *http.Client {
	tr := ts.Client().Transport.(*http.Transport).Clone()
	tr.TLSClientConfig.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &cert, nil }
	return &http.Client{Transport: tr}
}

// TestClientCertAgents: a verified client certificate authenticates the
// agent its CommonName names, alone or with a bearer token of the same
// agent; a token of another agent, a CommonName that is no agent name and
// a request with neither are refused with 401 before any frame reaches a
// relay; a session of a certificate's agent is unknown (404) to others;
// tokens still work without a certificate.
func TestClientCertAgents(t *testing.T) {
	ca := tlstest.NewCA(t, "agents CA")
	ts, e := newTLSTestServer(t, ca, true)
	carol, alice := clientWith(ts, ca.Issue(t, "carol")), clientWith(ts, ca.Issue(t, "alice"))
	post := func(client *http.Client, token, session, body string) (*http.Response, string) {
		t.Helper()
		resp, got, err := doWith(client, ts.URL, req{method: "POST", token: token, session: session, ctype: "application/json", body: body})
		if err != nil {
			t.Fatal(err)
		}
		return resp, got
	}
	resp, _ := post(carol, "", "", initBody)
	sid := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != 200 || sid == "" {
		t.Fatalf("initialize by carol's certificate: %s, session %q; want 200 and a session", resp.Status, sid)
	}
	call := `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
	if resp, body := post(carol, "", sid, call); resp.StatusCode != 200 || body != `{"jsonrpc":"2.0","id":2,"result":{}}` {
		t.Errorf("tools/list by carol in her session: %s %q", resp.Status, body)
	}
	if resp, _ := post(alice, tokenA, "", initBody); resp.StatusCode != 200 {
		t.Errorf("alice's certificate with alice's token: %s, want 200", resp.Status)
	}
	if resp, _ := post(ts.Client(), tokenB, "", initBody); resp.StatusCode != 200 {
		t.Errorf("bob's token without a certificate: %s, want 200", resp.Status)
	}
	before := e.count()
	for _, tt := range []struct {
		name   string
		client *http.Client
		r      req
		status int
		msg    string
	}{
		{"carol's certificate, bob's token", carol, req{token: tokenB, session: sid, body: call}, 401, "the client certificate is agent carol's but the bearer token is agent bob's"},
		{"carol's certificate, an unknown token", carol, req{token: "nope", session: sid, body: call}, 401, "unknown bearer token"},
		{"carol's certificate, Basic auth", carol, req{authz: "Basic Y2Fyb2w6eA==", session: sid, body: call}, 401, `the Authorization header is not "Bearer TOKEN"`},
		{"CommonName not an agent name", clientWith(ts, ca.Issue(t, "Carol Smith")), req{body: initBody}, 401, `Subject CommonName: agent name "Carol Smith"`},
		{"neither certificate nor token", ts.Client(), req{body: initBody}, 401, "no client certificate and no bearer token"},
		{"carol's session, bob's token", ts.Client(), req{token: tokenB, session: sid, body: call}, 404, "unknown session id"},
		{"carol's session, alice's certificate", alice, req{session: sid, body: call}, 404, "unknown session id"},
	} {
		tt.r.method, tt.r.ctype = "POST", "application/json"
		resp, body, err := doWith(tt.client, ts.URL, tt.r)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if resp.StatusCode != tt.status || !strings.HasPrefix(body, "bankdoor: ") || !strings.Contains(body, tt.msg) {
			t.Errorf("%s: %s %q; want %d and a message with %q", tt.name, resp.Status, body, tt.status, tt.msg)
		}
		if (resp.StatusCode == 401) != (resp.Header.Get("WWW-Authenticate") != "") {
			t.Errorf("%s: %s with WWW-Authenticate %q; want the header with 401 only", tt.name, resp.Status, resp.Header.Get("WWW-Authenticate"))
		}
	}
	if n := e.count(); n != before {
		t.Errorf("%d refused requests reached a relay: %v", n-before, e.frames)
	}
	if got := e.frames["carol"]; len(got) != 2 || !strings.Contains(got[1], "tools/list") {
		t.Errorf("carol's relay got %q, want her initialize and tools/list", got)
	}
}

// TestClientCertOfAnotherCA: a client certificate that the agents' CA did
// not issue, an expired one and one not for client authentication fail
// the TLS handshake (tls.VerifyClientCertIfGiven verifies every
// certificate given), so no HTTP request is ever read, let alone relayed;
// the same client without a certificate reaches the server.
func TestClientCertOfAnotherCA(t *testing.T) {
	ca, other := tlstest.NewCA(t, "agents CA"), tlstest.NewCA(t, "another CA")
	ts, e := newTLSTestServer(t, ca, true)
	for name, cert := range map[string]tls.Certificate{
		"another CA's": other.Issue(t, "carol"),
		"expired":      ca.IssueEdited(t, "carol", func(c *x509.Certificate) { c.NotAfter = c.NotBefore.Add(time.Minute) }),
		"server-only":  ca.IssueEdited(t, "carol", func(c *x509.Certificate) { c.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth} }),
	} {
		_, _, err := doWith(clientWith(ts, cert), ts.URL, req{method: "POST", ctype: "application/json", body: initBody})
		if err == nil || !strings.Contains(err.Error(), "tls: ") {
			t.Errorf("%s certificate: %v, want a TLS handshake error", name, err)
		}
	}
	if n := e.count(); n != 0 {
		t.Errorf("%d frames reached a relay: %v", n, e.frames)
	}
	resp, body, err := doWith(ts.Client(), ts.URL, req{method: "POST", ctype: "application/json", body: initBody})
	if err != nil || resp.StatusCode != 401 {
		t.Errorf("the same request without a certificate: %v %v %q, want an HTTP 401", resp, err, body)
	}
}

// TestClientCertsOff: without Config.ClientCerts a certificate, even one
// the TLS configuration verified, authenticates no one.
func TestClientCertsOff(t *testing.T) {
	ca := tlstest.NewCA(t, "agents CA")
	ts, e := newTLSTestServer(t, ca, false)
	resp, body, err := doWith(clientWith(ts, ca.Issue(t, "carol")), ts.URL, req{method: "POST", ctype: "application/json", body: initBody})
	if err != nil || resp.StatusCode != 401 || !strings.Contains(body, "missing bearer token") {
		t.Errorf("carol's certificate without ClientCerts: %v %v %q, want 401 asking for a bearer token", resp, err, body)
	}
	if n := e.count(); n != 0 {
		t.Errorf("%d frames reached a relay: %v", n, e.frames)
	}
}
