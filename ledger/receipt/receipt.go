package receipt

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/bankdoor/bankdoor/internal/agentkey"
	"github.com/bankdoor/bankdoor/internal/jcs"
)

// Version is the only receipt format version, the value of member "v".
const Version = 1

// MaxSize is the largest receipt file, in bytes, that Parse accepts and
// Sign produces.
const MaxSize = 16 << 10

// FirstPrev is the prev of the receipt with seq 1.
const FirstPrev = "0000000000000000000000000000000000000000000000000000000000000000"

// TimeLayout is the layout of member "time": RFC 3339, UTC, milliseconds.
const TimeLayout = "2006-01-02T15:04:05.000Z"

const (
	maxSeq      = 1<<53 - 1 // integers above this are not exact in JCS
	maxTool     = 256       // bytes, before the "…"
	maxArgName  = 64        // bytes, before the "…"
	maxArgNames = 32
	ellipsis    = "…"
)

// Decision values.
const (
	Deny  = "deny"
	Allow = "allow"
)

// A Receipt is one signed record of a gate decision. Hex members are
// lower-case hex strings, as in the file.
type Receipt struct {
	V            int // Version
	Seq          uint64
	Time         time.Time
	Decision     string // Deny or Allow
	Server       string
	Tool         string
	Rule         string
	Reason       string
	ArgNames     []string
	ArgsSHA256   string
	PolicyID     string
	PolicySHA256 string
	Prev         string
	KeyID        string
	Sig          []byte // 64-byte Ed25519 signature
}

// Hash returns the receipt hash: the SHA-256 of the receipt file's bytes.
// The next receipt's prev is its lower-case hex.
func Hash(file []byte) [32]byte { return sha256.Sum256(file) }

// FileName returns the name of the receipt file for seq: at least six
// decimal digits, zero-padded, and ".json".
func FileName(seq uint64) string { return fmt.Sprintf("%06d.json", seq) }

