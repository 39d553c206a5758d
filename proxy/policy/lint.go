package policy

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

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
	// Info marks a line Lint lists for the reader that is not a problem:
	// an acknowledgement (rule name.acknowledged).
	Info bool
}

// String returns "file:line:col: rule: message".
func (p Problem) String() string {
	return fmt.Sprintf("%s:%d:%d: %s: %s", p.File, p.Line, p.Column, p.Rule, p.Message)
}

// Lint returns the problems of a loaded policy, sorted by position:
//
//   - name.write_word: an allowed tool's name contains a write word
//     (built-in or never_allow) that its acknowledge list does not name, so
//     the gate denies it; the message says whether the word can be
//     acknowledged (package words) or never can;
//   - pin.missing: an allowed tool has no schema_sha256 and require_pins is
//     true or the tool acknowledges write words (an acknowledgement holds
//     only for a pinned definition), so the gate denies it;
//   - pin.schema_only: an allowed tool is pinned by schema_sha256 alone, the
//     old way, so a change to a member outside it (title, icons,
//     outputSchema, execution, _meta) is not caught;
//   - server.no_tools: a server allows no tools;
//   - args.unbounded (a warning): a string argument, or the string items of
//     an array argument, have no pattern, enum or max_length, so they carry
//     any text the gate's size limits allow;
//   - name.acknowledged (Info, not a problem): a pinned tool acknowledges
//     write words; every acknowledgement is listed, so that a reader sees
//     each place the policy lets a write word through.
func Lint(p *Policy) []Problem {
	var out []Problem
	for _, s := range p.Servers {
		add := func(line, col int, rule, format string, args ...any) {
			out = append(out, Problem{File: p.Path, Line: line, Column: col, Rule: rule, Server: s.Name, Message: fmt.Sprintf(format, args...),
				Info: rule == "name.acknowledged"})
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

type addFunc func(line, col int, rule, format string, args ...any)

func lintTool(p *Policy, s *Server, t *Tool, add addFunc) {
	lintWords(p, s, t, add)
	switch {
	case t.SchemaSHA256 != "":
	case len(t.Acknowledge) > 0:
		add(t.Line, t.Column, "pin.missing", "tool %q of server %q acknowledges %s but has no schema_sha256; an acknowledgement holds only for the definition a human reviewed and pinned, so the gate denies it until the tool is pinned", t.Name, s.Name, quoteWords(t.Acknowledge))
	case p.RequirePins:
		add(t.Line, t.Column, "pin.missing", "tool %q of server %q has no schema_sha256 and require_pins is true, so the gate denies it until the tool is pinned", t.Name, s.Name)
	}
	if len(t.Acknowledge) > 0 && t.SchemaSHA256 != "" {
		add(t.Line, t.Column, "name.acknowledged", "tool %q of server %q acknowledges the write word(s) %s: its name may contain them while its definition matches schema_sha256 %s…", t.Name, s.Name, quoteWords(t.Acknowledge), prefix(t.SchemaSHA256, 12))
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

// lintWords reports the first write word of the tool's name that its
// acknowledge list does not cover, as the gate would deny it, and says
// whether acknowledge: could.
func lintWords(p *Policy, s *Server, t *Tool, add addFunc) {
	for _, m := range words.FindAll(t.Name, p.NeverAllow) {
		if why := m.Why(); why != "" {
			add(t.Line, t.Column, "name.write_word", "tool %q of server %q contains the write word %q, which no acknowledge: can allow (it %s), so the gate always denies it; remove it from the policy", t.Name, s.Name, m.Word, why)
			return
		}
		if !slices.Contains(t.Acknowledge, m.Word) {
			add(t.Line, t.Column, "name.write_word", "tool %q of server %q contains the write word %q, so the gate denies it; if the tool only reads, review its definition, pin it and add acknowledge: [%s] to it, otherwise remove it from the policy", t.Name, s.Name, m.Word, m.Word)
			return
		}
	}
}

// quoteWords returns words quoted and joined with ", ".
func quoteWords(ws []string) string {
	q := make([]string, len(ws))
	for i, w := range ws {
		q[i] = fmt.Sprintf("%q", w)
	}
	return strings.Join(q, ", ")
}

// prefix returns the first n bytes of s, or s if it is shorter.
func prefix(s string, n int) string {
	return s[:min(n, len(s))]
}

// unbounded reports whether a is a string with no pattern, enum or
// max_length.
func unbounded(a *Arg) bool {
	return a.Type == "string" && a.Re == nil && a.Enum == nil && a.MaxLength == nil
}
