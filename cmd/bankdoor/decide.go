package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/bankdoor/bankdoor/proxy/gate"
	"github.com/bankdoor/bankdoor/proxy/pin"
	"github.com/bankdoor/bankdoor/proxy/policy"
)

// maxToolsFile bounds --tools-file.
const maxToolsFile = 16 << 20

const decideArgsHelp = `the call's arguments as JSON (default: none, as if absent). Input that is ` +
	`not one JSON value (a syntax error, data after the value, nothing at all) is a usage error (exit 2): ` +
	`no tools/call could carry it. Any JSON value is judged by the gate as the arguments of a real call ` +
	`would be, so a value that is not an object, a duplicate member name, invalid UTF-8 or a lone ` +
	`surrogate, an undeclared argument or a wrong type is a deny (exit 2, "deny args.RULE: ..." on stdout)`

func cmdDecide(e *env, args []string) int {
	fs := newFlags(e, "decide", "decide --policy P --server S --tool T [--args JSON] [--tools-file LIST.json] [--json]")
	policyPath := fs.String("policy", "", "policy file (required)")
	server := fs.String("server", "", "server name (required)")
	tool := fs.String("tool", "", "tool name, exactly as the agent would send it (required)")
	argsJSON := fs.String("args", "", decideArgsHelp)
	toolsFile := fs.String("tools-file", "", "a tools/list result ({\"tools\":[...]}) to check pins against; without it check 5 is skipped")
	asJSON := fs.Bool("json", false, "print the decision as JSON")
	pos, _, code, ok := parse(fs, args)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		return fs.usageErr("decide takes no arguments (got %q)", pos[0])
	}
	if !required(fs, "policy", "server") {
		return exitUsage
	}
	if !flagSet(fs.FlagSet, "tool") { // --tool '' is a name the gate judges
		return fs.usageErr("--tool is required")
	}
	call := gate.Call{Server: *server, Tool: *tool, SkipPinCheck: *toolsFile == ""}
	if flagSet(fs.FlagSet, "args") {
		if err := oneJSONValue([]byte(*argsJSON)); err != nil {
			return exitErr(e, exitUsage, hint(fmt.Errorf("--args: not one JSON value: %w", err),
				`give the arguments as JSON, e.g. --args '{"account_id":"acc_checking"}'`))
		}
		call.Args = []byte(*argsJSON)
	}
	p, err := policy.Load(*policyPath)
	if err != nil {
		return fail(e, exitUsage, "--policy: %w", err)
	}
	if *toolsFile != "" {
		if call.Live, call.LiveDefinition, err = readToolsFile(*toolsFile); err != nil {
			return fail(e, exitUsage, "--tools-file %s: %w", *toolsFile, err)
		}
	}
	d := gate.New(p).Decide(call)
	printDecision(e, d, *asJSON, call.SkipPinCheck)
	if !d.Allow {
		return exitUsage
	}
	return exitOK
}

// oneJSONValue checks that raw is exactly one JSON value as the proxy
// reads the arguments of a tools/call (jsonobj.ParseLenient): RFC 8259
// syntax, with duplicate member names and invalid UTF-8 let through for
// the gate to judge.
func oneJSONValue(raw []byte) error {
	if len(bytes.Trim(raw, " \t\r\n")) == 0 {
		return errors.New("empty")
	}
	dec := jsontext.NewDecoder(bytes.NewReader(raw), jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	if _, err := dec.ReadValue(); err != nil {
		return err
	}
	if _, err := dec.ReadToken(); err != io.EOF {
		return errors.New("data after the first value")
	}
	return nil
}

// readToolsFile returns the schema_sha256 and definition_sha256 of each
// tool of a tools/list result.
func readToolsFile(path string) (schema, definition map[string]string, err error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, nil, err
	}
	if fi.Size() > maxToolsFile {
		return nil, nil, fmt.Errorf("larger than %d bytes", maxToolsFile)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	l, err := pin.ParseList(b)
	if err != nil {
		return nil, nil, hint(err, `give a tools/list result: {"tools": [...]}`)
	}
	schema, definition = make(map[string]string, len(l.Tools)), make(map[string]string, len(l.Tools))
	for _, t := range l.Tools {
		schema[t.Name], definition[t.Name] = t.SHA256, t.Definition
	}
	return schema, definition, nil
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
		e.warningf("pin not checked (check 5); give --tools-file LIST.json to check it")
	}
}
