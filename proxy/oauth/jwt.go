package oauth

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/bankdoor/bankdoor/internal/jsonobj"
)

// claims are the members of an access token's payload that Agent decides
// on, each of its registered type (RFC 7519 §4.1); a time is zero if its
// claim is absent.
type claims struct {
	obj      jsonobj.Object // every claim, for Config.AgentClaim
	iss      string
	aud      []string
	exp, nbf time.Time
	scopes   []string // of scope and scp
}

// checkCompact checks that token is a JWS in the compact serialization
// (RFC 7515 §7.1): exactly three parts of unpadded base64url joined by
// dots, nothing else, whose header is a strict JSON object with an alg of
// signingAlgs and no crit (no extension is understood here).
func checkCompact(token string) error {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return errors.New("malformed: not a JWS in the compact serialization, three base64url parts joined by dots")
	}
	var header []byte
	for i, p := range parts {
		// The decoder skips CR and LF even when strict.
		b, err := base64.RawURLEncoding.Strict().DecodeString(p)
		if p == "" || strings.ContainsAny(p, "\r\n") || err != nil {
			return fmt.Errorf("malformed: part %d of the JWS is not unpadded base64url", i+1)
		}
		if i == 0 {
			header = b
		}
	}
	obj, err := jsonobj.Parse(header)
	if err != nil {
		return fmt.Errorf("malformed JWS header: %v", err)
	}
	alg, _ := jsonobj.String(obj.Get("alg"))
	if !slices.Contains(signingAlgs, alg) {
		return fmt.Errorf("unsupported algorithm %q; accepted: %s", alg, strings.Join(signingAlgs, ", "))
	}
	if obj.Has("crit") {
		return errors.New("the JWS header has crit; no extension is understood here")
	}
	return nil
}

// parseClaims parses a payload: one strict JSON object (jsonobj: no
// duplicate names, valid UTF-8, nothing after it) whose iss and sub are
// strings, aud a string or an array of strings, exp, nbf and iat numbers,
// scope a string and scp a string or an array of strings, where present.
func parseClaims(payload []byte) (*claims, error) {
	obj, err := jsonobj.Parse(payload)
	if err != nil {
		return nil, fmt.Errorf("claims: %v", err)
	}
	c := &claims{obj: obj}
	var scope string
	var scp []string
	for _, err := range []error{
		stringClaim(obj, "iss", &c.iss),
		stringClaim(obj, "sub", new(string)), // sub and iat: only their types
		stringsClaim(obj, "aud", &c.aud),
		dateClaim(obj, "exp", &c.exp),
		dateClaim(obj, "nbf", &c.nbf),
		dateClaim(obj, "iat", new(time.Time)),
		stringClaim(obj, "scope", &scope),
		stringsClaim(obj, "scp", &scp),
	} {
		if err != nil {
			return nil, err
		}
	}
	c.scopes = append(strings.Fields(scope), scp...)
	return c, nil
}

// stringClaim sets *s to the named claim, a string, if present.
func stringClaim(obj jsonobj.Object, name string, s *string) error {
	raw := obj.Get(name)
	if raw == nil {
		return nil
	}
	v, ok := jsonobj.String(raw)
	if !ok {
		return fmt.Errorf("%s is not a string", name)
	}
	*s = v
	return nil
}

// stringsClaim sets *s to the named claim, a string or an array of
// strings, if present; a string of scp is space-separated scopes.
func stringsClaim(obj jsonobj.Object, name string, s *[]string) error {
	raw := obj.Get(name)
	if raw == nil {
		return nil
	}
	if v, ok := jsonobj.String(raw); ok {
		*s = []string{v}
		if name == "scp" {
			*s = strings.Fields(v)
		}
		return nil
	}
	bad := fmt.Errorf("%s is not a string or an array of strings", name)
	dec := jsontext.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '[' {
		return bad
	}
	for dec.PeekKind() == '"' {
		tok, err := dec.ReadToken()
		if err != nil {
			return bad
		}
		*s = append(*s, tok.String())
	}
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != ']' {
		return bad
	}
	return nil
}

// maxDate is the last second of the year 9999, the latest NumericDate
// accepted.
const maxDate = 253402300799

// dateClaim sets *t to the named claim, a NumericDate (RFC 7519 §2: a JSON
// number of seconds since 1970, perhaps with a fraction), if present.
func dateClaim(obj jsonobj.Object, name string, t *time.Time) error {
	raw := obj.Get(name)
	if raw == nil {
		return nil
	}
	if raw.Kind() != '0' {
		return fmt.Errorf("%s is not a number (a NumericDate, RFC 7519 §2)", name)
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil || f < 0 || f > maxDate {
		return fmt.Errorf("%s %s is not a time between 1970 and 9999", name, raw)
	}
	sec, frac := math.Modf(f)
	*t = time.Unix(int64(sec), int64(frac*1e9)).UTC()
	return nil
}
