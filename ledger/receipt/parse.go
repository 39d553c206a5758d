package receipt

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/bankdoor/bankdoor/internal/jcs"
)

// members lists the members of a receipt in canonical order.
func members() []string {
	return []string{"arg_names", "args_sha256", "decision", "key_id", "policy_id",
		"policy_sha256", "prev", "reason", "rule", "seq", "server", "sig", "time", "tool", "v"}
}

// Parse parses a receipt file strictly: b must be at most MaxSize bytes of
// RFC 8785 canonical JSON holding exactly the members of the format, each
// of its type and form. Parse does not check the signature; call Verify,
// or use Open, which does both. Errors name the member at fault.
//
// A receipt Parse accepts re-encodes to b itself (FuzzParse holds it to
// that): the canonical form of a JSON value is unique, and each member is
// read back only from the one form Sign writes.
func Parse(b []byte) (*Receipt, error) {
	r, _, err := parse(b)
	return r, err
}

// parse is Parse, and also returns where in b the sig member is: b[sig[0]:sig[1]]
// is `,"sig":"…"` with its leading comma (sig is never the first member).
// It checks that b is canonical JSON, then reads its members.
func parse(b []byte) (r *Receipt, sig [2]int, err error) {
	if len(b) > MaxSize {
		return nil, sig, fmt.Errorf("receipt is %d bytes, over the %d-byte limit", len(b), MaxSize)
	}
	c, err := jcs.Canonicalize(b)
	if err != nil {
		return nil, sig, fmt.Errorf("receipt: %w", err)
	}
	if !bytes.Equal(c, b) {
		return nil, sig, errors.New("receipt is not in RFC 8785 canonical form")
	}
	r, sig, err = decode(b)
	if err != nil {
		return nil, sig, err
	}
	if err := r.check(true); err != nil {
		return nil, sig, err
	}
	return r, sig, nil
}

// Open parses the receipt file b as Parse does and checks its signature
// with the public key that key returns for it; key sees the parsed but not
// yet verified receipt (its KeyID, and Seq for messages) and may refuse it
// with an error, which Open returns unchanged. The key must be the one
// the receipt's key_id names. A signature that does not verify gives an
// error wrapping ErrSignature.
//
// Open accepts exactly what Parse followed by Receipt.Verify accepts
// (FuzzOpen holds it to that), but checks the signature over b itself
// less its sig member, which is the canonical JSON of the other members
// because b is canonical, instead of encoding the receipt again.
func Open(b []byte, key func(*Receipt) (ed25519.PublicKey, error)) (*Receipt, error) {
	r, sig, err := parse(b)
	if err != nil {
		return nil, err
	}
	pub, err := key(r)
	if err != nil {
		return nil, err
	}
	if err := r.checkKey(pub); err != nil {
		return nil, err
	}
	if !ed25519.Verify(pub, signedPart(b, sig), r.Sig) {
		return nil, r.sigError()
	}
	return r, nil
}

// signedPart returns b without b[sig[0]:sig[1]], in a new slice.
func signedPart(b []byte, sig [2]int) []byte {
	msg := make([]byte, 0, len(b)-(sig[1]-sig[0]))
	return append(append(msg, b[:sig[0]]...), b[sig[1]:]...)
}

// decode reads the members of the receipt object b into a Receipt, and
// returns the offsets of the sig member, with the comma before it.
func decode(b []byte) (*Receipt, [2]int, error) {
	var sig [2]int
	d := jsontext.NewDecoder(bytes.NewReader(b))
	if tok, err := d.ReadToken(); err != nil || tok.Kind() != '{' {
		return nil, sig, errors.New("receipt is not a JSON object")
	}
	r := new(Receipt)
	names := members()
	var seen uint32 // bit i: names[i] was read
	for d.PeekKind() != '}' {
		start := d.InputOffset()
		name, err := d.ReadToken()
		if err != nil {
			return nil, sig, err
		}
		n := name.String() // before the next read voids name
		v, err := d.ReadValue()
		if err != nil {
			return nil, sig, err
		}
		i := slices.Index(names, n)
		if i < 0 {
			return nil, sig, fmt.Errorf("receipt has unknown member %q", n)
		}
		if err := r.set(n, v); err != nil {
			return nil, sig, fmt.Errorf("member %q: %w", n, err)
		}
		if n == "sig" {
			sig = [2]int{int(start), int(d.InputOffset())}
		}
		seen |= 1 << i
	}
	for i, m := range names {
		if seen&(1<<i) == 0 {
			return nil, sig, fmt.Errorf("receipt has no member %q", m)
		}
	}
	return r, sig, nil
}

// set decodes member name from v into r.
func (r *Receipt) set(name string, v jsontext.Value) (err error) {
	switch name {
	case "arg_names":
		r.ArgNames, err = strArray(v)
		return err
	case "seq":
		r.Seq, err = integer(v)
		return err
	case "v":
		var n uint64
		n, err = integer(v)
		if err == nil && n != Version {
			err = fmt.Errorf("version %d is not supported; this bankdoor reads version %d", n, Version)
		}
		r.V = int(n)
		return err
	}
	if r.text(name) == nil && name != "time" && name != "sig" {
		return fmt.Errorf("unknown member %q", name)
	}
	s, err := str(v)
	if err != nil {
		return err
	}
	return r.setString(name, s)
}

// setString sets the string-valued member name (a text member, time or
// sig) from its unquoted value s.
func (r *Receipt) setString(name, s string) (err error) {
	if p := r.text(name); p != nil {
		*p = s
		return nil
	}
	switch name {
	case "time":
		r.Time, err = timestamp(s)
	case "sig":
		r.Sig, err = signature(s)
	default:
		return fmt.Errorf("unknown member %q", name)
	}
	return err
}

