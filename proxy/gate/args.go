package gate

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"slices"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/bankdoor/bankdoor/internal/jcs"
)

// Limits of check 6.
const (
	maxArgsBytes = 64 << 10 // raw arguments, bytes
	maxArgs      = 32       // arguments per call; also the cap of ArgNames
	maxArgName   = 64       // bytes of one name in ArgNames
)

// jsonSpace is the whitespace of RFC 8259, and nothing else.
const jsonSpace = " \t\r\n"

// args is the result of parsing the raw arguments of a call once.
type args struct {
	raw []byte // as received; "{}" for absent or null
	// rule and reason are set if the whole value fails one of the first
	// four rules of check 6 (too_large, encoding, duplicate, not_object).
	rule, reason string
	object       bool     // the value parsed strictly as an object
	members      []member // sorted by name
	canonical    []byte   // RFC 8785 form of raw; nil if not canonicalisable
}

// member is one argument, or one item of an argument's array: its name
// (for an item, the argument's), the kind of its value, and for scalars
// the value's text (unquoted for strings, the literal for numbers).
type member struct {
	name string
	kind jsontext.Kind
	text string
	// index is the position of an item in its array, -1 for an argument.
	index int
	// items are the items of an array value, in order; an item that is
	// itself an array or an object keeps only its kind.
	items []member
}

// parseArgs parses raw arguments strictly. It never fails: a failure is
// recorded in rule and reason, for checkArgs to report.
func (g *Gate) parseArgs(raw []byte) *args {
	if raw == nil || string(bytes.Trim(raw, jsonSpace)) == "null" {
		raw = []byte("{}")
	}
	a := &args{raw: raw}
	a.canonical, _ = jcs.Canonicalize(raw)
	a.rule, a.reason = bytesRule(raw)
	if a.rule == "" || a.rule == "args.too_large" {
		r := g.readers.Get().(*reader)
		rule, reason := a.walk(r.reset(a.raw))
		r.release()
		g.readers.Put(r)
		if a.rule == "" {
			a.rule, a.reason = rule, reason
		}
	}
	return a
}

// reader is a reusable jsontext decoder; Gate keeps a pool of them.
type reader struct {
	buf bytes.Buffer // jsontext parses a bytes.Buffer's bytes in place
	dec jsontext.Decoder
}

func newReader() any { return new(reader) }

// reset points the decoder at raw, which it reads but never modifies.
func (r *reader) reset(raw []byte) *jsontext.Decoder {
	r.buf = *bytes.NewBuffer(raw)
	r.dec.Reset(&r.buf)
	return &r.dec
}

// release drops the reader's reference to the last arguments.
func (r *reader) release() {
	r.buf = bytes.Buffer{}
	r.dec.Reset(&r.buf)
}

// bytesRule applies args.too_large and args.encoding to the raw bytes.
func bytesRule(raw []byte) (rule, reason string) {
	if len(raw) > maxArgsBytes {
		return "args.too_large", fmt.Sprintf("arguments are %d bytes; the limit is %d", len(raw), maxArgsBytes)
	}
	if !utf8.Valid(raw) {
		return "args.encoding", fmt.Sprintf("arguments are not valid UTF-8 (first bad byte at offset %d); send UTF-8 JSON", invalidAt(raw))
	}
	if i := loneSurrogate(raw); i >= 0 {
		return "args.encoding", fmt.Sprintf(`arguments have a \u escape of a lone UTF-16 surrogate at byte %d; write a character outside the BMP as a surrogate pair`, i)
	}
	return "", ""
}

// walk reads the top-level members with jsontext, which rejects duplicate
// names at any depth, invalid UTF-8, bad escapes and syntax errors.
func (a *args) walk(dec *jsontext.Decoder) (rule, reason string) {
	if k := dec.PeekKind(); k != '{' {
		if _, err := dec.ReadValue(); err != nil {
			return syntaxRule(err, false)
		}
		return trailing(dec, "arguments are "+kindName(k)+"; send a JSON object (absent or null arguments mean {})")
	}
	if _, err := dec.ReadToken(); err != nil {
		return syntaxRule(err, true)
	}
	var ms []member
	for dec.PeekKind() != '}' {
		m, err := readMember(dec)
		if err != nil {
			return syntaxRule(err, true)
		}
		ms = append(ms, m)
	}
	if _, err := dec.ReadToken(); err != nil {
		return syntaxRule(err, true)
	}
	if rule, reason = trailing(dec, ""); rule != "" {
		return rule, reason
	}
	slices.SortFunc(ms, func(x, y member) int { return compareStrings(x.name, y.name) })
	a.object, a.members = true, ms
	return "", ""
}