// ParseFileName returns the seq a receipt file name stands for. It accepts
// only names FileName returns for a seq from 1 to 2⁵³−1.
func ParseFileName(name string) (seq uint64, ok bool) {
	digits, ok := strings.CutSuffix(name, ".json")
	if !ok || len(digits) < 6 || strings.TrimLeft(digits, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.ParseUint(digits, 10, 64)
	// FileName(n) == name, without formatting it: FileName pads to six
	// digits and never puts a zero before a seventh.
	if err != nil || n < 1 || n > maxSeq || len(digits) > 6 && digits[0] == '0' {
		return 0, false
	}
	return n, true
}

// Sign fills in r.V (if zero), r.KeyID and r.Sig and returns the receipt
// file's bytes. Before signing it brings r into the form Parse accepts:
// Time is converted to UTC and truncated to milliseconds; invalid UTF-8 in
// any string is replaced by U+FFFD; Tool is cut at a character boundary to
// at most 256 bytes followed by "…" (U+2026) if it was longer; each of
// ArgNames is cut the same way at 64 bytes, and ArgNames is sorted and
// capped at its first 32 names. r is changed only if Sign succeeds.
func Sign(r *Receipt, key ed25519.PrivateKey) ([]byte, error) {
	if len(key) != ed25519.PrivateKeySize {
		return nil, errors.New("sign receipt: not an Ed25519 private key")
	}
	c := *r
	c.normalize()
	c.KeyID = agentkey.KeyID(key.Public().(ed25519.PublicKey))
	c.Sig = nil
	if err := c.check(false); err != nil {
		return nil, fmt.Errorf("sign receipt: %w", err)
	}
	msg, err := c.encode(false)
	if err != nil {
		return nil, fmt.Errorf("sign receipt: %w", err)
	}
	c.Sig = ed25519.Sign(key, msg)
	file, err := c.encode(true)
	if err != nil {
		return nil, fmt.Errorf("sign receipt: %w", err)
	}
	if len(file) > MaxSize {
		return nil, fmt.Errorf("sign receipt: %d bytes, over the %d-byte limit; shorten reason, server or policy_id", len(file), MaxSize)
	}
	*r = c
	return file, nil
}

func (r *Receipt) normalize() {
	if r.V == 0 {
		r.V = Version
	}
	r.Time = r.Time.UTC().Truncate(time.Millisecond)
	r.Tool = truncate(r.Tool, maxTool)
	for _, s := range []*string{&r.Server, &r.Rule, &r.Reason, &r.PolicyID} {
		*s = strings.ToValidUTF8(*s, "\uFFFD")
	}
	names := make([]string, len(r.ArgNames))
	for i, n := range r.ArgNames {
		names[i] = truncate(n, maxArgName)
	}
	slices.Sort(names)
	r.ArgNames = names[:min(len(names), maxArgNames)]
}

// truncate replaces invalid UTF-8 in s by U+FFFD and, if s is then longer
// than max bytes, cuts it at the last character boundary at or before max
// and appends "…". truncate(truncate(s)) == truncate(s).
func truncate(s string, max int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= max {
		return s
	}
	i := max
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + ellipsis
}

// ErrSignature is wrapped by the error of a receipt whose signature does
// not verify.
var ErrSignature = errors.New("signature does not verify")

// Verify checks that r is signed by pub: r.KeyID must be pub's key_id and
// r.Sig a valid Ed25519 signature over the canonical JSON of r without
// its sig member. A signature that does not verify gives an error
// wrapping ErrSignature. To check a receipt file, Open is faster.
func (r *Receipt) Verify(pub ed25519.PublicKey) error {
	if err := r.checkKey(pub); err != nil {
		return err
	}
	if err := r.check(true); err != nil {
		return err
	}
	msg, err := r.encode(false)
	if err != nil {
		return err
	}
	if !ed25519.Verify(pub, msg, r.Sig) {
		return r.sigError()
	}
	return nil
}

// checkKey checks that pub is an Ed25519 public key with r's key_id.
func (r *Receipt) checkKey(pub ed25519.PublicKey) error {
	if len(pub) != ed25519.PublicKeySize {
		return errors.New("verify receipt: not an Ed25519 public key")
	}
	if want := agentkey.KeyID(pub); r.KeyID != want {
		return fmt.Errorf("key_id %s does not match the public key's key_id %s", r.KeyID, want)
	}
	return nil
}

func (r *Receipt) sigError() error {
	return fmt.Errorf("%w with key_id %s", ErrSignature, r.KeyID)
}

// Marshal returns the receipt file of the signed receipt r: the bytes
// Sign returned when it signed r (Sign and Writer.Write leave r as
// signed), or the bytes Parse read r from. It fails if r is not in the
// form Parse accepts.
func (r *Receipt) Marshal() ([]byte, error) {
	if err := r.check(true); err != nil {
		return nil, fmt.Errorf("encode receipt: %w", err)
	}
	return r.encode(true)
}

// encode returns the JCS canonical JSON of r, with or without member sig.
func (r *Receipt) encode(withSig bool) ([]byte, error) {
	str := jsontext.String
	toks := []jsontext.Token{jsontext.BeginObject, str("arg_names"), jsontext.BeginArray}
	for _, n := range r.ArgNames {
		toks = append(toks, str(n))
	}
	toks = append(toks, jsontext.EndArray,
		str("args_sha256"), str(r.ArgsSHA256),
		str("decision"), str(r.Decision),
		str("key_id"), str(r.KeyID),
		str("policy_id"), str(r.PolicyID),
		str("policy_sha256"), str(r.PolicySHA256),
		str("prev"), str(r.Prev),
		str("reason"), str(r.Reason),
		str("rule"), str(r.Rule),
		str("seq"), jsontext.Uint(r.Seq),
		str("server"), str(r.Server))
	if withSig {
		toks = append(toks, str("sig"), str(base64.StdEncoding.EncodeToString(r.Sig)))
	}
	toks = append(toks,
		str("time"), str(r.Time.Format(TimeLayout)),
		str("tool"), str(r.Tool),
		str("v"), jsontext.Int(int64(r.V)),
		jsontext.EndObject)
	var buf bytes.Buffer
	e := jsontext.NewEncoder(&buf)
	for _, t := range toks {
		if err := e.WriteToken(t); err != nil {
			return nil, fmt.Errorf("encode receipt: %w", err)
		}
	}
	return jcs.Canonicalize(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
}
