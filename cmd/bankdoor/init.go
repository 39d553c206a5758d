package main

import (
	"fmt"

	"github.com/bankdoor/bankdoor/proxy/draft"
)

// initSynopsis is the usage line of init.
const initSynopsis = "init [--server S] [--id ID] {-- CMD ARGS... | --url URL [--url-ca PEM] [--header 'N: v']... [--header-env N=ENVVAR]...}"

// cmdInit prints a starting policy for a live server (see package
// proxy/draft) on stdout.
func cmdInit(e *env, args []string) int {
	fs := newFlags(e, "init", initSynopsis)
	server := fs.String("server", "bank", "the server's name in the policy (what proxy --server will name)")
	id := fs.String("id", "", "the policy's id (default: SERVER-readonly)")
	var df downFlags
	argv, code, ok := parseServer(e, fs, &df, args, "bankdoor init -- bankmcp > policy.yaml")
	if !ok {
		return code
	}
	if *id == "" {
		*id = *server + "-readonly"
	}
	tools, err := listTools(&df, argv)
	if err != nil {
		return exitErr(e, exitFailure, err)
	}
	out, err := draft.Write(tools, draft.Options{Server: *server, ID: *id, Command: argv, URL: df.url})
	if err != nil {
		return exitErr(e, exitUsage, fmt.Errorf("--server or --id: %w", err))
	}
	e.stdout.Write(out)
	e.printf("a starting policy for %d tool(s) is on stdout: review it, then run bankdoor lint", len(tools))
	return exitOK
}
