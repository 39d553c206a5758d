package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"

	"github.com/bankdoor/bankdoor/proxy/gate"
	"github.com/bankdoor/bankdoor/proxy/pin"
	"github.com/bankdoor/bankdoor/proxy/policy"
)

// maxToolsFile bounds --tools-file.
const maxToolsFile = 16 << 20

func cmdDecide(e *env, args []string) int {
	fs := newFlags(e, "decide", "decide --policy P --server S --tool T [--args JSON] [--tools-file LIST.json]")
	policyPath := fs.String("policy", "", "policy file (required)")
	server := fs.String("server", "", "server name (required)")
	tool := fs.String("tool", "", "tool name, exactly as the agent would send it (required)")
	argsJSON := fs.String("args", "", "the call's arguments as a JSON object (default: none)")
	toolsFile := fs.String("tools-file", "", "a tools/list result ({\"tools\":[...]}) to check pins against; without it check 5 is skipped")
	asJSON := fs.Bool("json", false, "print the decision as JSON")
	pos, _, code, ok := parse(fs, args)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		return fail(e, exitUsage, "decide takes no arguments (got %q)", pos[0])
	}
	if !required(e, fs, "policy", "server") {
		return exitUsage
	}
	if !flagSet(fs, "tool") {
		return fail(e, exitUsage, "decide: flag --tool is required")
	}
	p, err := policy.Load(*policyPath)
	if err != nil {
		return fail(e, exitUsage, "decide: --policy: %v", err)
	}
	call := gate.Call{Server: *server, Tool: *tool, SkipPinCheck: *toolsFile == ""}
	if flagSet(fs, "args") {
		call.Args = []byte(*argsJSON)
	}
	if *toolsFile != "" {
		if call.Live, err = readToolsFile(*toolsFile); err != nil {
			return fail(e, exitUsage, "decide: --tools-file %s: %v", *toolsFile, err)
		}
	}
	d := gate.New(p).Decide(call)
	printDecision(e, d, *asJSON, call.SkipPinCheck)
	if !d.Allow {
		return exitUsage
	}
	return exitOK
}

func flagSet(fs *flag.FlagSet, name string) bool {
	found := false
	fs.Visit(func(f *flag.Flag) { found = found || f.Name == name })
	return found
}

func readToolsFile(path string) (map[string]string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if fi.Size() > maxToolsFile {
		return nil, fmt.Errorf("larger than %d bytes", maxToolsFile)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	l, err := pin.ParseList(b)
	if err != nil {
		return nil, fmt.Errorf("%v (want a tools/list result: {\"tools\": [...]})", err)
	}
	live := make(map[string]string, len(l.Tools))
	for _, t := range l.Tools {
		live[t.Name] = t.SHA256
	}
	return live, nil
}

func printDecision(e *env, d gate.Decision, asJSON, pinsSkipped bool) {
	if asJSON {
		out := map[string]any{"allow": d.Allow, "rule": d.Rule, "reason": d.Reason, "check": d.Check,
			"arg_names": d.ArgNames, "args_sha256": d.ArgsSHA256, "pin_checked": !pinsSkipped}
		if d.Allow {
			out["arguments"] = json.RawMessage(d.Args)
		}
		b, _ := json.Marshal(out)
		fmt.Fprintf(e.stdout, "%s\n", b)
		return
	}
	if !d.Allow {
		fmt.Fprintf(e.stdout, "deny %s: %s\n", d.Rule, d.Reason)
		return
	}
	fmt.Fprintf(e.stdout, "allow %s\n", d.Args)
	if pinsSkipped {
		fmt.Fprintln(e.stderr, "bankdoor decide: note: pin not checked (check 5); give --tools-file to check it")
	}
}
