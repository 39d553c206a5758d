package policy

import (
	"bytes"
	"errors"
	"strings"

	"go.yaml.in/yaml/v3"
)

// pinEdits returns the text edits that set the pins of the tool whose key
// and value nodes are k and v: schema_sha256 always, definition_sha256 if
// pin.Definition is set. An existing value is replaced where it stands; a
// missing schema_sha256 becomes the tool's first key, and a missing
// definition_sha256 follows schema_sha256. checkPinned catches an edit
// that lands somewhere unexpected, so these only need to be right for the
// layouts people write.
func pinEdits(src *source, k, v *yaml.Node, pin Pin) ([]edit, error) {
	if v.Kind != yaml.MappingNode {
		return nil, errors.New("its value is not a mapping")
	}
	schemaKey, schema := lookup(v, "schema_sha256")
	_, def := lookup(v, "definition_sha256")
	var edits []edit
	if def != nil && pin.Definition != "" {
		e, err := replacePin(src, def, pin.Definition)
		if err != nil {
			return nil, err
		}
		edits = append(edits, e)
	}
	addDef := def == nil && pin.Definition != ""
	if schema != nil {
		e, err := replacePin(src, schema, pin.Schema)
		if err != nil {
			return nil, err
		}
		edits = append(edits, e)
		if addDef {
			e, err := insertAfter(src, v, schemaKey, schema, pin.Definition)
			if err != nil {
				return nil, err
			}
			edits = append(edits, e)
		}
		return edits, nil
	}
	keys := []string{"schema_sha256: " + pinScalar(pin.Schema)}
	if addDef {
		keys = append(keys, "definition_sha256: "+pinScalar(pin.Definition))
	}
	var e edit
	var err error
	if v.Style&yaml.FlowStyle != 0 {
		e, err = insertFlow(src, v, keys)
	} else {
		e, err = insertBlock(src, k, v, keys)
	}
	if err != nil {
		return nil, err
	}
	return append(edits, e), nil
}

// replacePin replaces the 64 hex digits of an existing pin, plain or
// quoted, leaving the quotes.
func replacePin(src *source, old *yaml.Node, pin string) (edit, error) {
	off, quoted, err := pinValue(src, old)
	if err != nil {
		return edit{}, err
	}
	if !quoted {
		pin = pinScalar(pin)
	}
	return edit{off: off, del: len(old.Value), ins: pin}, nil
}

// pinValue returns the offset of a pin's 64 hex digits in the text, and
// whether they are quoted.
func pinValue(src *source, old *yaml.Node) (off int, quoted bool, err error) {
	off, ok := src.offset(old.Line, old.Column)
	if !ok {
		return 0, false, errors.New("cannot find its pin in the text")
	}
	quoted = old.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) != 0
	if quoted && off < len(src.data) {
		off++
	}
	if !bytes.HasPrefix(src.data[off:], []byte(old.Value)) {
		return 0, false, errors.New("its pin is written with escapes or across lines")
	}
	return off, quoted, nil
}

// insertAfter adds definition_sha256 after the existing schema_sha256:
// in a {…} mapping right after its value, in a block mapping on a new line
// after its line, indented like it.
func insertAfter(src *source, v, schemaKey, schema *yaml.Node, pin string) (edit, error) {
	off, quoted, err := pinValue(src, schema)
	if err != nil {
		return edit{}, err
	}
	end := off + len(schema.Value)
	if quoted {
		end++
	}
	if v.Style&yaml.FlowStyle != 0 {
		return edit{off: end, ins: ", definition_sha256: " + pinScalar(pin)}, nil
	}
	if schema.Line != schemaKey.Line || schemaKey.Line >= len(src.lines) {
		return edit{}, errors.New("its schema_sha256 does not stand on one line")
	}
	indent, err := indentOf(src, schemaKey)
	if err != nil {
		return edit{}, err
	}
	at := src.lines[schemaKey.Line] // the start of the next line
	return edit{off: at, ins: indent + "definition_sha256: " + pinScalar(pin) + eolAt(src, at)}, nil
}

// indentOf returns the spaces before a key that starts its line.
func indentOf(src *source, key *yaml.Node) (string, error) {
	start := src.lines[key.Line-1]
	keyOff, ok := src.offset(key.Line, key.Column)
	indent := string(src.data[start:keyOff])
	if !ok || strings.Trim(indent, " ") != "" {
		return "", errors.New("its keys are not indented with spaces alone")
	}
	return indent, nil
}

// eolAt is the line ending of the line that ends just before at.
func eolAt(src *source, at int) string {
	if at >= 2 && src.data[at-2] == '\r' {
		return "\r\n"
	}
	return "\n"
}

// pinScalar returns pin as a YAML scalar: plain, unless YAML would read
// it as a number (all digits, or digits around one e), then quoted.
func pinScalar(pin string) string {
	if (&yaml.Node{Kind: yaml.ScalarNode, Value: pin}).ShortTag() == "!!str" {
		return pin
	}
	return `"` + pin + `"`
}

// insertFlow adds the pin keys as the first keys of a {…} mapping.
func insertFlow(src *source, v *yaml.Node, keys []string) (edit, error) {
	off, ok := src.offset(v.Line, v.Column)
	if !ok || src.data[off] != '{' {
		return edit{}, errors.New("cannot find the \"{\" of its mapping")
	}
	if len(v.Content) == 0 {
		return edit{off: off + 1, ins: strings.Join(keys, ", ")}, nil
	}
	first := v.Content[0]
	if off, ok = src.offset(first.Line, first.Column); !ok {
		return edit{}, errors.New("cannot find its first key")
	}
	return edit{off: off, ins: strings.Join(keys, ", ") + ", "}, nil
}

// insertBlock adds the pin keys as new lines right after the tool's name,
// indented like the tool's first key, so that comments above that key
// stay with it.
func insertBlock(src *source, k, v *yaml.Node, keys []string) (edit, error) {
	first := v.Content[0]
	if first.Line <= k.Line || first.Line > len(src.lines) {
		return edit{}, errors.New("its keys do not start on a line of their own")
	}
	indent, err := indentOf(src, first)
	if err != nil {
		return edit{}, err
	}
	at := src.lines[k.Line] // the start of the line after the name
	eol := eolAt(src, at)
	var b strings.Builder
	for _, key := range keys {
		b.WriteString(indent + key + eol)
	}
	return edit{off: at, ins: b.String()}, nil
}
