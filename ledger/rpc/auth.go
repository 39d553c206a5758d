package rpc

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"strings"

	"connectrpc.com/connect"

	"github.com/bankdoor/bankdoor/proto/gen/bankdoor/ledger/v1/ledgerv1connect"
)

// Token file limits.
const (
	maxTokenFile = 1 << 20
	minToken     = 16 // bytes; shorter tokens are guessable
)

// Auth decides which callers may call which procedures. A caller is
// authenticated by a bearer token (RFC 6750: "Authorization: Bearer
// TOKEN") that is one of Tokens, or by a TLS client certificate that the
// server's tls.Config verified (mTLS). The zero Auth authenticates no one
// and requires nothing: every procedure is open.
//
// When Tokens or ClientCerts is set, Append and AddCosignature (the
// writes) require an authenticated caller; the read procedures do too if
// Reads is set. A refused call fails
// with connect.CodeUnauthenticated (HTTP 401 in the Connect protocol).
// [Auth.Middleware] does the checking, before the request body is read.
// An Auth must not change once Middleware has been called.
type Auth struct {
	// Tokens are the accepted bearer tokens, as LoadTokens returns them.
	Tokens []Token
	// ClientCerts accepts a client certificate verified by the server's
	// TLS configuration (tls.Config.ClientCAs) as authentication.
	ClientCerts bool
	// Reads requires authentication for the read procedures too.
	Reads bool
}

// A Token is a bearer token, kept as its SHA-256 so that comparing takes
// the same time whatever the length of the token presented.
type Token struct {
	sum  [32]byte
	line int // in the token file, for log lines; never the token itself
}

// NewToken returns the Token for secret, which must be a token as
// LoadTokens accepts them.
func NewToken(secret string) (Token, error) {
	if err := checkToken(secret); err != nil {
		return Token{}, err
	}
	return Token{sum: sha256.Sum256([]byte(secret))}, nil
}

func (a *Auth) enabled() bool { return len(a.Tokens) > 0 || a.ClientCerts }

// LoadTokens reads a token file: one bearer token per line; blank lines
// and lines starting with "#" are ignored. A token is at least 16
// characters of the RFC 6750 token68 alphabet (A-Z a-z 0-9 - . _ ~ + /
// and trailing =). On Unix the file must not be readable by group or
// others.
func LoadTokens(path string) ([]Token, error) {
	b, err := readTokenFile(path)
	if err != nil {
		return nil, err
	}
	var tokens []Token
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSuffix(sc.Text(), "\r")
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if err := checkToken(line); err != nil {
			return nil, fmt.Errorf("token file %s line %d: %w", path, n, err)
		}
		tokens = append(tokens, Token{sum: sha256.Sum256([]byte(line)), line: n})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("token file %s: %w", path, err)
	}
	if len(tokens) == 0 {
		return nil, fmt.Errorf("token file %s holds no tokens; put one bearer token per line", path)
	}
	return tokens, nil
}

func readTokenFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("token file: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("token file: %w", err)
	}
	if perm := fi.Mode().Perm(); runtime.GOOS != "windows" && perm&0o077 != 0 {
		return nil, fmt.Errorf("token file %s has mode %04o, which lets group or others read it; run chmod 600 %s", path, perm, path)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxTokenFile+1))
	if err != nil {
		return nil, fmt.Errorf("token file: %w", err)
	}
	if len(b) > maxTokenFile {
		return nil, fmt.Errorf("token file %s is larger than %d bytes; put one bearer token per line", path, maxTokenFile)
	}
	return b, nil
}

func checkToken(s string) error {
	if len(s) < minToken {
		return fmt.Errorf("token is %d characters, want at least %d (generate one with: openssl rand -base64 32)", len(s), minToken)
	}
	body := strings.TrimRight(s, "=")
	for i := 0; i < len(body); i++ {
		c := body[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("-._~+/", c) >= 0) {
			return fmt.Errorf("token holds %q at column %d; use only A-Z a-z 0-9 - . _ ~ + / and trailing =", c, i+1)
		}
	}
	return nil
}

