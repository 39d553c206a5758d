package policy

import (
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"
)

// field is one key of a mapping whose keys are fixed.
type field struct {
	key string
	// need, if not "", makes the key required and says how to add it.
	need string
	set  func(k, v *yaml.Node)
}

// fields decodes the mapping n, described in messages as what (for
// example `argument "limit"`), calling the set function of each key's
// field. Keys not in fs, duplicate keys and missing required keys are
// errors.
func (d *decoder) fields(n *yaml.Node, what string, fs []field) {
	seen := make(map[string]bool)
	ok := d.entries(n, what, func(k, v *yaml.Node) {
		for _, f := range fs {
			if f.key == k.Value {
				seen[f.key] = true
				f.set(k, v)
				return
			}
		}
		d.errorf(k, "unknown key %q in %s (known: %s)", truncate(k.Value), what, knownKeys(fs))
	})
	if !ok {
		return
	}
	for _, f := range fs {
		if f.need != "" && !seen[f.key] {
			d.errorf(n, "missing key %q in %s; add %s", f.key, what, f.need)
		}
	}
}

func knownKeys(fs []field) string {
	keys := make([]string, len(fs))
	for i, f := range fs {
		keys[i] = f.key
	}
	return strings.Join(keys, ", ")
}

// entries calls fn with each key and value of the mapping n, in file order.
// It reports false, after recording the error, if n is not a mapping. Keys
// that are not scalars and keys seen before are errors and are skipped.
func (d *decoder) entries(n *yaml.Node, what string, fn func(k, v *yaml.Node)) bool {
	if n.Kind != yaml.MappingNode {
		d.errorf(n, "%s must be a mapping, found %s; %s", what, describe(n), mappingFix(n))
		return false
	}
	first := make(map[string]*yaml.Node)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			d.errorf(k, "a key in %s is %s; keys must be names", what, describe(k))
			continue
		}
		if prev, dup := first[k.Value]; dup {
			d.errorf(k, "duplicate key %q in %s (first at line %d, column %d); remove one of them",
				truncate(k.Value), what, prev.Line, prev.Column)
			continue
		}
		first[k.Value] = k
		fn(k, v)
	}
	return true
}

func mappingFix(n *yaml.Node) string {
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
		return "write {} for an empty one"
	}
	return "write indented \"key: value\" lines or {key: value}"
}

// list returns the items of the sequence n.
func (d *decoder) list(n *yaml.Node, what string) ([]*yaml.Node, bool) {
	if n.Kind != yaml.SequenceNode {
		d.errorf(n, "%s must be a list, found %s; write [a, b] or indented \"- a\" lines", what, describe(n))
		return nil, false
	}
	return n.Content, true
}

// str returns the value of the string scalar n.
func (d *decoder) str(n *yaml.Node, what string) (string, bool) {
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!str" {
		d.errorf(n, "%s must be a string, found %s; %s", what, describe(n), quoteFix(n))
		return "", false
	}
	return n.Value, true
}

func quoteFix(n *yaml.Node) string {
	if n.Kind == yaml.ScalarNode {
		return "put it in quotes"
	}
	return "write a single string"
}

// boolean returns the value of the boolean scalar n, written true or false.
func (d *decoder) boolean(n *yaml.Node, what string) (bool, bool) {
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" || (n.Value != "true" && n.Value != "false") {
		d.errorf(n, "%s must be true or false, found %s; write true or false", what, describe(n))
		return false, false
	}
	return n.Value == "true", true
}

// validName reports whether s is 1 to max bytes of [A-Za-z0-9_-], plus '.'
// if dot is true.
func validName(s string, max int, dot bool) bool {
	if len(s) == 0 || len(s) > max {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		ok := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
			c == '_' || c == '-' || dot && c == '.'
		if !ok {
			return false
		}
	}
	return true
}

// nameError records that the key k is not a valid name of the given kind.
func (d *decoder) nameError(k *yaml.Node, kind, charset string, max int, why string) {
	d.errorf(k, "%s name %s is not 1 to %d characters of %s; rename it (%s)",
		kind, fmt.Sprintf("%q", truncate(k.Value)), max, charset, why)
}
