// Package policy loads and checks bankdoor policy files.
//
// # Policy File Format
//
// A policy is a YAML document (version 1). Unknown keys anywhere are
// errors reported with line and column; so are duplicate keys.
//
//	version: 1                     # required, the only accepted value
//	id: bankdoor-fixture-readonly  # required, [A-Za-z0-9._-]{1,64}
//	default: deny                  # required, the only accepted value
//	require_pins: true             # every allowed tool must carry schema_sha256
//	never_allow: [borrow]          # words added to the built-in write words
//	receipts: deny                 # deny (default) | all (also sign allowed calls)
//	servers:
//	  bank:                        # the --server NAME, [A-Za-z0-9_-]{1,64}
//	    expose: []                 # MCP features relayed besides tools (see Features)
//	    tools:
//	      get_transactions:        # exact, case-sensitive tool name
//	        schema_sha256: 181c…   # 64 lower-case hex digits, from `bankdoor pin`
//	        args:
//	          account_id: { type: string, required: true, pattern: "acc_[a-z0-9_]{1,32}", max_length: 40 }
//	          limit: { type: integer, min: 1, max: 100 }
//
// Argument types are string, integer, number and boolean. Constraints are
// required, pattern (RE2, matched against the whole value), min_length and
// max_length (in Unicode code points, strings only), min and max (integer
// and number only) and enum (a list of values of the argument's type).
//
// The policy's identity is policy_sha256, the SHA-256 of the file's bytes.
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
	NeverAllow  []string // lower-case, as written in the file
	Receipts    string   // "deny" or "all"
	Servers     map[string]*Server

	// Path is the file the policy was read from ("" if from bytes).
	Path string
	// SHA256 is policy_sha256: lower-case hex SHA-256 of the file bytes.
	SHA256 string
}

// Server is the part of a policy for one MCP server.
type Server struct {
	Name   string
	Expose []string // subset of Features
	Tools  map[string]*Tool
	Line   int // position of the server's key in the file
	Column int
}

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
	Args         map[string]*Arg
	Line         int // position of the tool's key in the file
	Column       int
}

// Arg is the specification of one argument of a tool.
type Arg struct {
	Name      string
	Type      string // "string", "integer", "number" or "boolean"
	Required  bool
	Pattern   string         // as written, "" if none
	Re        *regexp.Regexp // Pattern compiled as ^(?:Pattern)$, nil if none
	MinLength *int
	MaxLength *int
	Min       *float64
	Max       *float64
	// Enum holds the RFC 8785 canonical JSON text of each allowed value
	// (for example `"USD"`, `5`, `true`); nil if the argument has no enum.
	Enum   []string
	Line   int
	Column int
}
