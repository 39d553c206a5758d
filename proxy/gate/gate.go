package gate

import (
	"regexp"
	"slices"
	"sync"

	"github.com/bankdoor/bankdoor/proxy/policy"
)

// Call is one tools/call as the proxy received it.
type Call struct {
	Server string // --server NAME
	Tool   string // params.name as requested
	Args   []byte // raw JSON of params.arguments exactly as received; nil when absent
	// Live maps tool name to schema_sha256 for the server's current
	// tools/list (package pin). A tool not in Live is unlisted.
	Live map[string]string
	// LiveDefinition maps tool name to definition_sha256 for the same
	// listing; it is checked for tools the policy pins with
	// definition_sha256.
	LiveDefinition map[string]string
	// SkipPinCheck skips check 5. Only `bankdoor decide` without
	// --tools-file sets it.
	SkipPinCheck bool
}

// Decision is the outcome of the checks for one call.
type Decision struct {
	Allow  bool
	Check  int    // 1..6, the failing check; 0 if allowed
	Rule   string // stable rule id (see the package doc); "" if allowed
	Reason string // lower-case human text; never contains argument values
	// Args, when allowed, holds the exact bytes to forward: the RFC 8785
	// canonical form of the checked arguments ({} for absent or null).
	Args []byte
	// ArgNames are the sorted argument names, at most 32, each at most 64
	// bytes; nil if the arguments do not parse as an object. Never values.
	ArgNames []string
	// ArgsSHA256 is the hex SHA-256 of the canonical arguments, or of the
	// raw bytes if they cannot be canonicalised.
	ArgsSHA256 string
}

// Gate holds a policy prepared for deciding calls. It is safe for
// concurrent use. The policy must not be modified after New.
type Gate struct {
	p       *policy.Policy
	servers map[string]*serverSpec
	readers sync.Pool // of *reader
}

type serverSpec struct {
	names []string // sorted tool names, for reasons
	tools map[string]*toolSpec
}

type toolSpec struct {
	name  string
	tool  *policy.Tool
	names []string // sorted declared argument names
	args  map[string]*argSpec
}

type argSpec struct {
	*policy.Arg
	re *regexp.Regexp // nil if no pattern
	// badPattern is set when Pattern is set but does not compile; the
	// argument then fails args.pattern for every string (fail closed).
	badPattern bool
	// items is the spec of an array's items; nil for other types.
	items *argSpec
}

// request is a call being decided, with what the checks have found so far.
type request struct {
	*Call
	args   *args       // nil in Listable
	server *serverSpec // set by check 2
	tool   *toolSpec   // set by check 4
}

// check is one step of the gate: it returns a rule id and a reason, or two
// empty strings if the call passes.
type check func(g *Gate, r *request) (rule, reason string)

// checks returns the six checks in order; Decision.Check is index + 1.
func checks() [6]check {
	return [6]check{
		(*Gate).checkName,
		(*Gate).checkServer,
		(*Gate).checkWords,
		(*Gate).checkAllowlist,
		(*Gate).checkPin,
		(*Gate).checkArgs,
	}
}

// New prepares p for deciding calls. A nil policy gives a gate that denies
// every call (server.unknown).
func New(p *policy.Policy) *Gate {
	if p == nil {
		p = &policy.Policy{}
	}
	g := &Gate{p: p, servers: make(map[string]*serverSpec), readers: sync.Pool{New: newReader}}
	for name, s := range p.Servers {
		if s != nil {
			g.servers[name] = newServerSpec(s)
		}
	}
	return g
}

func newServerSpec(s *policy.Server) *serverSpec {
	ss := &serverSpec{tools: make(map[string]*toolSpec)}
	for name, t := range s.Tools {
		if t == nil {
			continue
		}
		ss.names = append(ss.names, name)
		ts := &toolSpec{name: name, tool: t, args: make(map[string]*argSpec)}
		for an, a := range t.Args {
			if a != nil {
				ts.names = append(ts.names, an)
				ts.args[an] = newArgSpec(a)
			}
		}
		slices.Sort(ts.names)
		ss.tools[name] = ts
	}
	slices.Sort(ss.names)
	return ss
}

func newArgSpec(a *policy.Arg) *argSpec {
	as := &argSpec{Arg: a, re: a.Re}
	if as.re == nil && a.Pattern != "" {
		// Compile the pattern alone first: "a)|(b" only compiles anchored.
		_, err := regexp.Compile(a.Pattern)
		re, errAnchored := regexp.Compile(`^(?:` + a.Pattern + `)$`)
		as.re, as.badPattern = re, err != nil || errAnchored != nil
	}
	if a.Type == "array" {
		items := a.Items
		if items == nil { // as if built without policy.Parse: no item has a type (fail closed)
			items = &policy.Arg{Name: a.Name}
		}
		as.items = newArgSpec(items)
	}
	return as
}

// Decide runs the six checks on c and returns the first failure, or an
// allowing decision whose Args are the bytes to forward.
func (g *Gate) Decide(c Call) Decision {
	a := g.parseArgs(c.Args)
	d := Decision{ArgNames: a.argNames(), ArgsSHA256: a.sha256()}
	r := &request{Call: &c, args: a}
	for i, chk := range checks() {
		if rule, reason := chk(g, r); rule != "" {
			d.Check, d.Rule, d.Reason = i+1, rule, reason
			return d
		}
	}
	d.Allow, d.Args = true, a.canonical
	return d
}

// Listable runs checks 1 to 5 for a tool that the server's current
// tools/list shows with schema_sha256 liveSHA and definition_sha256
// liveDefinition. Only tools it allows are shown to the agent.
func (g *Gate) Listable(server, tool, liveSHA, liveDefinition string) Decision {
	c := Call{Server: server, Tool: tool, Live: map[string]string{tool: liveSHA}, LiveDefinition: map[string]string{tool: liveDefinition}}
	r := &request{Call: &c}
	all := checks()
	for i, chk := range all[:5] {
		if rule, reason := chk(g, r); rule != "" {
			return Decision{Check: i + 1, Rule: rule, Reason: reason}
		}
	}
	return Decision{Allow: true}
}

// Precheck runs checks 1 to 4, which need no listing of the server's
// tools: a call they deny is denied by Decide with the same decision, so
// the proxy can refuse it before listing the server. An allowing result
// carries no Args; only Decide's do.
func (g *Gate) Precheck(c Call) Decision {
	r := &request{Call: &c} // checks 1 to 4 do not look at the arguments
	all := checks()
	for i, chk := range all[:4] {
		if rule, reason := chk(g, r); rule != "" {
			a := g.parseArgs(c.Args)
			return Decision{Check: i + 1, Rule: rule, Reason: reason, ArgNames: a.argNames(), ArgsSHA256: a.sha256()}
		}
	}
	return Decision{Allow: true}
}
