package main

import (
	"fmt"
	"sort"
	"strings"

	"github.com/bankdoor/bankdoor/proxy/policy"
)

func cmdLint(e *env, args []string) int {
	fs := newFlags(e, "lint", "lint --policy P")
	policyPath := fs.String("policy", "", "policy file to check")
	pos, _, code, ok := parse(fs, args)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		return fs.usageErr("lint takes no arguments (got %q); the policy file is --policy P", pos[0])
	}
	if !required(fs, "policy") {
		return exitUsage
	}
	p, err := policy.Load(*policyPath)
	if err != nil {
		return exitErr(e, exitFailure, err)
	}
	lines := policy.Lint(p)
	for _, pr := range lines {
		fmt.Fprintln(e.stdout, pr.String())
	}
	if problems := failures(lines); len(problems) > 0 {
		err := &hinted{err: fmt.Errorf("%s: %d problem(s)", *policyPath, len(problems)), hints: lintHints(p, problems)}
		return exitErr(e, exitFailure, err)
	}
	fmt.Fprintf(e.stdout, "%s: ok (policy %s, policy_sha256 %s)\n", *policyPath, p.ID, p.SHA256)
	return exitOK
}

// failures returns the lint lines that are problems, leaving out the
// informational ones (acknowledgements).
func failures(lines []policy.Problem) []policy.Problem {
	var out []policy.Problem
	for _, pr := range lines {
		if !pr.Info {
			out = append(out, pr)
		}
	}
	return out
}

// lintHints returns the commands that fix lint problems: for each server
// with unpinned tools, the bankdoor pin that pins them.
func lintHints(p *policy.Policy, problems []policy.Problem) []string {
	var out []string
	seen := map[string]bool{}
	for _, pr := range problems {
		if pr.Rule == "pin.missing" && !seen[pr.Server] {
			seen[pr.Server] = true
			out = append(out, fmt.Sprintf("pin the tools of server %q with bankdoor pin --policy %s --server %s --write -- CMD ARGS...", pr.Server, p.Path, pr.Server))
		}
	}
	return out
}

func serverNames(p *policy.Policy) string {
	var names []string
	for n := range p.Servers {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}
