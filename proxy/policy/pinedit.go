package policy

import (
	"bytes"
	"errors"
	"strings"

	"go.yaml.in/yaml/v3"
)

// pinEdit returns the text edit that sets the pin of the tool whose key
// and value nodes are k and v. checkPinned catches an edit that lands
// somewhere unexpected, so these only need to be right for the layouts
// people write.
func pinEdit(src *source, k, v *yaml.Node, pin string) (edit, error) {
	if v.Kind != yaml.MappingNode {
		return edit{}, errors.New("its value is not a mapping")
	}
	if _, old := lookup(v, "schema_sha256"); old != nil {
		return replacePin(src, old, pin)
	}
	if v.Style&yaml.FlowStyle != 0 {
		return insertFlow(src, v, pin)
	}
	return insertBlock(src, k, v, pin)
}

// replacePin replaces the 64 hex digits of an existing pin, plain or
// quoted, leaving the quotes.
func replacePin(src *source, old *yaml.Node, pin string) (edit, error) {
	off, ok := src.offset(old.Line, old.Column)
	if !ok {
		return edit{}, errors.New("cannot find schema_sha256 in the text")
	}
	quoted := old.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) != 0
	if quoted && off < len(src.data) {
		off++
	}
	if !bytes.HasPrefix(src.data[off:], []byte(old.Value)) {
		return edit{}, errors.New("schema_sha256 is written with escapes or across lines")
	}
	if !quoted {
		pin = pinScalar(pin)
	}
	return edit{off: off, del: len(old.Value), ins: pin}, nil
}

// pinScalar returns pin as a YAML scalar: plain, unless YAML would read
// it as a number (all digits, or digits around one e), then quoted.
func pinScalar(pin string) string {
	if (&yaml.Node{Kind: yaml.ScalarNode, Value: pin}).ShortTag() == "!!str" {
		return pin
	}
	return `"` + pin + `"`
}

// insertFlow adds the pin as the first key of a {…} mapping.
func insertFlow(src *source, v *yaml.Node, pin string) (edit, error) {
	off, ok := src.offset(v.Line, v.Column)
	if !ok || src.data[off] != '{' {
		return edit{}, errors.New("cannot find the \"{\" of its mapping")
	}
	if len(v.Content) == 0 {
		return edit{off: off + 1, ins: "schema_sha256: " + pinScalar(pin)}, nil
	}
	first := v.Content[0]
	if off, ok = src.offset(first.Line, first.Column); !ok {
		return edit{}, errors.New("cannot find its first key")
	}
	return edit{off: off, ins: "schema_sha256: " + pinScalar(pin) + ", "}, nil
}

// insertBlock adds the pin as a new line right after the tool's name,
// indented like the tool's first key, so that comments above that key
// stay with it.
func insertBlock(src *source, k, v *yaml.Node, pin string) (edit, error) {
	first := v.Content[0]
	if first.Line <= k.Line || first.Line > len(src.lines) {
		return edit{}, errors.New("its keys do not start on a line of their own")
	}
	start := src.lines[first.Line-1]
	keyOff, ok := src.offset(first.Line, first.Column)
	indent := string(src.data[start:keyOff])
	if !ok || strings.Trim(indent, " ") != "" {
		return edit{}, errors.New("its first key is not indented with spaces alone")
	}
	at := src.lines[k.Line] // the start of the line after the name
	eol := "\n"
	if at >= 2 && src.data[at-2] == '\r' {
		eol = "\r\n"
	}
	return edit{off: at, ins: indent + "schema_sha256: " + pinScalar(pin) + eol}, nil
}
