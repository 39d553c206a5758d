package attacks

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
)

// A receipt records argument names and a hash of the arguments, never an
// argument's value (DESIGN §5). Leaks checks that over every attack: it
// takes every token inside the arguments an attack sends, values at any
// depth and member names below the top level (a nested name is part of a
// value), and looks for any run of minWindow bytes of one of them in the
// receipt. Only the top-level argument names may appear, as arg_names and
// in reasons.

// minWindow is the length of the byte runs Leaks looks for: every run of
// that many bytes of a value, or the whole value if it is shorter but at
// least minValue bytes.
const (
	minWindow = 8
	minValue  = 4
)

// receiptDigests are the receipt members that hold hashes, keys, a time
// or a signature: hex and base64 that could match a short number by
// chance, and that carry no text.
var receiptDigests = []string{"args_sha256", "policy_sha256", "prev", "key_id", "sig", "time", "seq", "v"}

// Leaks returns the runs of a's argument values found in receipt (the
// receipt file's bytes): empty for a receipt that keeps its promise.
func Leaks(a Attack, receipt []byte) []string {
	values, names := ArgumentTokens(a)
	text := receiptText(receipt)
	var found []string
	seen := map[string]bool{}
	for _, v := range values {
		for _, form := range forms(v) {
			for _, w := range windows(form) {
				if seen[w] || slices.ContainsFunc(names, func(n string) bool { return strings.Contains(n, w) }) {
					continue
				}
				seen[w] = true
				if bytes.Contains(text, []byte(w)) {
					found = append(found, w)
				}
			}
		}
	}
	return found
}

// receiptText is the receipt without its digests and its tool member (the
// tool name is not an argument).
func receiptText(receipt []byte) []byte {
	var m map[string]json.RawMessage
	if json.Unmarshal(receipt, &m) != nil {
		return receipt
	}
	for _, k := range append(receiptDigests, "tool") {
		delete(m, k)
	}
	b, _ := json.Marshal(m)
	return b
}

// forms are a value as it may stand in a receipt: as is, and escaped as
// JSON (and so as a reason quoting it would put it).
func forms(v string) []string {
	esc, _ := json.Marshal(v)
	out := []string{v}
	if e := string(bytes.Trim(esc, `"`)); e != v {
		out = append(out, e)
	}
	return out
}

// windows are the runs of minWindow bytes of v, or v itself if shorter.
func windows(v string) []string {
	if len(v) < minValue {
		return nil
	}
	if len(v) <= minWindow {
		return []string{v}
	}
	seen := map[string]bool{}
	var out []string
	for i := 0; i+minWindow <= len(v); i++ {
		if w := v[i : i+minWindow]; !seen[w] {
			seen[w] = true
			out = append(out, w)
		}
	}
	return out
}

// ArgumentTokens returns the tokens of the arguments a sends: values
// (strings decoded, numbers as written, at any depth, and member names
// below the top level), and separately the top-level argument names. For
// a raw frame the arguments are params.arguments, read as far as the
// frame is well-formed.
func ArgumentTokens(a Attack) (values, names []string) {
	if !a.Raw() {
		if a.Args == nil {
			return nil, nil
		}
		raw, err := json.Marshal(a.Args)
		if err != nil {
			return nil, nil
		}
		return scanTokens(raw, nil)
	}
	return scanTokens(bytes.Replace(a.Frame, []byte("$ID"), []byte(`"raw"`), 1), []string{"params", "arguments"})
}

// container is an object or array being read, and where.
type container struct {
	path      []string // the member names leading to it
	object    bool
	expectKey bool
	key       string
}

// scanTokens reads the tokens of raw, tolerating duplicate names, invalid
// UTF-8 and a syntax error (where it stops), and returns those inside the
// value at path ([] for the root), split as ArgumentTokens says.
func scanTokens(raw []byte, path []string) (values, names []string) {
	dec := jsontext.NewDecoder(bytes.NewReader(raw), jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	var stack []*container
	// where returns the path of the value about to be read.
	where := func() []string {
		if len(stack) == 0 {
			return nil
		}
		top := stack[len(stack)-1]
		if top.object {
			return append(slices.Clone(top.path), top.key)
		}
		return append(slices.Clone(top.path), "[]")
	}
	inside := func(p []string) bool { return len(p) >= len(path) && slices.Equal(p[:len(path)], path) }
	for {
		tok, err := dec.ReadToken()
		if err != nil {
			return values, names
		}
		var top *container
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top != nil && top.object && top.expectKey && tok.Kind() == '"' {
			name := tok.String()
			top.key, top.expectKey = name, false
			switch {
			case slices.Equal(top.path, path):
				names = append(names, name)
			case inside(top.path):
				values = append(values, name)
			}
			continue
		}
		switch tok.Kind() {
		case '{', '[':
			stack = append(stack, &container{path: where(), object: tok.Kind() == '{', expectKey: tok.Kind() == '{'})
			continue
		case '}', ']':
			stack = stack[:len(stack)-1]
		case '"':
			if inside(where()) {
				values = append(values, tok.String())
			}
		case '0':
			if inside(where()) {
				values = append(values, tok.String())
			}
		}
		if len(stack) > 0 && stack[len(stack)-1].object {
			stack[len(stack)-1].expectKey = true
		}
	}
}
