package main

import (
	"context"
	"fmt"

	"github.com/bankdoor/bankdoor/proxy/pin"
	"github.com/bankdoor/bankdoor/proxy/policy"
)

func cmdPin(e *env, args []string) int {
	fs := newFlags(e, "pin", "pin [--policy P --server S --write] -- CMD ARGS...")
	policyPath := fs.String("policy", "", "policy file to update (with --write)")
	server := fs.String("server", "", "server name in the policy (with --write)")
	write := fs.Bool("write", false, "write the pins of the policy's allowlisted tools into the policy file, keeping its comments")
	pos, argv, code, ok := parse(fs, args)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		return exitErr(e, exitUsage, hint(fmt.Errorf("unexpected argument %q", pos[0]), "give the bank server's command after --, e.g. bankdoor pin -- bankmcp"))
	}
	if len(argv) == 0 {
		return exitErr(e, exitUsage, hint(errNoCommand, "give the bank server's command after --, e.g. bankdoor pin -- bankmcp"))
	}
	if *write && (*policyPath == "" || *server == "") {
		return fs.usageErr("--write needs --policy P and --server S")
	}
	var p *policy.Policy
	if *write { // before the server starts: a bad policy fails with nothing done
		var err error
		if p, err = loadPolicy(*policyPath, *server); err != nil {
			return exitErr(e, exitUsage, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), connectTimeout)
	defer cancel()
	conn, err := startServer(ctx, argv)
	if err != nil {
		return exitErr(e, exitFailure, err)
	}
	tools, err := pin.Fetch(ctx, conn)
	conn.Close()
	if err != nil {
		return fail(e, exitFailure, "listing the tools of %q: %w", argv[0], err)
	}
	pins := make(map[string]policy.Pin, len(tools))
	for _, t := range tools {
		fmt.Fprintf(e.stdout, "%s %s\n", t.SHA256, t.Name)
		pins[t.Name] = policy.Pin{Schema: t.SHA256, Definition: t.Definition}
	}
	if !*write {
		return exitOK
	}
	return writePins(e, p, *server, pins)
}

// loadPolicy loads the --policy file and checks that it has the --server.
func loadPolicy(path, server string) (*policy.Policy, error) {
	p, err := policy.Load(path)
	if err != nil {
		return nil, fmt.Errorf("--policy: %w", err)
	}
	if _, ok := p.Servers[server]; !ok {
		return nil, hint(fmt.Errorf("--server %q is not in %s", server, path), "the servers of %s are: %s", path, serverNames(p))
	}
	return p, nil
}

func writePins(e *env, p *policy.Policy, server string, pins map[string]policy.Pin) int {
	want := make(map[string]policy.Pin)
	for name := range p.Servers[server].Tools {
		sum, listed := pins[name]
		if !listed {
			e.warningf("%s: tool %q is in the policy but the server does not list it; left unpinned", p.Path, name)
			continue
		}
		want[name] = sum
	}
	changed, _, err := policy.SetPins(p.Path, server, want)
	if err != nil {
		return exitErr(e, exitFailure, err)
	}
	e.printf("%s: %d pin(s) written, %d changed", p.Path, len(want), len(changed))
	return exitOK
}
