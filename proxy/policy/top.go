package policy

import (
	"fmt"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Limits on names, from the gate's checks and the receipt format.
const (
	maxIDLen     = 64
	maxServerLen = 64
	maxToolLen   = 128 // the gate's name.charset limit
	maxArgLen    = 64
	maxWordLen   = 64
	maxArgs      = 32 // the gate's limit on argument keys per call
)

// policy decodes the top-level mapping.
func (d *decoder) policy(n *yaml.Node) *Policy {
	p := &Policy{Receipts: "deny", Servers: make(map[string]*Server)}
	d.fields(n, "the policy", []field{
		{key: "version", need: "version: 1", set: func(_, v *yaml.Node) { p.Version = d.version(v) }},
		{key: "id", need: "id: NAME (for example id: my-bank-readonly)", set: func(_, v *yaml.Node) { p.ID = d.id(v) }},
		{key: "default", need: "default: deny", set: func(_, v *yaml.Node) { p.Default = d.deflt(v) }},
		{key: "require_pins", set: func(_, v *yaml.Node) { p.RequirePins, _ = d.boolean(v, `"require_pins"`) }},
		{key: "never_allow", set: func(_, v *yaml.Node) { p.NeverAllow = d.neverAllow(v) }},
		{key: "receipts", set: func(_, v *yaml.Node) { p.Receipts = d.receipts(v) }},
		{key: "servers", need: "servers: with one entry per bank server", set: func(_, v *yaml.Node) { p.Servers = d.servers(v) }},
	})
	return p
}

func (d *decoder) version(n *yaml.Node) int {
	v, ok := d.integer(n, `"version"`)
	if ok && v != 1 {
		d.errorf(n, "version %d is not supported; this bankdoor reads version: 1", v)
	}
	return int(v)
}

func (d *decoder) id(n *yaml.Node) string {
	s, ok := d.str(n, `"id"`)
	if ok && !validName(s, maxIDLen, true) {
		d.errorf(n, "id %q is not 1 to %d characters of [A-Za-z0-9._-]; rename it (it is copied into every receipt)", truncate(s), maxIDLen)
	}
	return s
}

func (d *decoder) deflt(n *yaml.Node) string {
	s, ok := d.str(n, `"default"`)
	if ok && s != "deny" {
		d.errorf(n, "default %q is not supported; write default: deny (bankdoor only allows what the policy lists)", truncate(s))
	}
	return s
}

func (d *decoder) receipts(n *yaml.Node) string {
	s, ok := d.str(n, `"receipts"`)
	if ok && s != "deny" && s != "all" {
		d.errorf(n, "receipts %q is not one of deny, all; write receipts: deny (sign denied calls) or receipts: all (sign every call)", truncate(s))
	}
	return s
}

// neverAllow decodes the extra write words, storing them lower-case.
func (d *decoder) neverAllow(n *yaml.Node) []string {
	items, _ := d.list(n, `"never_allow"`)
	var words []string
	seen := make(map[string]bool)
	for _, item := range items {
		s, ok := d.str(item, "a never_allow word")
		if !ok {
			continue
		}
		w := strings.ToLower(s)
		switch {
		case !isWord(w):
			d.errorf(item, "never_allow word %q is not 1 to %d ASCII letters and digits; write the word alone, for example borrow", truncate(s), maxWordLen)
		case seen[w]:
			d.errorf(item, "never_allow word %q is listed twice; remove one", truncate(s))
		default:
			seen[w] = true
			words = append(words, w)
		}
	}
	return words
}

func isWord(w string) bool {
	if len(w) == 0 || len(w) > maxWordLen {
		return false
	}
	for i := 0; i < len(w); i++ {
		if !('a' <= w[i] && w[i] <= 'z' || '0' <= w[i] && w[i] <= '9') {
			return false
		}
	}
	return true
}

func (d *decoder) servers(n *yaml.Node) map[string]*Server {
	m := make(map[string]*Server)
	ok := d.entries(n, `"servers"`, func(k, v *yaml.Node) {
		if !validName(k.Value, maxServerLen, false) {
			d.nameError(k, "server", "[A-Za-z0-9_-]", maxServerLen, "it is the name the proxy is given for the server")
			return
		}
		m[k.Value] = d.server(k, v)
	})
	if ok && len(n.Content) == 0 {
		d.errorf(n, "\"servers\" is empty; add the bank server the proxy relays to")
	}
	return m
}

func (d *decoder) server(k, v *yaml.Node) *Server {
	s := &Server{Name: k.Value, TraceContext: TraceContextDrop, Tools: make(map[string]*Tool), Line: k.Line, Column: k.Column}
	what := fmt.Sprintf("server %q", s.Name)
	d.fields(v, what, []field{
		{key: "expose", set: func(_, v *yaml.Node) { s.Expose = d.expose(v, what) }},
		{key: "trace_context", set: func(_, v *yaml.Node) { s.TraceContext = d.traceContext(v, what) }},
		{key: "tools", set: func(_, v *yaml.Node) { s.Tools = d.tools(v, what) }},
	})
	return s
}

func (d *decoder) traceContext(n *yaml.Node, server string) string {
	s, ok := d.str(n, fmt.Sprintf(`"trace_context" of %s`, server))
	if ok && s != TraceContextDrop && s != TraceContextForward {
		d.errorf(n, "trace_context %q is not one of drop, forward; write trace_context: drop (the bank never sees trace context, the default) or trace_context: forward (the bank sees the proxy's span)", truncate(s))
	}
	return s
}

func (d *decoder) expose(n *yaml.Node, server string) []string {
	items, _ := d.list(n, fmt.Sprintf(`"expose" of %s`, server))
	var out []string
	for _, item := range items {
		f, ok := d.str(item, "an expose entry")
		switch {
		case !ok:
		case !slices.Contains(Features, f):
			d.errorf(item, "expose entry %q is not a feature bankdoor can relay; use one of %s", truncate(f), strings.Join(Features, ", "))
		case slices.Contains(out, f):
			d.errorf(item, "expose entry %q is listed twice; remove one", f)
		default:
			out = append(out, f)
		}
	}
	return out
}

func (d *decoder) tools(n *yaml.Node, server string) map[string]*Tool {
	m := make(map[string]*Tool)
	d.entries(n, fmt.Sprintf(`"tools" of %s`, server), func(k, v *yaml.Node) {
		if !validName(k.Value, maxToolLen, false) {
			d.nameError(k, "tool", "[A-Za-z0-9_-]", maxToolLen, "the gate denies any other tool name")
			return
		}
		m[k.Value] = d.tool(k, v)
	})
	return m
}

func (d *decoder) tool(k, v *yaml.Node) *Tool {
	t := &Tool{Name: k.Value, Args: make(map[string]*Arg), Line: k.Line, Column: k.Column}
	what := fmt.Sprintf("tool %q", t.Name)
	d.fields(v, what, []field{
		{key: "schema_sha256", set: func(_, v *yaml.Node) { t.SchemaSHA256 = d.pin(v, "schema_sha256", what) }},
		{key: "definition_sha256", set: func(_, v *yaml.Node) { t.DefinitionSHA256 = d.pin(v, "definition_sha256", what) }},
		{key: "acknowledge", set: func(_, v *yaml.Node) { t.Acknowledge = d.acknowledge(v, t) }},
		{key: "args", set: func(_, v *yaml.Node) { t.Args = d.args(v, what) }},
	})
	return t
}

// pin decodes a schema_sha256 or definition_sha256 value. A digest
// written without quotes that happens to be all digits (or digits around
// one e) is a number to YAML, but its text is still the digest, so it is
// accepted as written.
func (d *decoder) pin(n *yaml.Node, key, tool string) string {
	if n.Kind == yaml.ScalarNode && n.Style == 0 && isPin(n.Value) {
		return n.Value
	}
	s, ok := d.str(n, fmt.Sprintf(`%q of %s`, key, tool))
	if ok && !isPin(s) {
		d.errorf(n, "%s %q of %s is not 64 lower-case hex digits (the SHA-256 of the tool's definition); pin the tool again, or remove the key", key, truncate(s), tool)
	}
	return s
}

func isPin(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !('0' <= s[i] && s[i] <= '9' || 'a' <= s[i] && s[i] <= 'f') {
			return false
		}
	}
	return true
}

func (d *decoder) args(n *yaml.Node, tool string) map[string]*Arg {
	m := make(map[string]*Arg)
	ok := d.entries(n, fmt.Sprintf(`"args" of %s`, tool), func(k, v *yaml.Node) {
		if !validName(k.Value, maxArgLen, false) {
			d.nameError(k, "argument", "[A-Za-z0-9_-]", maxArgLen, "the gate accepts no other argument names")
			return
		}
		m[k.Value] = d.arg(k, v)
	})
	if ok && len(n.Content)/2 > maxArgs {
		d.errorf(n, "%s declares %d arguments, more than the %d the gate accepts in one call; remove some", tool, len(n.Content)/2, maxArgs)
	}
	return m
}