func compareStrings(x, y string) int {
	switch {
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return 0
}

// readMember reads one name and its value. Objects are read whole (and so
// checked strictly) but only their kind is kept; an array's items are
// read as readValue reads a value.
func readMember(dec *jsontext.Decoder) (member, error) {
	tok, err := dec.ReadToken()
	if err != nil {
		return member{}, err
	}
	m := member{name: tok.String(), index: -1}
	if dec.PeekKind() != '[' {
		return m, readValue(dec, &m)
	}
	m.kind = '['
	if _, err := dec.ReadToken(); err != nil {
		return member{}, err
	}
	for dec.PeekKind() != ']' {
		item := member{name: m.name, index: len(m.items)}
		if err := readValue(dec, &item); err != nil {
			return member{}, err
		}
		m.items = append(m.items, item)
	}
	_, err = dec.ReadToken()
	return m, err
}

// readValue reads one value into m: the kind and text of a scalar, only
// the kind of an object or array, which it reads whole.
func readValue(dec *jsontext.Decoder, m *member) error {
	if m.kind = dec.PeekKind(); m.kind == '{' || m.kind == '[' {
		return dec.SkipValue()
	}
	v, err := dec.ReadToken()
	if err != nil {
		return err
	}
	m.kind, m.text = v.Kind(), v.String()
	return nil
}

// trailing reports args.not_object if anything follows the first value;
// otherwise it reports notObject, which may be "" for no failure.
func trailing(dec *jsontext.Decoder, notObject string) (rule, reason string) {
	if _, err := dec.ReadToken(); err != io.EOF {
		return "args.not_object", "arguments have data after the first JSON value; send exactly one JSON object"
	}
	if notObject != "" {
		return "args.not_object", notObject
	}
	return "", ""
}

// syntaxRule maps a jsontext error to a rule of check 6. The reason names
// at most the top-level argument (when the value is an object) and a byte
// offset: never a nested member name, never jsontext's own text, whose
// JSON pointer could carry a value into a receipt.
func syntaxRule(err error, object bool) (rule, reason string) {
	var se *jsontext.SyntacticError
	if !errors.As(err, &se) {
		return "args.not_object", "arguments are not one well-formed JSON value; send a JSON object"
	}
	if errors.Is(err, jsontext.ErrDuplicateName) {
		var tokens []string
		for tok := range se.JSONPointer.Tokens() {
			tokens = append(tokens, tok)
		}
		switch {
		case !object || len(tokens) == 0:
			return "args.duplicate", fmt.Sprintf("the arguments repeat a member name (at byte %d); send each name once", se.ByteOffset)
		case len(tokens) == 1:
			return "args.duplicate", fmt.Sprintf("argument name %s appears twice (at byte %d); send each name once", quote(tokens[0]), se.ByteOffset)
		}
		return "args.duplicate", fmt.Sprintf("argument %s has a member name twice inside its value (at byte %d); send each name once", quote(tokens[0]), se.ByteOffset)
	}
	return "args.not_object", fmt.Sprintf("arguments are not one well-formed JSON value (syntax error at byte %d); send a JSON object", se.ByteOffset)
}

func kindName(k jsontext.Kind) string {
	switch k {
	case '"':
		return "a string"
	case '0':
		return "a number"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	case '[':
		return "an array"
	case '{':
		return "an object"
	}
	return "not a JSON value"
}

// argNames returns the sorted argument names for receipts: at most 32,
// each cut to at most 64 bytes at a UTF-8 boundary.
func (a *args) argNames() []string {
	if !a.object {
		return nil
	}
	n := min(len(a.members), maxArgs)
	names := make([]string, n)
	for i, m := range a.members[:n] {
		names[i] = cut(m.name, maxArgName)
	}
	return names
}

// sha256 is args_sha256: of the canonical form if there is one, else of the
// raw bytes.
func (a *args) sha256() string {
	b := a.canonical
	if b == nil {
		b = a.raw
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// invalidAt returns the offset of the first byte of b that is not part of
// valid UTF-8, or -1.
func invalidAt(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n == 1 {
			return i
		}
		i += n
	}
	return -1
}

// loneSurrogate returns the offset of the first \u escape of a UTF-16
// surrogate that is not half of a high-low pair, or -1. A backslash can only
// stand inside a string in well-formed JSON, where escapes are read left to
// right as here; elsewhere the value is malformed anyway.
func loneSurrogate(b []byte) int {
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' || i+1 >= len(b) {
			continue
		}
		if b[i+1] != 'u' {
			i++ // skip the escaped character, which may be a backslash
			continue
		}
		v, ok := hex4(b[i+2:])
		switch {
		case !ok || v < 0xd800 || v > 0xdfff:
			i += 1
		case v <= 0xdbff && len(b) >= i+12 && b[i+6] == '\\' && b[i+7] == 'u' && isLow(b[i+8:]):
			i += 11
		default:
			return i
		}
	}
	return -1
}

func isLow(b []byte) bool {
	v, ok := hex4(b)
	return ok && 0xdc00 <= v && v <= 0xdfff
}

// hex4 parses the four hex digits at the start of b.
func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var v rune
	for _, c := range b[:4] {
		switch {
		case '0' <= c && c <= '9':
			v = v<<4 | rune(c-'0')
		case 'a' <= c && c <= 'f':
			v = v<<4 | rune(c-'a'+10)
		case 'A' <= c && c <= 'F':
			v = v<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return v, true
}
