// Package policy loads, checks and pins bankdoor policy files.
//
// # Policy File Format
//
// A policy is one YAML document, at most 1 MiB of UTF-8 text. Keys are
// fixed except the names of servers, tools and arguments; unknown keys,
// duplicate keys, values of the wrong type and missing required keys are
// errors, each reported as "file:line:col: what is wrong; how to fix".
// So that the file means what it seems to mean to a reader, these YAML
// features are errors too: anchors and aliases, merge keys ("<<"), tags
// ("!!str", "!"), more than one document, and the line breaks NEL, U+2028,
// U+2029 and a lone carriage return. Numbers are written as JSON writes
// them (10, -3, 2.5, 1e3): 0x10, 010, 1_000, +5, .5 and .inf are errors.
//
//	version: 1                     # required, the only accepted value
//	id: bankdoor-fixture-readonly  # required, [A-Za-z0-9._-]{1,64}
//	default: deny                  # required, the only accepted value
//	require_pins: true             # every allowed tool must carry schema_sha256 (default false)
//	never_allow: [borrow]          # words added to the built-in write words
//	receipts: deny                 # deny (default) | all (also sign allowed calls)
//	servers:                       # required, at least one
//	  bank:                        # the --server NAME, [A-Za-z0-9_-]{1,64}
//	    expose: []                 # MCP features relayed besides tools (see Features)
//	    trace_context: drop        # drop (default) | forward (see below)
//	    tools:
//	      get_transactions:        # exact, case-sensitive tool name, [A-Za-z0-9_-]{1,128}
//	        schema_sha256: 181c…   # 64 lower-case hex digits, from `bankdoor pin`
//	        definition_sha256: 9b0e…  # the whole definition, from `bankdoor pin --write`
//	        acknowledge: [transfers]  # write words the name may contain (see below)
//	        args:                  # at most 32; names [A-Za-z0-9_-]{1,64}
//	          account_id: { type: string, required: true, pattern: "acc_[a-z0-9_]{1,32}", max_length: 40 }
//	          limit: { type: integer, min: 1, max: 100 }
//	      list_accounts: {}        # a tool without arguments
//
// never_allow words are ASCII letters and digits, stored lower-case; they
// only ever add to the built-in words of package words. acknowledge words
// are stored the same way; each must be a write word (built-in or
// never_allow) that the tool's name contains, and not one package words
// says can never be acknowledged (the name's leading word, words.Never):
// anything else is an error at the word. An acknowledgement of a tool
// without schema_sha256 loads, so that SetPins can pin it, but the gate
// denies the tool and Lint reports it. expose entries are
// names from Features, each at most once. A tool's value is a mapping, {}
// if it takes no arguments. schema_sha256 and definition_sha256 are taken
// as written even where YAML, unquoted, would read them as a number (a
// digest of digits only). schema_sha256 covers the tool's name,
// description, inputSchema and annotations; definition_sha256 covers every
// member the server sends (title, icons, outputSchema, execution, _meta
// included), so that a change to what the user sees or to how a call runs
// is caught too (see package proxy/pin).
//
// trace_context says whether the bank server sees trace context (W3C
// traceparent and tracestate in a request's params._meta, as the
// OpenTelemetry conventions for MCP carry it). With drop, the default, the
// agent's traceparent, tracestate and baggage are removed from every
// request the proxy forwards, and nothing is added. With forward, the
// proxy puts its own span of the downstream call there instead (never the
// agent's raw values), so the bank's spans join the trace.
//
// An argument has a type (string, integer, number, boolean or array) and
// optional constraints:
//
//   - required: true or false (default false);
//   - pattern (strings only): RE2 syntax, matched against the whole value;
//     it must compile as written and is stored compiled as ^(?:pattern)$;
//   - min_length, max_length (strings only): 0 or more, in Unicode code
//     points, min_length <= max_length;
//   - min, max (integers and numbers only): min <= max; for integers they
//     are integers within ±2^53, for numbers any finite number;
//   - enum: a non-empty list of distinct values of the argument's type that
//     each satisfy the other constraints, stored as RFC 8785 canonical JSON
//     text (`"USD"`, `5`, `2.5`, `true`).
//
// An array is a bounded list of scalars, for reads that take several ids,
// for example
//
//	ids: { type: array, required: true, max_items: 20, items: { type: string, pattern: "tx_[0-9]{1,8}" } }
//
// Its keys besides type and required:
//
//   - items (required): the spec every item must meet, a mapping with a
//     type (string, integer, number or boolean: never array, and objects
//     are never accepted anywhere) and that type's constraints (pattern,
//     min_length, max_length, min, max, enum), as above; required is not
//     among its keys;
//   - max_items (required): 1 to MaxItemsLimit (1000) items;
//   - min_items: 0 (the default) to max_items items.
//
// pattern, min_length, max_length, min, max and enum do not apply to the
// array itself (they go under items); items, min_items and max_items apply
// to arrays only.
//
// The policy's identity is policy_sha256, the lower-case hex SHA-256 of
// the file's bytes (Policy.SHA256).
//
// # Errors
//
// Load and Parse report every problem they can find in one pass, each an
// *Error, "file:line:col: what is wrong; how to fix", sorted by position
// and joined with errors.Join (at most 50). The column is in Unicode code
// points. Syntax errors come from yaml.v3, which gives a line but no
// column ("file:line: invalid YAML: ..."). A Policy is returned only when
// there is no error at all.
//
// # Lint and pins
//
// Lint reports policies that load but probably do not do what their author
// wants, with the rule ids name.write_word, pin.missing, server.no_tools
// pin.schema_only and args.unbounded, and lists every acknowledgement
// (name.acknowledged, for information). SetPins writes schema_sha256 and
// definition_sha256 values into a policy file in place, keeping its
// comments and layout.
package policy