// caller is who the auth middleware found calling.
type caller struct {
	name  string // "token line N" or "client certificate CN=..."; "" if none
	wrong bool   // a bearer token was presented and is not accepted
}

type callerKey struct{}

// Middleware refuses, before reading the request body, every call the
// caller may not make, with an Unauthenticated error in the format of the
// caller's protocol (Connect, gRPC or gRPC-Web; a plain 401 otherwise). It
// records who is calling in the request context for [CallerName].
func (a *Auth) Middleware(next http.Handler) http.Handler {
	ew := connect.NewErrorWriter()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c := a.identify(r)
		if err := a.check(c, r.URL.Path); err != nil {
			if !ew.IsSupported(r) {
				http.Error(w, err.Error(), http.StatusUnauthorized)
				return
			}
			ew.Write(w, r, err)
			return
		}
		if c.name == "" { // nobody to name: CallerName says "" without a value
			next.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), callerKey{}, c)))
	})
}

func (a *Auth) identify(r *http.Request) caller {
	var c caller
	if h := r.Header.Get("Authorization"); h != "" {
		if t, ok := a.matchToken(h); ok {
			c.name = fmt.Sprintf("token line %d", t.line)
		} else {
			c.wrong = true
		}
	}
	if c.name == "" && a.ClientCerts && r.TLS != nil && len(r.TLS.VerifiedChains) > 0 {
		c.name = "client certificate " + r.TLS.VerifiedChains[0][0].Subject.String()
	}
	return c
}

// matchToken compares the presented token with every accepted token in
// constant time (over their SHA-256), without stopping at a match.
func (a *Auth) matchToken(header string) (Token, bool) {
	scheme, tok, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return Token{}, false
	}
	sum := sha256.Sum256([]byte(strings.TrimSpace(tok)))
	var found Token
	match := 0
	for _, t := range a.Tokens {
		eq := subtle.ConstantTimeCompare(sum[:], t.sum[:])
		if eq == 1 {
			found = t
		}
		match |= eq
	}
	return found, match == 1
}

// check returns nil if c may call procedure (the request path).
func (a *Auth) check(c caller, procedure string) error {
	if !a.enabled() || (!isWrite(procedure) && !a.Reads) {
		return nil
	}
	switch {
	case c.name != "":
		return nil
	case c.wrong:
		return connect.NewError(connect.CodeUnauthenticated, errors.New("the bearer token is not accepted by this ledger"))
	}
	return connect.NewError(connect.CodeUnauthenticated, fmt.Errorf("%s requires authentication; %s", procedureName(procedure), a.how()))
}

// isWrite reports whether procedure changes what the ledger stores:
// Append and AddCosignature.
func isWrite(procedure string) bool {
	return procedure == ledgerv1connect.LedgerServiceAppendProcedure ||
		procedure == ledgerv1connect.LedgerServiceAddCosignatureProcedure
}

// how says which credentials the server accepts.
func (a *Auth) how() string {
	var ways []string
	if len(a.Tokens) > 0 {
		ways = append(ways, "send \"Authorization: Bearer TOKEN\" with a token this ledger accepts")
	}
	if a.ClientCerts {
		ways = append(ways, "present a TLS client certificate issued by a CA this ledger trusts")
	}
	return strings.Join(ways, ", or ")
}

// procedureName returns "Append" for "/bankdoor.ledger.v1.LedgerService/Append",
// and any other path (the tlog-tiles API's, behind the same Middleware)
// as it is.
func procedureName(p string) string {
	if name, ok := strings.CutPrefix(p, "/"+ledgerv1connect.LedgerServiceName+"/"); ok {
		return name
	}
	return p
}

// CallerName returns who the auth middleware found calling, for logs: "" if
// the caller did not authenticate.
func CallerName(ctx context.Context) string {
	c, _ := ctx.Value(callerKey{}).(caller)
	return c.name
}
