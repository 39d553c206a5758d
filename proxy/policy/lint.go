package policy

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/bankdoor/bankdoor/proxy/words"
)

// Problem is something Lint found in a policy that loads but does not do
// what its author probably wants.
type Problem struct {
	File         string
	Line, Column int
	Rule         string // one of the rule ids listed at Lint
	Server       string // the server the problem is in
	Message      string
}

// String returns "file:line:col: rule: message".
func (p Problem) String() string {
	return fmt.Sprintf("%s:%d:%d: %s: %s", p.File, p.Line, p.Column, p.Rule, p.Message)
}

// Lint returns the problems of a loaded policy, sorted by position:
//
//   - name.write_word: an allowed tool's name contains a write word
//     (built-in or never_allow), so the gate denies it whatever the
//     allowlist says;
//   - pin.missing: require_pins is true and an allowed tool has no
//     schema_sha256, so the gate denies it;
//   - pin.schema_only: an allowed tool is pinned by schema_sha256 alone, the
//     old way, so a change to a member outside it (title, icons,
//     outputSchema, execution, _meta) is not caught;
//   - server.no_tools: a server allows no tools;
//   - args.unbounded (a warning): a string argument, or the string items of
//     an array argument, have no pattern, enum or max_length, so they carry
//     any text the gate's size limits allow.
func Lint(p *Policy) []Problem {
	var out []Problem
	for _, s := range p.Servers {
		add := func(line, col int, rule, format string, args ...any) {
			out = append(out, Problem{File: p.Path, Line: line, Column: col, Rule: rule, Server: s.Name, Message: fmt.Sprintf(format, args...)})
		}
		if len(s.Tools) == 0 {
			add(s.Line, s.Column, "server.no_tools", "server %q allows no tools, so every call to it is denied; list the tools it may call under tools:, or remove the server", s.Name)
		}
		for _, t := range s.Tools {
			lintTool(p, s, t, add)
		}
	}
	slices.SortFunc(out, func(a, b Problem) int {
		return cmp.Or(cmp.Compare(a.Line, b.Line), cmp.Compare(a.Column, b.Column),
			cmp.Compare(a.Rule, b.Rule), cmp.Compare(a.Message, b.Message))
	})
	return out
}

func lintTool(p *Policy, s *Server, t *Tool, add func(line, col int, rule, format string, args ...any)) {
	if w, ok := words.Find(t.Name, p.NeverAllow); ok {
		add(t.Line, t.Column, "name.write_word", "tool %q of server %q contains the write word %q, so the gate denies it whatever the allowlist says; remove it from the policy", t.Name, s.Name, w)
	}
	if p.RequirePins && t.SchemaSHA256 == "" {
		add(t.Line, t.Column, "pin.missing", "tool %q of server %q has no schema_sha256 and require_pins is true, so the gate denies it until the tool is pinned", t.Name, s.Name)
	}
	if t.SchemaSHA256 != "" && t.DefinitionSHA256 == "" {
		add(t.Line, t.Column, "pin.schema_only", "tool %q of server %q is pinned by schema_sha256 alone, so a change to its title, icons, outputSchema, execution or _meta is not caught; pin it again to add definition_sha256", t.Name, s.Name)
	}
	for _, a := range t.Args {
		switch {
		case unbounded(a):
			add(a.Line, a.Column, "args.unbounded", "string argument %q of tool %q has no pattern, enum or max_length, so it carries any text; add max_length and, where the format is known, a pattern", a.Name, t.Name)
		case a.Items != nil && unbounded(a.Items):
			add(a.Items.Line, a.Items.Column, "args.unbounded", "the string items of array argument %q of tool %q have no pattern, enum or max_length, so each carries any text; add max_length under items and, where the format is known, a pattern", a.Name, t.Name)
		}
	}
}

// unbounded reports whether a is a string with no pattern, enum or
// max_length.
func unbounded(a *Arg) bool {
	return a.Type == "string" && a.Re == nil && a.Enum == nil && a.MaxLength == nil
}
