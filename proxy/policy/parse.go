package policy

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// MaxSize is the largest policy file Load and Parse accept, in bytes.
const MaxSize = 1 << 20

// Load reads and parses the policy file at path. Errors in the file are
// reported as for Parse, with path as the file name; an error opening or
// reading the file wraps the error from package os.
func Load(path string) (*Policy, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxSize+1))
	if err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	return Parse(path, data)
}

// Parse parses and validates a policy file's contents; name is the file
// name used in errors and stored in Policy.Path. It returns either a
// complete, valid Policy and a nil error, or a nil Policy and every problem
// it found, each an *Error, joined with errors.Join.
func Parse(name string, data []byte) (*Policy, error) {
	d := &decoder{file: name}
	root := d.document(data)
	if root == nil {
		return nil, d.err()
	}
	p := d.policy(root)
	d.checkAcknowledgements(p)
	if len(d.errs) > 0 {
		return nil, d.err()
	}
	sum := sha256.Sum256(data)
	p.Path = name
	p.SHA256 = hex.EncodeToString(sum[:])
	return p, nil
}

// document checks the raw text and decodes its one YAML document, returning
// the document's top-level node, or nil after recording errors.
func (d *decoder) document(data []byte) *yaml.Node {
	if len(data) > MaxSize {
		d.errorAt(0, 0, fmt.Sprintf("the file is larger than %d bytes; a policy needs far less, so this is not a policy file", MaxSize))
		return nil
	}
	if line, col, msg := checkText(data); msg != "" {
		d.errorAt(line, col, msg)
		return nil
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc, next yaml.Node
	if err := dec.Decode(&doc); err != nil {
		d.yamlError(err)
		return nil
	}
	switch err := dec.Decode(&next); {
	case err == nil:
		d.errorf(&next, "a second YAML document starts here; a policy file holds one document, remove the \"---\" and what follows")
		return nil
	case !errors.Is(err, io.EOF):
		d.yamlError(err)
		return nil
	}
	if len(doc.Content) != 1 {
		d.errorAt(0, 0, "the file holds no YAML document; start it with \"version: 1\"")
		return nil
	}
	d.plain(newSource(data), &doc)
	if len(d.errs) > 0 {
		return nil
	}
	return doc.Content[0]
}

// yamlError records a syntax error from yaml.v3, which reports a line (not
// always exact, and none for errors on the first line) but no column.
func (d *decoder) yamlError(err error) {
	if errors.Is(err, io.EOF) {
		d.errorAt(0, 0, "the file holds no YAML document; start it with \"version: 1\"")
		return
	}
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	if rest, ok := strings.CutPrefix(msg, "line "); ok {
		num, text, _ := strings.Cut(rest, ": ")
		if line, err := strconv.Atoi(num); err == nil && line > 0 {
			d.errorAt(line, 0, "invalid YAML: "+text+"; fix the syntax near this line")
			return
		}
	}
	d.errorAt(0, 0, "invalid YAML: "+msg+"; fix the syntax")
}

// plain rejects, anywhere in the tree, YAML features that make a security
// file say something other than what it seems to say: anchors and aliases
// (a value defined elsewhere), merge keys, and tags, including the
// non-specific tag "!" that yaml.v3 does not report on the node.
func (d *decoder) plain(src *source, n *yaml.Node) {
	switch {
	case n.Kind == yaml.AliasNode:
		d.errorf(n, "alias *%s: anchors and aliases are not allowed in a policy; write the value out in full", n.Value)
		return
	case n.Anchor != "":
		d.errorf(n, "anchor &%s: anchors and aliases are not allowed in a policy; remove it and write values out in full", n.Anchor)
	case n.Style&yaml.TaggedStyle != 0 || n.Kind == yaml.ScalarNode && src.at(n.Line, n.Column) == '!':
		d.errorf(n, "YAML tags are not allowed in a policy; remove the tag and quote the value if it is a string")
	case n.Kind == yaml.ScalarNode && n.Tag == "!!merge":
		d.errorf(n, "merge key \"<<\" is not allowed in a policy; write the keys out in full")
	}
	for _, c := range n.Content {
		d.plain(src, c)
	}
}
