// Package draft writes a starting policy (see package proxy/policy) for a
// live MCP server from its tools/list, for a person to review: `bankdoor
// init` prints it.
//
// # The rule
//
// A draft never allows a call the server's own input schema forbids, nor a
// tool the server says writes, and proposes a tool only when its name reads
// as a read. Write checks what it wrote: the draft loads as a policy and
// lint finds nothing in it (but server.no_tools when no tool is proposed).
//
// # What a draft holds
//
// Every tool the server lists is named, in the server's order:
//
//   - A tool is proposed as allowed, pinned with the schema_sha256 and
//     definition_sha256 of the definition listed and with argument specs
//     derived from its input schema, when it passes checks 1 to 3 of the
//     gate (its name is plain ASCII and spells no write word), the first
//     token of its name (package proxy/words) is one of the verbs that
//     read (readVerbs: get, list, search, ...; so not wiretransfer,
//     sendmoney, make_api_request), its annotations do not say it writes,
//     and a policy can say what its input schema says (below).
//     Annotations are believed when they say a tool writes (readOnlyHint
//     false, destructiveHint true, or a destructiveHint or idempotentHint
//     without readOnlyHint true) and never to allow one.
//   - A tool that passes checks 1 to 3 but not the rest, or whose name
//     spells write words a policy may acknowledge, is written commented
//     out, with the reasons it is not proposed or the acknowledge: it would
//     need: allowing it is a person's decision, after reading its
//     definition.
//   - Every other tool is a comment that says why the gate denies it.
//
// The header names the server's command line or URL with every value that
// looks like a credential written <redacted> (see source), and says so.
// Every comment is printable ASCII on one line: a tool's name, which the
// server chooses, cannot end a comment line.
//
// # Argument specs
//
// Each property of the input schema becomes an argument spec that accepts
// no value the schema rejects: it is never wider than the schema. type
// (string, integer, number, boolean, or array of one of those), enum,
// pattern, minLength, maxLength, minimum, maximum, exclusiveMinimum and
// exclusiveMaximum (integers only), minItems, maxItems and required carry
// over; bounds are read as exact decimals. An enum becomes the values that
// also meet the property's other keywords. A JSON Schema pattern, an
// ECMA-262 search, becomes an RE2 whole-string match that accepts only
// what it finds under each reading (see translate in ecma.go), or the
// argument is left out. A string with no maxLength or enum gets max_length:
// DefaultMaxLength and an array with no maxItems gets max_items:
// DefaultMaxItems, each with a comment: the policy needs a bound and the
// schema gives none. format "date" becomes the pattern \d{4}-\d{2}-\d{2};
// other formats are not checked, and a comment says so.
//
// What a policy cannot express in a property (nested objects, arrays of
// arrays or of objects, anyOf, oneOf, allOf, not, $ref, const, a list of
// types, multipleOf, uniqueItems, exclusive bounds on numbers, a name
// outside [A-Za-z0-9_-]{1,64}, and any keyword this package does not know)
// leaves the argument out, with a comment naming the reason: the gate then
// denies every call that sends it. That is narrower than the schema unless
// the schema requires the argument (a call without it would pass), so then
// the tool is not proposed. Likewise a tool is not proposed when its input
// schema is not of type "object", requires a name its properties do not
// define, or has at its top any keyword besides type, properties,
// required, additionalProperties (the gate refuses undeclared keys
// anyway), $schema and those that only describe (allOf, anyOf, oneOf,
// not, if, dependentRequired, maxProperties, a maxLength, ... constrain
// the arguments together, which a policy cannot say). Keywords that only
// describe (description, title, default, examples, deprecated, readOnly,
// writeOnly, $comment) are ignored.
package draft

import (
	"bytes"
	"fmt"
	neturl "net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/bankdoor/bankdoor/internal/jsonobj"
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
	// Command is the server's command line, or URL its address: where the
	// tools came from, for the header (see source).
	Command []string
	URL     string
}

// Write returns the draft policy for tools, as listed by pin.Fetch. It
// checks what it wrote: the draft loads as a policy, and lint finds no
// problem in it but server.no_tools when no tool is proposed.
func Write(tools []pin.Tool, opts Options) ([]byte, error) {
	if opts.Server == "" || opts.ID == "" {
		return nil, fmt.Errorf("draft: Options.Server and Options.ID are required")
	}
	var b, entries bytes.Buffer
	src, changed := source(opts.Command, opts.URL)
	fmt.Fprintf(&b, `# A starting policy for the MCP server %s, written by bankdoor init.
# Review it before you use it: read each allowed tool's definition
# (bankdoor pin prints them) and tighten the argument specs (patterns and
# bounds for ids and free text), then run bankdoor lint. Tools the gate
# denies whatever a policy says, tools whose name does not read as a read
# or that the server says write, and arguments a policy cannot express,
# are comments that say why.
`, commentSafe(src))
	if changed {
		fmt.Fprintf(&b, "# Values on its command line that look like credentials are written %s.\n", redacted)
	}
	fmt.Fprintf(&b, `version: 1
id: %s
default: deny
require_pins: true
receipts: deny
servers:
  %s:
`, yamlKey(opts.ID), yamlKey(opts.Server))
	probe := gate.New(&policy.Policy{Version: 1, ID: opts.ID, Default: "deny",
		Servers: map[string]*policy.Server{opts.Server: {Name: opts.Server}}})
	proposed := 0
	for _, t := range tools {
		if writeEntry(&entries, probe, opts.Server, t) {
			proposed++
		}
	}
	switch {
	case len(tools) == 0:
		b.WriteString("    tools: {} # the server lists no tools\n")
	case proposed == 0:
		b.WriteString("    tools: {} # no tool is proposed; each one's reason is below\n")
	default:
		b.WriteString("    tools:\n")
	}
	b.Write(entries.Bytes())
	return b.Bytes(), check(b.Bytes(), proposed)
}

