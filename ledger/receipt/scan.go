package receipt

import (
	"bytes"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
)

// scan is parse's fast path, for receipts as Sign writes them with every
// string printable ASCII: it reads b only if b is exactly
//
//	{"arg_names":[S,…],"args_sha256":S,"decision":S,…,"seq":N,…,"v":N}
//
// with the members in their canonical order, no whitespace, each S a
// string of printable ASCII (0x20..0x7E) between quotes, in which `"` and
// `\` appear only as the escapes \" and \\ (RFC 8785 escapes these two
// so, and no other printable ASCII: such a string is canonical) and
// each N a decimal integer without sign, leading zero, fraction or
// exponent (the canonical form of an integer up to 2⁵³−1). Such a b is
// RFC 8785 canonical JSON, so the general path would accept its layout,
// and scan then sets each member with the same Receipt.set, in the same
// order. scan returns ok false for anything else, or if a member's value
// is refused, and the general path then reads b and names the fault:
// whatever scan accepts, the general path accepts with the same result
// (FuzzScan holds it to that).
func scan(b []byte) (r *Receipt, sig [2]int, ok bool) {
	s := scanner{b: b, text: string(b)} // the strings are cut from one copy
	if !s.lit(`{"arg_names":`) {
		return nil, sig, false
	}
	r = new(Receipt)
	if r.ArgNames, ok = s.array(); !ok {
		return nil, sig, false
	}
	for _, m := range members()[1:] {
		start := s.i
		if !s.lit(`,"`) || !s.lit(m) || !s.lit(`":`) {
			return nil, sig, false
		}
		if m == "seq" || m == "v" {
			v, ok := s.integer()
			if !ok || r.set(m, v) != nil {
				return nil, sig, false
			}
		} else if v, ok := s.str(); !ok || r.setString(m, v) != nil {
			return nil, sig, false
		}
		if m == "sig" {
			sig = [2]int{start, s.i}
		}
	}
	if !s.lit("}") || s.i != len(b) {
		return nil, sig, false
	}
	return r, sig, true
}

// scanner reads b from i on; text is b as a string, from which it cuts
// the strings it reads (one allocation for them all).
type scanner struct {
	b    []byte
	text string
	i    int
}

// lit consumes l if b continues with it.
func (s *scanner) lit(l string) bool {
	if !bytes.HasPrefix(s.b[s.i:], []byte(l)) {
		return false
	}
	s.i += len(l)
	return true
}

// str consumes a string of printable ASCII in which `"` and `\` appear
// only escaped, as \" and \\, and returns its value.
func (s *scanner) str() (string, bool) {
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return "", false
	}
	escaped := false
	for j := s.i + 1; j < len(s.b); j++ {
		switch c := s.b[j]; {
		case c == '"':
			v := s.text[s.i+1 : j]
			s.i = j + 1
			if escaped {
				v = unescape(v)
			}
			return v, true
		case c == '\\':
			if j+1 == len(s.b) || s.b[j+1] != '"' && s.b[j+1] != '\\' {
				return "", false
			}
			escaped = true
			j++
		case c < 0x20 || c > 0x7e:
			return "", false
		}
	}
	return "", false
}

// integer consumes 1 to 16 decimal digits, the first not 0.
func (s *scanner) integer() (jsontext.Value, bool) {
	j := s.i
	for j < len(s.b) && j-s.i < 17 && '0' <= s.b[j] && s.b[j] <= '9' {
		j++
	}
	if j == s.i || j-s.i > 16 || s.b[s.i] == '0' {
		return nil, false
	}
	v := jsontext.Value(s.b[s.i:j])
	s.i = j
	return v, true
}

// array consumes [] or [S,S,…] of strings as str reads them, and
// returns their values (never nil, as the general path's).
func (s *scanner) array() ([]string, bool) {
	if !s.lit("[") {
		return nil, false
	}
	out := []string{}
	if s.lit("]") {
		return out, true
	}
	for {
		v, ok := s.str()
		if !ok {
			return nil, false
		}
		out = append(out, v)
		if s.lit("]") {
			return out, true
		}
		if !s.lit(",") {
			return nil, false
		}
	}
}

// unescape drops the backslash of each escape of v, which str has checked
// are all \" or \\.
func unescape(v string) string {
	var b strings.Builder
	b.Grow(len(v))
	for i := 0; i < len(v); i++ {
		if v[i] == '\\' {
			i++
		}
		b.WriteByte(v[i])
	}
	return b.String()
}
