package receipt

import (
	"bytes"

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
	s := scanner{b: b}
	if !s.lit(`{"arg_names":`) {
		return nil, sig, false
	}
	r = new(Receipt)
	args, ok := s.array()
	if !ok || r.set("arg_names", args) != nil {
		return nil, sig, false
	}
	for _, m := range members()[1:] {
		start := s.i
		if !s.lit(`,"`) || !s.lit(m) || !s.lit(`":`) {
			return nil, sig, false
		}
		var v jsontext.Value
		if m == "seq" || m == "v" {
			v, ok = s.integer()
		} else {
			v, ok = s.str()
		}
		if !ok || r.set(m, v) != nil {
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

// scanner reads b from i on.
type scanner struct {
	b []byte
	i int
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
// only escaped, as \" and \\.
func (s *scanner) str() (jsontext.Value, bool) {
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return nil, false
	}
	for j := s.i + 1; j < len(s.b); j++ {
		switch c := s.b[j]; {
		case c == '"':
			v := jsontext.Value(s.b[s.i : j+1])
			s.i = j + 1
			return v, true
		case c == '\\':
			if j+1 == len(s.b) || s.b[j+1] != '"' && s.b[j+1] != '\\' {
				return nil, false
			}
			j++
		case c < 0x20 || c > 0x7e:
			return nil, false
		}
	}
	return nil, false
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

// array consumes [] or [S,S,…] of strings as str reads them.
func (s *scanner) array() (jsontext.Value, bool) {
	start := s.i
	if !s.lit("[") {
		return nil, false
	}
	if !s.lit("]") {
		for {
			if _, ok := s.str(); !ok {
				return nil, false
			}
			if s.lit("]") {
				break
			}
			if !s.lit(",") {
				return nil, false
			}
		}
	}
	return jsontext.Value(s.b[start:s.i]), true
}