// check loads the draft out and lints it.
func check(out []byte, proposed int) error {
	p, err := policy.Parse("draft.yaml", out)
	if err != nil {
		return fmt.Errorf("draft: the draft does not load as a policy: %w", err)
	}
	for _, pr := range policy.Lint(p) {
		if !pr.Info && !(pr.Rule == "server.no_tools" && proposed == 0) {
			return fmt.Errorf("draft: lint finds a problem in the draft: %s", pr)
		}
	}
	return nil
}

// writeEntry writes t's entry and reports whether the tool is proposed.
func writeEntry(b *bytes.Buffer, probe *gate.Gate, server string, t pin.Tool) bool {
	d := probe.Precheck(gate.Call{Server: server, Tool: t.Name})
	ack := d.Rule == "name.write_word" && acknowledgeable(t.Name)
	if d.Rule != "tool.not_allowed" && !ack { // checks 1 to 3 deny it
		fmt.Fprintf(b, "      # %s: denied (%s): %s\n", commentSafe(t.Name), d.Rule, commentSafe(d.Reason))
		return false
	}
	args, refusals := specs(t.Raw)
	refusals = append(append(nameReasons(t.Name), annotationReasons(t.Raw)...), refusals...)
	var acknowledge []string
	if ack {
		acknowledge = ackWords(t.Name)
	}
	switch {
	case len(refusals) > 0:
		fmt.Fprintf(b, "      # %s: not proposed:\n", commentSafe(t.Name))
		for _, r := range refusals {
			fmt.Fprintf(b, "      # - %s\n", commentSafe(r))
		}
		fmt.Fprintf(b, "      # Allow it only if its definition shows a read and the reasons above\n")
		fmt.Fprintf(b, "      # do not hold: review it, then uncomment.\n")
	case ack:
		fmt.Fprintf(b, "      # %s: %s. If its definition shows a read, a policy may allow\n", commentSafe(t.Name), commentSafe(d.Reason))
		fmt.Fprintf(b, "      # it by acknowledging those words: review it, then uncomment.\n")
	default:
		writeTool(b, t, "", args, nil)
		return true
	}
	writeTool(b, t, "# ", args, acknowledge)
	return false
}

// readVerbs are the words a tool's name must start with to be proposed:
// verbs whose tools read. Not among them: check (check_watches may send
// notifications), query (a query tool may take any statement), and
// others whose tools are as often writes (look, run, sync, make).
var readVerbs = []string{"count", "describe", "fetch", "find", "get", "list", "lookup", "read", "retrieve", "search", "show", "view"}

// nameReasons says why name does not read as a read: its first token is
// not one of readVerbs. A name of one token (wiretransfer, sendmoney) is
// its own first token.
func nameReasons(name string) []string {
	toks := words.Tokens(name)
	if len(toks) > 0 && slices.Contains(readVerbs, toks[0]) {
		return nil
	}
	first := ""
	if len(toks) > 0 {
		first = toks[0]
	}
	return []string{fmt.Sprintf("its name starts with %q, not a verb that reads (%s)", first, strings.Join(readVerbs, ", "))}
}

