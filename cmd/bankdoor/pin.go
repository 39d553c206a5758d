package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/bankdoor/bankdoor/proxy/pin"
	"github.com/bankdoor/bankdoor/proxy/policy"
)

// pinSynopsis is the usage line of pin.
const pinSynopsis = "pin [--policy P --server S --write] [--hashes] {-- CMD ARGS... | --url URL [--url-ca PEM] [--header 'N: v']... [--header-env N=ENVVAR]...}"

func cmdPin(e *env, args []string) int {
	fs := newFlags(e, "pin", pinSynopsis)
	policyPath := fs.String("policy", "", "policy file to update (with --write)")
	server := fs.String("server", "", "server name in the policy (with --write)")
	write := fs.Bool("write", false, "write the pins of the policy's allowlisted tools into the policy file, keeping its comments")
	hashes := fs.Bool("hashes", false, "print only \"schema_sha256 name\" per tool, not the definitions")
	var df downFlags
	argv, code, ok := parseServer(e, fs, &df, args, "bankdoor pin -- bankmcp")
	if !ok {
		return code
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
	tools, err := listTools(&df, argv)
	if err != nil {
		return exitErr(e, exitFailure, err)
	}
	pins := make(map[string]policy.Pin, len(tools))
	for _, t := range tools {
		if *hashes {
			fmt.Fprintf(e.stdout, "%s %s\n", t.SHA256, t.Name)
		} else if err := printDefinition(e.stdout, t); err != nil {
			return exitErr(e, exitFailure, err)
		}
		pins[t.Name] = policy.Pin{Schema: t.SHA256, Definition: t.Definition}
	}
	if !*write {
		return exitOK
	}
	return writePins(e, p, *server, pins)
}

// parseServer parses the flags of a command that reaches one bank server,
// by its command after -- or by --url (df), and checks them; example is
// how the command is run.
func parseServer(e *env, fs *flags, df *downFlags, args []string, example string) (argv []string, code int, ok bool) {
	df.register(fs.FlagSet)
	pos, argv, code, ok := parse(fs, args)
	if !ok {
		return nil, code, false
	}
	if len(pos) > 0 {
		return nil, exitErr(e, exitUsage, hint(fmt.Errorf("unexpected argument %q", pos[0]), "give the bank server's command after --, e.g. %s", example)), false
	}
	if err := df.check(argv, os.Getenv); err != nil {
		return nil, exitErr(e, exitUsage, err), false
	}
	return argv, 0, true
}

// listTools starts the bank server (or connects to --url), lists every
// tool it offers (see pin.Fetch) and stops it.
func listTools(df *downFlags, argv []string) ([]pin.Tool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), connectTimeout)
	defer cancel()
	conn, err := df.dial(ctx, argv)
	if err != nil {
		return nil, err
	}
	tools, err := pin.Fetch(ctx, conn)
	conn.Close()
	if err != nil {
		name := df.url
		if name == "" {
			name = argv[0]
		}
		return nil, fmt.Errorf("listing the tools of %q: %w", name, err)
	}
	return tools, nil
}

// printDefinition prints a tool's pins and its definition, indented, as
// the server sent it (members in its order), for a human to read before
// pinning.
func printDefinition(w io.Writer, t pin.Tool) error {
	def := jsontext.Value(slices.Clone(t.Raw))
	if err := def.Indent(jsontext.WithIndent("  ")); err != nil {
		return fmt.Errorf("tool %q: its definition: %w", t.Name, err)
	}
	_, err := fmt.Fprintf(w, "# %s\nschema_sha256: %s\ndefinition_sha256: %s\n%s\n\n", t.Name, t.SHA256, t.Definition, def)
	return err
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
