// Package jsonobj splits one JSON object into its members without decoding
// their values, for protocol code that must relay bytes exactly as received
// while looking at a few members.
//
// Parse is strict (RFC 8259 with the I-JSON rules of RFC 7493: no duplicate
// member names, valid UTF-8, no lone surrogates) at every depth: the whole
// value is checked once, by github.com/go-json-experiment/json/jsontext.
// ParseLenient checks only the top level's member names for duplicates and
// lets invalid UTF-8 and duplicate names inside member values through, so
// that a later, more specific check of a value can name the problem. In
// lenient mode invalid UTF-8 in a member name is replaced by U+FFFD, so
// such a name never equals a name the caller expects.
package jsonobj

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/go-json-experiment/json/jsontext"
)

// Member is one member of an object: its name and its value's raw bytes.
type Member struct {
	Name  string
	Value jsontext.Value
}

// Object is the members of one JSON object, in the order they appeared.
type Object []Member

// ErrNotObject is returned (wrapped) when the value is not a JSON object.
var ErrNotObject = errors.New("not a JSON object")

// DuplicateError reports a member name that appears twice at the top
// level. Parse reports a duplicate below it as jsontext does, with a
// *jsontext.SyntacticError wrapping jsontext.ErrDuplicateName.
type DuplicateError struct{ Name string }

func (e *DuplicateError) Error() string { return fmt.Sprintf("duplicate member %q", e.Name) }

// Parse splits raw, which must be exactly one strict JSON object, into its
// members.
func Parse(raw []byte) (Object, error) { return parse(raw, false) }

// ParseLenient is Parse but lets invalid UTF-8 and duplicate member names
// through inside member values.
func ParseLenient(raw []byte) (Object, error) { return parse(raw, true) }

func parse(raw []byte, lenient bool) (Object, error) {
	dec := jsontext.NewDecoder(bytes.NewReader(raw),
		jsontext.AllowDuplicateNames(lenient), jsontext.AllowInvalidUTF8(lenient))
	tok, err := dec.ReadToken()
	if err != nil {
		return nil, err
	}
	if tok.Kind() != '{' {
		return nil, fmt.Errorf("%w (found %s)", ErrNotObject, kindName(tok.Kind()))
	}
	var obj Object
	for dec.PeekKind() != '}' {
		name, err := dec.ReadToken()
		if err != nil {
			return nil, topDuplicate(err)
		}
		n := name.String() // before ReadValue, which voids the token
		v, err := dec.ReadValue()
		if err != nil {
			return nil, err
		}
		if obj.Has(n) { // lenient only: jsontext found it otherwise
			return nil, &DuplicateError{Name: n}
		}
		obj = append(obj, Member{Name: n, Value: bytes.Clone(v)})
	}
	if _, err := dec.ReadToken(); err != nil {
		return nil, err
	}
	if _, err := dec.ReadToken(); err != io.EOF {
		return nil, errors.New("data after the JSON object")
	}
	return obj, nil
}

// topDuplicate turns jsontext's error for a repeated top-level name into
// a DuplicateError, and returns any other error as it is.
func topDuplicate(err error) error {
	var se *jsontext.SyntacticError
	if errors.As(err, &se) && se.Err == jsontext.ErrDuplicateName && se.JSONPointer.Parent() == "" {
		return &DuplicateError{Name: se.JSONPointer.LastToken()}
	}
	return err
}

// Get returns the raw value of the named member, or nil.
func (o Object) Get(name string) jsontext.Value {
	for _, m := range o {
		if m.Name == name {
			return m.Value
		}
	}
	return nil
}

// Has reports whether the object has the named member.
func (o Object) Has(name string) bool { return o.Get(name) != nil }

// Names returns the member names in order.
func (o Object) Names() []string {
	names := make([]string, len(o))
	for i, m := range o {
		names[i] = m.Name
	}
	return names
}

// Marshal writes the members back as one JSON object, in order. Values are
// copied byte for byte.
func (o Object) Marshal() []byte {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		q, _ := jsontext.AppendQuote(nil, m.Name)
		b.Write(q)
		b.WriteByte(':')
		b.Write(m.Value)
	}
	b.WriteByte('}')
	return b.Bytes()
}

// String returns the Go string of a raw JSON string value, and whether raw
// was a JSON string.
func String(raw jsontext.Value) (string, bool) {
	if raw.Kind() != '"' {
		return "", false
	}
	tok, err := jsontext.NewDecoder(bytes.NewReader(raw), jsontext.AllowInvalidUTF8(true)).ReadToken()
	if err != nil {
		return "", false
	}
	return tok.String(), true
}

func kindName(k jsontext.Kind) string {
	switch k {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case '0':
		return "number"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	return "invalid"
}
