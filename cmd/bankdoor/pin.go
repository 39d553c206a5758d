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
	if len(pos) > 0 || argv == nil {
		return fail(e, exitUsage, "pin: give the server command after --, e.g. bankdoor pin -- npx -y bankmcp")
	}
	if *write && (*policyPath == "" || *server == "") {
		return fail(e, exitUsage, "pin: --write needs --policy P and --server S")
	}
	ctx, cancel := context.WithTimeout(context.Background(), connectTimeout)
	defer cancel()
	conn, err := startServer(ctx, argv)
	if err != nil {
		return fail(e, exitFailure, "pin: %v", err)
	}
	tools, err := pin.Fetch(ctx, conn)
	conn.Close()
	if err != nil {
		return fail(e, exitFailure, "pin: listing the tools of %q: %v", argv[0], err)
	}
	pins := make(map[string]string, len(tools))
	for _, t := range tools {
		fmt.Fprintf(e.stdout, "%s %s\n", t.SHA256, t.Name)
		pins[t.Name] = t.SHA256
	}
	if !*write {
		return exitOK
	}
	return writePins(e, *policyPath, *server, pins)
}

func writePins(e *env, path, server string, pins map[string]string) int {
	p, err := policy.Load(path)
	if err != nil {
		return fail(e, exitFailure, "pin: %v", err)
	}
	srv, ok := p.Servers[server]
	if !ok {
		return fail(e, exitUsage, "pin: --server %q is not in %s (servers: %s)", server, path, serverNames(p))
	}
	want := make(map[string]string)
	for name := range srv.Tools {
		sum, listed := pins[name]
		if !listed {
			fmt.Fprintf(e.stderr, "bankdoor pin: %s: tool %q is in the policy but the server does not list it; left unpinned\n", path, name)
			continue
		}
		want[name] = sum
	}
	changed, _, err := policy.SetPins(path, server, want)
	if err != nil {
		return fail(e, exitFailure, "pin: %v", err)
	}
	fmt.Fprintf(e.stderr, "bankdoor pin: %s: %d pin(s) written, %d changed\n", path, len(want), len(changed))
	return exitOK
}
