// Package draft writes a starting policy (see package proxy/policy) for a
// live MCP server from its tools/list, for a person to review: `bankdoor
// init` prints it.
//
// # What a draft holds
//
// Every tool the server lists is named, in the server's order:
//
//   - A tool that passes checks 1 to 3 of the gate (its name is plain
//     ASCII and spells no write word) is proposed as allowed, pinned with
//     the schema_sha256 and definition_sha256 of the definition listed, and
//     with argument specs derived from its input schema.
//   - A tool whose name spells write words that a policy may acknowledge
//     (package proxy/words) is written commented out, with the acknowledge:
//     it would need: allowing it is a person's decision, after reading its
//     definition.
//   - Every other tool is a comment that says why the gate denies it.
//
// # Argument specs
//
// Each property of the input schema becomes an argument spec that accepts
// no value the schema rejects: it is never wider than the schema. type
// (string, integer, number, boolean, or array of one of those), enum,
// pattern, minLength, maxLength, minimum, maximum, exclusiveMinimum and
// exclusiveMaximum (integers only), minItems, maxItems and required carry
// over. A JSON Schema pattern matches anywhere in a string while a policy
// pattern matches the whole string, so "^p$" becomes "p" and any other
// pattern p becomes "(?s:.*)(?:p)(?s:.*)"; a pattern RE2 cannot compile
// leaves the argument out. An array with no maxItems gets max_items: DefaultMaxItems
// and a comment: the policy needs a bound and the schema gives none.
// format "date" becomes the pattern \d{4}-\d{2}-\d{2}; other formats are
// not checked, and a comment says so.
//
// What a policy cannot express (nested objects, arrays of arrays or of
// objects, anyOf, oneOf, allOf, not, $ref, const, a list of types,
// multipleOf, uniqueItems, exclusive bounds on numbers, and any keyword
// this package does not know) leaves the argument out, with a comment
// naming the reason: the gate then denies every call that sends it, which
// is narrower than the schema, never wider. Keywords that only describe
// (description, title, default, examples, deprecated, readOnly,
// writeOnly, $comment) are ignored.
package draft

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	"github.com/bankdoor/bankdoor/proxy/gate"
	"github.com/bankdoor/bankdoor/proxy/pin"
	"github.com/bankdoor/bankdoor/proxy/policy"
	"github.com/bankdoor/bankdoor/proxy/words"
)

// DefaultMaxItems is the max_items a draft gives an array whose schema
// sets no maxItems.
const DefaultMaxItems = 100

// Options name what the draft cannot learn from the server.
type Options struct {
	Server string // the server's name in the policy (--server)
	ID     string // the policy's id
	Source string // where the tools came from, for the header: a command or URL
}

// Write returns the draft policy for tools, as listed by pin.Fetch.
func Write(tools []pin.Tool, opts Options) ([]byte, error) {
	if opts.Server == "" || opts.ID == "" {
		return nil, fmt.Errorf("draft: Options.Server and Options.ID are required")
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, `# A starting policy for the MCP server %s, written by bankdoor init.
# Review it before you use it: read each allowed tool's definition
# (bankdoor pin prints them) and tighten the argument specs (patterns and
# bounds for ids and free text), then run bankdoor lint. Tools the gate
# denies whatever a policy says, and arguments a policy cannot express, are
# comments that say why.
version: 1
id: %s
default: deny
require_pins: true
receipts: deny
servers:
  %s:
`, opts.Source, yamlKey(opts.ID), yamlKey(opts.Server))
	if len(tools) == 0 {
		b.WriteString("    tools: {} # the server lists no tools\n")
		return b.Bytes(), nil
	}
	b.WriteString("    tools:\n")
	probe := gate.New(&policy.Policy{Version: 1, ID: opts.ID, Default: "deny",
		Servers: map[string]*policy.Server{opts.Server: {Name: opts.Server}}})
	for _, t := range tools {
		d := probe.Precheck(gate.Call{Server: opts.Server, Tool: t.Name})
		switch {
		case d.Rule == "tool.not_allowed": // checks 1 to 3 pass
			writeTool(&b, t, "", nil)
		case d.Rule == "name.write_word" && acknowledgeable(t.Name):
			fmt.Fprintf(&b, "      # %s: %s. If its definition shows a read, a policy may allow\n", commentSafe(t.Name), commentSafe(d.Reason))
			fmt.Fprintf(&b, "      # it by acknowledging those words: review it, then uncomment.\n")
			writeTool(&b, t, "# ", ackWords(t.Name))
		default:
			fmt.Fprintf(&b, "      # %s: denied (%s): %s\n", commentSafe(t.Name), d.Rule, commentSafe(d.Reason))
		}
	}
	return b.Bytes(), nil
}

// acknowledgeable reports whether every write word of name may be
// acknowledged.
func acknowledgeable(name string) bool {
	ms := words.FindAll(name, nil)
	for _, m := range ms {
		if !m.Acknowledgeable() {
			return false
		}
	}
	return len(ms) > 0
}

// ackWords returns the distinct write words of name, in order.
func ackWords(name string) []string {
	var ws []string
	for _, m := range words.FindAll(name, nil) {
		if !slices.Contains(ws, m.Word) {
			ws = append(ws, m.Word)
		}
	}
	return ws
}

// writeTool writes t's entry, each line prefixed by comment ("" or "# ").
func writeTool(b *bytes.Buffer, t pin.Tool, comment string, acknowledge []string) {
	line := func(indent int, format string, args ...any) {
		text := fmt.Sprintf(format, args...)
		if comment == "" {
			fmt.Fprintf(b, "%s%s\n", strings.Repeat(" ", indent), text)
		} else { // "# " at the tool's column, so that removing it restores the entry
			fmt.Fprintf(b, "      %s%s%s\n", comment, strings.Repeat(" ", indent-6), text)
		}
	}
	line(6, "%s:", yamlKey(t.Name))
	line(8, "schema_sha256: %s", t.SHA256)
	line(8, "definition_sha256: %s", t.Definition)
	if len(acknowledge) > 0 {
		line(8, "acknowledge: [%s]", strings.Join(acknowledge, ", "))
	}
	args, notes := specs(t.Raw)
	for _, n := range notes {
		line(8, "# %s", commentSafe(n))
	}
	if len(args) == 0 {
		line(8, "args: {}")
		return
	}
	line(8, "args:")
	for _, a := range args {
		if a.skip != "" {
			line(10, "# %s: left out: %s", commentSafe(a.name), commentSafe(a.skip))
			continue
		}
		s := fmt.Sprintf("%s: { %s }", yamlKey(a.name), strings.Join(a.fields, ", "))
		if a.note != "" {
			s += "  # " + commentSafe(a.note)
		}
		line(10, "%s", s)
	}
}

// commentSafe keeps s on one comment line.
func commentSafe(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '\n' || r == '\r' || r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
}