// annotationReasons says why the tool definition raw's annotations say it
// writes. They are believed when they say so, never to allow: an explicit
// readOnlyHint false, destructiveHint true, or destructiveHint or
// idempotentHint (which describe updates) without readOnlyHint true.
func annotationReasons(raw []byte) []string {
	def, err := jsonobj.Parse(raw)
	if err != nil || def.Get("annotations") == nil {
		return nil // specs reports a definition that does not parse
	}
	an, err := jsonobj.Parse(def.Get("annotations"))
	if err != nil {
		return []string{"its annotations are not an object"}
	}
	hints := map[string]string{}
	for _, k := range []string{"readOnlyHint", "destructiveHint", "idempotentHint"} {
		switch v := string(an.Get(k)); v {
		case "", "true", "false":
			hints[k] = v
		default:
			return []string{fmt.Sprintf("its annotations' %s is %s, not true or false", k, v)}
		}
	}
	switch {
	case hints["readOnlyHint"] == "false":
		return []string{"its annotations say it writes (readOnlyHint: false)"}
	case hints["destructiveHint"] == "true":
		return []string{"its annotations say it writes (destructiveHint: true)"}
	case hints["readOnlyHint"] != "true" && (hints["destructiveHint"] != "" || hints["idempotentHint"] != ""):
		return []string{"its annotations describe how it updates (destructiveHint or idempotentHint) and do not say readOnlyHint: true"}
	}
	return nil
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
func writeTool(b *bytes.Buffer, t pin.Tool, comment string, args []arg, acknowledge []string) {
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
	if !slices.ContainsFunc(args, func(a arg) bool { return a.skip == "" }) {
		line(8, "args: {}") // not "args:" with only comments under it, which YAML reads as null
	} else {
		line(8, "args:")
	}
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

// commentSafe keeps s on one comment line: every byte that is not
// printable ASCII becomes '?' (YAML also breaks lines at U+0085, U+2028
// and U+2029).
func commentSafe(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c < 0x20 || c >= 0x7f {
			b[i] = '?'
		}
	}
	return string(b)
}

// redacted is what a draft's header writes for a value that looks like a
// credential.
const redacted = "<redacted>"

// secretWords are the name tokens (package words) of flags and variables
// whose values are credentials.
var secretWords = []string{"apikey", "auth", "authorization", "bearer", "cookie", "credential", "credentials", "jwt",
	"key", "pass", "passphrase", "passwd", "password", "pat", "private", "pwd", "secret", "session", "sig", "signature", "token"}

// tokenPrefixes start well-known credential formats (Stripe, GitHub,
// GitLab, Slack, npm, AWS, JWT).
var tokenPrefixes = []string{"sk_", "rk_", "sk-", "pk_live_", "whsec_", "ghp_", "gho_", "ghs_", "ghu_", "github_pat_", "glpat-", "xoxb-", "xoxp-", "xoxa-", "npm_", "AKIA", "eyJ", "Bearer "}

// envName matches the name of an environment variable.
var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// source returns where the tools came from as a draft's header shows it,
// and whether it left something out: each value on the command line that
// looks like a credential is written <redacted>: the value of a flag or of
// a NAME=value whose name has a secret word (--api-key=…, --token …,
// STRIPE_SECRET_KEY=…), every NAME=value's value, a URL's user
// information, query and fragment, and any argument that starts like a
// known token format or is a long run of letters and digits.
func source(command []string, url string) (string, bool) {
	if len(command) == 0 {
		s := redactURL(url)
		return s, s != url
	}
	out := make([]string, len(command))
	changed, next := false, false
	for i, a := range command {
		out[i], next = redactArg(a, next)
		changed = changed || out[i] != a
	}
	return "`" + strings.Join(out, " ") + "`", changed
}

// redactArg writes one argument; secret says the previous one was a
// secret flag without its value, and next whether this one is.
func redactArg(a string, secret bool) (out string, next bool) {
	switch name, value, eq := strings.Cut(a, "="); {
	case secret:
		return redacted, false
	case strings.HasPrefix(a, "-") && !eq:
		return a, isSecretName(a)
	case strings.HasPrefix(a, "-") || eq && envName.MatchString(name):
		if isSecretName(name) || looksSecret(value) || !strings.HasPrefix(a, "-") {
			return name + "=" + redacted, false
		}
		return name + "=" + redactURL(value), false
	case looksSecret(a):
		return redacted, false
	}
	return redactURL(a), false
}

// isSecretName reports whether a flag or variable name has a secret word.
func isSecretName(name string) bool {
	return slices.ContainsFunc(words.Tokens(name), func(t string) bool { return slices.Contains(secretWords, t) })
}

// looksSecret reports whether v starts like a known token format or is 20
// or more letters, digits, '_' and '-' with both letters and digits.
func looksSecret(v string) bool {
	if slices.ContainsFunc(tokenPrefixes, func(p string) bool { return strings.HasPrefix(v, p) }) {
		return true
	}
	return len(v) >= 20 && strings.Trim(v, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") == "" &&
		strings.ContainsAny(v, "0123456789") && strings.ContainsAny(v, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
}

// redactURL writes an argument that has "://" without its user
// information, query and fragment; any other argument as it is.
func redactURL(a string) string {
	if !strings.Contains(a, "://") {
		return a
	}
	u, err := neturl.Parse(a)
	if err != nil {
		return redacted
	}
	if u.User != nil {
		u.User = neturl.User(redacted)
	}
	if u.RawQuery != "" || u.ForceQuery {
		u.RawQuery, u.ForceQuery = redacted, false
	}
	if u.Fragment != "" {
		u.Fragment, u.RawFragment = redacted, ""
	}
	s := u.String()
	return strings.NewReplacer("%3Credacted%3E", redacted).Replace(s)
}
