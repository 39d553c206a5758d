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
		return fail(e, exitUsage, "lint takes no arguments (got %q); use --policy P", pos[0])
	}
	if !required(e, fs, "policy") {
		return exitUsage
	}
	p, err := policy.Load(*policyPath)
	if err != nil {
		fmt.Fprintln(e.stderr, err)
		return exitFailure
	}
	problems := policy.Lint(p)
	for _, pr := range problems {
		fmt.Fprintln(e.stdout, pr.String())
	}
	if len(problems) > 0 {
		fmt.Fprintf(e.stderr, "bankdoor lint: %s: %d problem(s)\n", *policyPath, len(problems))
		return exitFailure
	}
	fmt.Fprintf(e.stdout, "%s: ok (policy %s, policy_sha256 %s)\n", *policyPath, p.ID, p.SHA256)
	return exitOK
}

func serverNames(p *policy.Policy) string {
	var names []string
	for n := range p.Servers {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}
