package policy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"go.yaml.in/yaml/v3"

	"github.com/bankdoor/bankdoor/internal/atomicfile"
)

// Pin is what SetPins writes for one tool: its schema_sha256 and, if not
// empty, its definition_sha256 (64 lower-case hex digits each).
type Pin struct {
	Schema     string
	Definition string
}

// SetPins sets the pins of tools of server in the policy file at path to
// the values in pins: schema_sha256, and definition_sha256 where a Pin
// has one (an existing definition_sha256 is left alone otherwise).
//
// The file is edited as text, so comments, key order, quoting and layout
// are kept: an existing value is replaced where it stands; a missing
// schema_sha256 becomes the tool's first key, on a new line after the
// tool's name (block style) or after its "{" (flow style), and a missing
// definition_sha256 follows schema_sha256. Before writing, SetPins parses
// the result and checks that it means the same policy with only the pins
// changed; if not, it writes nothing and returns an error naming the tool
// to pin by hand. The file is replaced atomically (a temporary file in the
// same directory, fsync, rename), keeping its mode; a symbolic link is
// followed, not replaced.
//
// changed lists, sorted, the tools whose pins were added or altered; a
// tool whose pins already had the values is not listed and, if nothing
// changed, the file is not written. notInPolicy lists, sorted, the tools
// in pins that the policy does not allow for server: SetPins never adds a
// tool. The file must load without error first, and server must be in it.
func SetPins(path, server string, pins map[string]Pin) (changed, notInPolicy []string, err error) {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return nil, nil, fmt.Errorf("policy: %w", err)
	}
	data, mode, err := readPolicy(real)
	if err != nil {
		return nil, nil, err
	}
	out, changed, notInPolicy, err := pinText(path, data, server, pins)
	if err != nil || len(changed) == 0 {
		return nil, notInPolicy, err
	}
	if err := atomicfile.Write(real, out, mode); err != nil {
		return nil, nil, fmt.Errorf("policy: %w", err)
	}
	return changed, notInPolicy, nil
}

func readPolicy(path string) ([]byte, os.FileMode, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, fmt.Errorf("policy: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, 0, fmt.Errorf("policy: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, 0, fmt.Errorf("policy: %s is not a regular file", path)
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxSize+1))
	if err != nil {
		return nil, 0, fmt.Errorf("policy: %w", err)
	}
	return data, fi.Mode().Perm(), nil
}

// pinText returns data with the pins set, and the tools changed and
// missing. name is the file name for messages.
func pinText(name string, data []byte, server string, pins map[string]Pin) (out []byte, changed, missing []string, err error) {
	p, err := Parse(name, data)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("policy: fix %s before pinning: %w", name, err)
	}
	s := p.Servers[server]
	if s == nil {
		return nil, nil, nil, fmt.Errorf("policy: server %q is not in %s; add it under servers: (with its tools) first", server, name)
	}
	for _, tool := range sortedKeys(pins) {
		t := s.Tools[tool]
		switch {
		case t == nil:
			missing = append(missing, tool)
		case !isPin(pins[tool].Schema):
			return nil, nil, nil, fmt.Errorf("policy: pin %q for tool %q is not 64 lower-case hex digits", truncate(pins[tool].Schema), tool)
		case pins[tool].Definition != "" && !isPin(pins[tool].Definition):
			return nil, nil, nil, fmt.Errorf("policy: definition pin %q for tool %q is not 64 lower-case hex digits", truncate(pins[tool].Definition), tool)
		case t.SchemaSHA256 != pins[tool].Schema, pins[tool].Definition != "" && t.DefinitionSHA256 != pins[tool].Definition:
			changed = append(changed, tool)
		}
	}
	if len(changed) == 0 {
		return data, nil, missing, nil
	}
	out, err = applyPins(name, data, server, changed, pins)
	if err != nil {
		return nil, nil, nil, err
	}
	if err := checkPinned(name, out, p, server, pins); err != nil {
		return nil, nil, nil, err
	}
	return out, changed, missing, nil
}

// checkPinned checks that out parses to p with the pins of server set.
func checkPinned(name string, out []byte, p *Policy, server string, pins map[string]Pin) error {
	q, err := Parse(name, out)
	if err == nil {
		for tool, pin := range pins {
			if t := p.Servers[server].Tools[tool]; t != nil {
				t.SchemaSHA256 = pin.Schema
				if pin.Definition != "" {
					t.DefinitionSHA256 = pin.Definition
				}
			}
		}
		if !bytes.Equal(canonical(p), canonical(q)) {
			err = errors.New("the edited file would mean a different policy")
		}
	}
	if err != nil {
		return fmt.Errorf("policy: cannot set the pins in %s in place (%v); write the schema_sha256 and definition_sha256 lines by hand", name, err)
	}
	return nil
}

// edit replaces data[off:off+del] with ins.
type edit struct {
	off, del int
	ins      string
}

func applyPins(name string, data []byte, server string, tools []string, pins map[string]Pin) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil || len(doc.Content) != 1 {
		return nil, fmt.Errorf("policy: %s: cannot re-read the file: %v", name, err)
	}
	_, toolsNode := lookup(doc.Content[0], "servers")
	_, toolsNode = lookup(toolsNode, server)
	_, toolsNode = lookup(toolsNode, "tools")
	src := newSource(data)
	var edits []edit
	for _, tool := range tools {
		k, v := lookup(toolsNode, tool)
		if k == nil {
			return nil, fmt.Errorf("policy: %s: tool %q not found when re-reading the file", name, tool)
		}
		es, err := pinEdits(src, k, v, pins[tool])
		if err != nil {
			return nil, fmt.Errorf("policy: %s:%d:%d: tool %q: %w; write its schema_sha256 and definition_sha256 by hand", name, k.Line, k.Column, tool, err)
		}
		edits = append(edits, es...)
	}
	slices.SortFunc(edits, func(a, b edit) int { return b.off - a.off })
	out := bytes.Clone(data)
	for _, e := range edits {
		out = slices.Concat(out[:e.off], []byte(e.ins), out[e.off+e.del:])
	}
	return out, nil
}

// lookup returns the key and value of key in the mapping m, or nils.
func lookup(m *yaml.Node, key string) (k, v *yaml.Node) {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil, nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i], m.Content[i+1]
		}
	}
	return nil, nil
}