// text returns the string field for member name, or nil.
func (r *Receipt) text(name string) *string {
	switch name {
	case "args_sha256":
		return &r.ArgsSHA256
	case "decision":
		return &r.Decision
	case "key_id":
		return &r.KeyID
	case "policy_id":
		return &r.PolicyID
	case "policy_sha256":
		return &r.PolicySHA256
	case "prev":
		return &r.Prev
	case "reason":
		return &r.Reason
	case "rule":
		return &r.Rule
	case "server":
		return &r.Server
	case "tool":
		return &r.Tool
	}
	return nil
}

func kindName(k jsontext.Kind) string {
	switch k {
	case '"':
		return "a string"
	case '0':
		return "a number"
	case '{':
		return "an object"
	case '[':
		return "an array"
	case 't', 'f':
		return "a boolean"
	}
	return "null"
}

func str(v jsontext.Value) (string, error) {
	if v.Kind() != '"' {
		return "", fmt.Errorf("is %s, want a string", kindName(v.Kind()))
	}
	s, err := jsontext.AppendUnquote(nil, v)
	return string(s), err
}

func strArray(v jsontext.Value) ([]string, error) {
	if v.Kind() != '[' {
		return nil, fmt.Errorf("is %s, want an array of strings", kindName(v.Kind()))
	}
	d := jsontext.NewDecoder(bytes.NewReader(v))
	d.ReadToken()
	out := []string{}
	for d.PeekKind() != ']' {
		e, err := d.ReadValue()
		if err != nil {
			return nil, err
		}
		s, err := str(e)
		if err != nil {
			return nil, fmt.Errorf("element %d %w", len(out), err)
		}
		out = append(out, s)
	}
	return out, nil
}

// integer accepts a plain decimal integer from 1 to 2⁵³−1.
func integer(v jsontext.Value) (uint64, error) {
	if v.Kind() != '0' {
		return 0, fmt.Errorf("is %s, want an integer", kindName(v.Kind()))
	}
	n, err := strconv.ParseUint(string(v), 10, 64)
	if err != nil || n < 1 || n > maxSeq {
		return 0, fmt.Errorf("%s is not an integer from 1 to %d", v, uint64(maxSeq))
	}
	return n, nil
}

func timestamp(s string) (time.Time, error) {
	t, err := time.Parse(TimeLayout, s)
	if err != nil || t.Format(TimeLayout) != s {
		return time.Time{}, fmt.Errorf("%q is not RFC 3339 UTC with milliseconds, like 2026-12-02T18:42:45.123Z", s)
	}
	return t, nil
}

func signature(s string) ([]byte, error) {
	sig, err := base64.StdEncoding.Strict().DecodeString(s)
	if err != nil || len(sig) != 64 || base64.StdEncoding.EncodeToString(sig) != s {
		return nil, errors.New("want the standard base64 (88 characters, padded) of a 64-byte Ed25519 signature")
	}
	return sig, nil
}

// check reports the first member of r that Sign would not produce.
func (r *Receipt) check(withSig bool) error {
	if r.V != Version {
		return fmt.Errorf(`member "v": version %d is not supported; want %d`, r.V, Version)
	}
	if r.Seq < 1 || r.Seq > maxSeq {
		return fmt.Errorf(`member "seq": %d is not an integer from 1 to %d`, r.Seq, uint64(maxSeq))
	}
	if t := r.Time; t.IsZero() || t.Year() < 1 || t.Year() > 9999 || t.Location() != time.UTC || t.Nanosecond()%1e6 != 0 {
		return fmt.Errorf(`member "time": %v is not a UTC time of years 0001-9999 in whole milliseconds, or is the zero time`, r.Time)
	}
	if r.Decision != Deny && r.Decision != Allow {
		return fmt.Errorf(`member "decision": %q is neither %q nor %q`, r.Decision, Deny, Allow)
	}
	if err := r.checkText(); err != nil {
		return err
	}
	if err := r.checkHex(); err != nil {
		return err
	}
	if withSig && len(r.Sig) != 64 {
		return fmt.Errorf(`member "sig": %d bytes, want 64`, len(r.Sig))
	}
	return nil
}

func (r *Receipt) checkText() error {
	if truncate(r.Tool, maxTool) != r.Tool {
		return fmt.Errorf(`member "tool": longer than %d bytes without the "…" cut, or not UTF-8`, maxTool)
	}
	if len(r.ArgNames) > maxArgNames {
		return fmt.Errorf(`member "arg_names": %d names, over the limit of %d`, len(r.ArgNames), maxArgNames)
	}
	for i, n := range r.ArgNames {
		if truncate(n, maxArgName) != n {
			return fmt.Errorf(`member "arg_names": element %d longer than %d bytes without the "…" cut, or not UTF-8`, i, maxArgName)
		}
	}
	if !slices.IsSorted(r.ArgNames) {
		return fmt.Errorf(`member "arg_names": not sorted`)
	}
	return nil
}

func (r *Receipt) checkHex() error {
	for _, h := range []struct {
		name string
		v    string
		n    int
	}{
		{"args_sha256", r.ArgsSHA256, 64}, {"policy_sha256", r.PolicySHA256, 64},
		{"prev", r.Prev, 64}, {"key_id", r.KeyID, 16},
	} {
		if !isHex(h.v, h.n) {
			return fmt.Errorf("member %q: %q is not %d lower-case hex digits", h.name, h.v, h.n)
		}
	}
	if (r.Seq == 1) != (r.Prev == FirstPrev) {
		return fmt.Errorf(`member "prev": must be 64 zeros exactly when seq is 1 (seq is %d)`, r.Seq)
	}
	return nil
}

func isHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
