package rpc

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"connectrpc.com/connect"

	"github.com/bankdoor/bankdoor/internal/secretfile"
	"github.com/bankdoor/bankdoor/proto/gen/bankdoor/ledger/v1/ledgerv1connect"
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
	name string // the token file's NAME, for log lines; never the token itself
}

// NewToken returns the Token for secret, named name, which must be a
// line's NAME and TOKEN as LoadTokens accepts them.
func NewToken(name, secret string) (Token, error) {
	if err := secretfile.CheckName(name); err != nil {
		return Token{}, err
	}
	if err := secretfile.CheckToken(secret); err != nil {
		return Token{}, err
	}
	return Token{sum: sha256.Sum256([]byte(secret)), name: name}, nil
}

func (a *Auth) enabled() bool { return len(a.Tokens) > 0 || a.ClientCerts }

// LoadTokens reads a token file (package secretfile): one "NAME TOKEN"
// line per bearer token, NAME naming the caller in logs.
func LoadTokens(path string) ([]Token, error) {
	lines, err := secretfile.ReadTokens(path)
	if err != nil {
		return nil, err
	}
	tokens := make([]Token, len(lines))
	for i, l := range lines {
		tokens[i] = Token{sum: l.Sum, name: l.Name}
	}
	return tokens, nil
}

// caller is who the auth middleware found calling.
type caller struct {
	name  string // "token NAME" or "client certificate CN=..."; "" if none
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
			c.name = "token " + t.name
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
