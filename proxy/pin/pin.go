// Package pin computes the pins of an MCP tool definition: schema_sha256,
// over four of its members, and definition_sha256, over all of them.
//
// # Pin Format
//
// schema_sha256 is the lower-case hex SHA-256 of the RFC 8785 (JCS)
// canonical JSON of the object
//
//	{"annotations": …, "description": …, "inputSchema": …, "name": …}
//
// whose members are copied from the tool definition exactly as the server
// sent it in its tools/list result; members the server did not send are
// omitted, and every other member of the definition (title, outputSchema,
// _meta, …) is left out of it. Tools outside bankdoor compute it, so its
// meaning never changes.
//
// definition_sha256 is the lower-case hex SHA-256 of the RFC 8785
// canonical JSON of the whole tool definition, every member the server
// sent: a change to title, icons, outputSchema, execution, _meta or any
// member a later protocol version adds changes it.
//
// Both hashes are taken over the bytes the server sent, never over a
// re-encoded SDK struct, so a server that changes any byte of a covered
// member changes the pin. A definition that is not I-JSON (a duplicate
// member name, invalid UTF-8, a lone surrogate) has neither.
//
// # Example
//
// The definition
//
//	{"name":"get_balances","description":"Balances.","inputSchema":{"type":"object"},"title":"x"}
//
// has schema_sha256 the SHA-256 of
//
//	{"description":"Balances.","inputSchema":{"type":"object"},"name":"get_balances"}
//
// and definition_sha256 the SHA-256 of
//
//	{"description":"Balances.","inputSchema":{"type":"object"},"name":"get_balances","title":"x"}
package pin

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/bankdoor/bankdoor/internal/jcs"
	"github.com/bankdoor/bankdoor/internal/jsonobj"
)

// Pinned lists the members of a tool definition that the pin covers.
var Pinned = []string{"name", "description", "inputSchema", "annotations"}

// Tool is one tool definition from a tools/list result.
type Tool struct {
	Name       string
	Raw        []byte // the definition exactly as the server sent it
	SHA256     string // its schema_sha256
	Definition string // its definition_sha256
}

// List is one page of a tools/list result.
type List struct {
	Tools []Tool
	// NextCursor is the raw JSON of the nextCursor member, nil if absent.
	NextCursor []byte
}

// Hash returns the name and schema_sha256 of one raw tool definition.
// The definition must be a JSON object with a string member "name".
func Hash(raw []byte) (name, sum string, err error) {
	members, err := jsonobj.Parse(raw)
	if err != nil {
		return "", "", fmt.Errorf("tool definition: %w", err)
	}
	nameRaw := members.Get("name")
	if nameRaw == nil {
		return "", "", errors.New(`tool definition: no "name" member`)
	}
	name, ok := jsonobj.String(nameRaw)
	if !ok {
		return "", "", errors.New(`tool definition: "name" is not a string`)
	}
	var b bytes.Buffer
	b.WriteByte('{')
	first := true
	for _, k := range Pinned {
		v := members.Get(k)
		if v == nil {
			continue
		}
		if !first {
			b.WriteByte(',')
		}
		first = false
		fmt.Fprintf(&b, "%q:", k)
		b.Write(v)
	}
	b.WriteByte('}')
	canon, err := jcs.Canonicalize(b.Bytes())
	if err != nil {
		return "", "", fmt.Errorf("tool %q: %w", name, err)
	}
	h := sha256.Sum256(canon)
	return name, hex.EncodeToString(h[:]), nil
}

// HashDefinition returns the definition_sha256 of one raw tool definition.
func HashDefinition(raw []byte) (string, error) {
	canon, err := jcs.Canonicalize(raw)
	if err != nil {
		return "", fmt.Errorf("tool definition: %w", err)
	}
	h := sha256.Sum256(canon)
	return hex.EncodeToString(h[:]), nil
}

// ParseList parses the result member of a tools/list response.
func ParseList(result []byte) (*List, error) {
	members, err := jsonobj.Parse(result)
	if err != nil {
		return nil, fmt.Errorf("tools/list result: %w", err)
	}
	toolsRaw := members.Get("tools")
	if toolsRaw == nil {
		return nil, errors.New(`tools/list result: no "tools" member`)
	}
	l := &List{NextCursor: members.Get("nextCursor")}
	dec := jsontext.NewDecoder(bytes.NewReader(toolsRaw))
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '[' {
		return nil, errors.New(`tools/list result: "tools" is not an array`)
	}
	for dec.PeekKind() != ']' {
		v, err := dec.ReadValue()
		if err != nil {
			return nil, fmt.Errorf("tools/list result: %w", err)
		}
		raw := bytes.Clone(v)
		name, sum, err := Hash(raw)
		if err != nil {
			return nil, fmt.Errorf("tools/list result: tool %d: %w", len(l.Tools), err)
		}
		def, err := HashDefinition(raw)
		if err != nil {
			return nil, fmt.Errorf("tools/list result: tool %q: %w", name, err)
		}
		l.Tools = append(l.Tools, Tool{Name: name, Raw: raw, SHA256: sum, Definition: def})
	}
	return l, nil
}