import "regexp"

// Features an entry of a server's expose list may name. Everything not
// listed is denied by the proxy.
var Features = []string{"resources", "prompts", "completions", "logging", "sampling", "elicitation", "roots"}

// Policy is a loaded, validated policy file.
type Policy struct {
	Version     int
	ID          string
	Default     string // always "deny"
	RequirePins bool
	NeverAllow  []string // lower-case, in file order
	Receipts    string   // "deny" or "all"
	Servers     map[string]*Server

	// Path is the path given to Load or the name given to Parse.
	Path string
	// SHA256 is policy_sha256: lower-case hex SHA-256 of the file bytes.
	SHA256 string
}

// Server is the part of a policy for one MCP server.
type Server struct {
	Name   string
	Expose []string // subset of Features
	// TraceContext is TraceContextDrop (the default) or
	// TraceContextForward: whether requests to the server carry trace
	// context in params._meta.
	TraceContext string
	Tools        map[string]*Tool
	Line         int // position of the server's key in the file
	Column       int
}

// The values of a server's trace_context.
const (
	TraceContextDrop    = "drop"
	TraceContextForward = "forward"
)

// Exposes reports whether the server's expose list names feature.
func (s *Server) Exposes(feature string) bool {
	for _, f := range s.Expose {
		if f == feature {
			return true
		}
	}
	return false
}

// Tool is one allowlisted tool.
type Tool struct {
	Name         string
	SchemaSHA256 string // "" when unpinned
	// DefinitionSHA256 pins the whole definition (package proxy/pin);
	// "" when the tool is pinned by schema_sha256 alone, or not at all.
	DefinitionSHA256 string
	// Acknowledge lists, lower-case and in file order, the write words
	// (built-in or never_allow) that the tool's name may contain; nil when
	// the tool acknowledges none. Parse checks that each is a write word
	// the name contains and that can be acknowledged (package words); the
	// gate honours them only while the tool is pinned.
	Acknowledge []string
	Args        map[string]*Arg
	Line        int // position of the tool's key in the file
	Column      int
}

// Arg is the specification of one argument of a tool, or of every item of
// an array argument (its Items).
type Arg struct {
	Name      string
	Type      string         // "string", "integer", "number", "boolean" or "array"
	Required  bool           // always false for Items
	Pattern   string         // as written, "" if none
	Re        *regexp.Regexp // Pattern compiled as ^(?:Pattern)$, nil if none
	MinLength *int
	MaxLength *int
	Min       *float64
	Max       *float64
	// Enum holds the RFC 8785 canonical JSON text of each allowed value
	// (for example `"USD"`, `5`, `true`); nil if the argument has no enum.
	Enum []string
	// Items, for an array, is the spec each item must meet: a scalar type
	// and its constraints, Required false. nil for other types.
	Items *Arg
	// MinItems and MaxItems bound an array's length: 0 <= MinItems <=
	// MaxItems, 1 <= MaxItems <= MaxItemsLimit. Both 0 for other types.
	MinItems int
	MaxItems int
	Line     int // position of the argument's key (of "items" for Items)
	Column   int
}

// MaxItemsLimit is the largest max_items a policy may give an array. A
// read that needs more ids in one call is better split; the gate's 64 KiB
// limit on a call's arguments holds anyway.
const MaxItemsLimit = 1000
