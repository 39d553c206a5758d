package policy

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Documents for the error table. Each puts the part under test at a known
// place, so the cases can state the line and column by hand.
const (
	// valid is a minimal valid policy; lines added after it start at line 6.
	valid = "version: 1\nid: t\ndefault: deny\nservers:\n  bank: {}\n"
	// header leads up to a server's tools; tool names start at 7:7.
	header = "version: 1\nid: t\ndefault: deny\nservers:\n  bank:\n    tools:\n"
)

// serverDoc puts body inside server "bank": its first line is 6:5.
func serverDoc(body string) string {
	return "version: 1\nid: t\ndefault: deny\nservers:\n  bank:\n" + indent(body, 4)
}

// toolDoc puts body inside tool "get_x": its first line is 8:9.
func toolDoc(body string) string {
	return header + "      get_x:\n" + indent(body, 8)
}

// argDoc puts body inside argument "a" of tool "get_x": its first line is
// 10:13, so a value after "key: " starts at column 13+len(key)+2.
func argDoc(body string) string {
	return toolDoc("args:\n  a:\n" + indent(body, 4))
}

func indent(s string, n int) string {
	pad := strings.Repeat(" ", n)
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	return pad + strings.Join(lines, "\n"+pad) + "\n"
}

// errorStrings returns the messages of the errors joined in err.
func errorStrings(err error) []string {
	var out []string
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			out = append(out, e.Error())
		}
		return out
	}
	return []string{err.Error()}
}

type errorCase struct {
	name string
	in   string
	want []string // each a prefix-and-substring: "t.yaml:L:C: text"
}

func TestParseErrors(t *testing.T) {
	var cases []errorCase
	cases = append(cases, topLevelCases()...)
	cases = append(cases, serverAndToolCases()...)
	cases = append(cases, argCases()...)
	cases = append(cases, numberCases()...)
	cases = append(cases, enumCases()...)
	cases = append(cases, yamlFeatureCases()...)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Parse("t.yaml", []byte(tc.in))
			if err == nil {
				t.Fatalf("Parse succeeded; want errors %q", tc.want)
			}
			if p != nil {
				t.Errorf("Parse returned a policy with its error")
			}
			checkErrors(t, err, tc.want)
		})
	}
}

func checkErrors(t *testing.T, err error, want []string) {
	t.Helper()
	got := errorStrings(err)
	if len(got) != len(want) {
		t.Fatalf("got %d errors, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
	for i := range want {
		pos, text, _ := strings.Cut(want[i], ": ")
		if !strings.HasPrefix(got[i], pos+": ") || !strings.Contains(got[i], text) {
			t.Errorf("error %d:\n got %s\nwant %s", i, got[i], want[i])
		}
	}
}

func topLevelCases() []errorCase {
	return []errorCase{
		{"unknown key", valid + "verison: 2\n", []string{
			`t.yaml:6:1: unknown key "verison" in the policy (known: version, id, default, require_pins, never_allow, receipts, servers)`}},
		{"duplicate key", "version: 1\nversion: 1\nid: t\ndefault: deny\nservers:\n  bank: {}\n", []string{
			`t.yaml:2:1: duplicate key "version" in the policy (first at line 1, column 1); remove one`}},
		{"missing keys", "id: t\n", []string{
			`t.yaml:1:1: missing key "version" in the policy; add version: 1`,
			`t.yaml:1:1: missing key "default" in the policy; add default: deny`,
			`t.yaml:1:1: missing key "servers" in the policy; add servers:`}},
		{"version 2", strings.Replace(valid, "version: 1", "version: 2", 1), []string{
			`t.yaml:1:10: version 2 is not supported; this bankdoor reads version: 1`}},
		{"version quoted", strings.Replace(valid, "version: 1", `version: "1"`, 1), []string{
			`t.yaml:1:10: "version" must be an integer, found the string "1"`}},
		{"default allow", strings.Replace(valid, "default: deny", "default: allow", 1), []string{
			`t.yaml:3:10: default "allow" is not supported; write default: deny`}},
		{"receipts", valid + "receipts: some\n", []string{
			`t.yaml:6:11: receipts "some" is not one of deny, all`}},
		{"id charset", strings.Replace(valid, "id: t", "id: a/b", 1), []string{
			`t.yaml:2:5: id "a/b" is not 1 to 64 characters of [A-Za-z0-9._-]`}},
		{"id length", strings.Replace(valid, "id: t", "id: "+strings.Repeat("i", 65), 1), []string{
			`t.yaml:2:5: id "iiii`}},
		{"require_pins yes", valid + "require_pins: yes\n", []string{
			`t.yaml:6:15: "require_pins" must be true or false, found the string "yes"; write true or false`}},
		{"require_pins True", valid + "require_pins: True\n", []string{
			`t.yaml:6:15: "require_pins" must be true or false, found the boolean True`}},
		{"top is a list", "- version: 1\n", []string{
			`t.yaml:1:1: the policy must be a mapping, found a list`}},
		{"servers list", "version: 1\nid: t\ndefault: deny\nservers: [bank]\n", []string{
			`t.yaml:4:10: "servers" must be a mapping, found a list`}},
		{"servers empty", "version: 1\nid: t\ndefault: deny\nservers: {}\n", []string{
			`t.yaml:4:10: "servers" is empty`}},
		{"never_allow words", valid + "never_allow: [Borrow, top_up, borrow, 5]\n", []string{
			`t.yaml:6:23: never_allow word "top_up" is not 1 to 64 ASCII letters and digits`,
			`t.yaml:6:31: never_allow word "borrow" is listed twice`,
			`t.yaml:6:39: a never_allow word must be a string, found the integer 5`}},
		{"never_allow not a list", valid + "never_allow: borrow\n", []string{
			`t.yaml:6:14: "never_allow" must be a list, found the string "borrow"`}},
	}
}

func serverAndToolCases() []errorCase {
	hex := strings.Repeat("ab", 32)
	return []errorCase{
		{"server name", "version: 1\nid: t\ndefault: deny\nservers:\n  bank.x: {}\n", []string{
			`t.yaml:5:3: server name "bank.x" is not 1 to 64 characters of [A-Za-z0-9_-]`}},
		{"server name length", "version: 1\nid: t\ndefault: deny\nservers:\n  " + strings.Repeat("s", 65) + ": {}\n", []string{
			`t.yaml:5:3: server name "sss`}},
		{"server null", "version: 1\nid: t\ndefault: deny\nservers:\n  bank:\n", []string{
			`t.yaml:5:8: server "bank" must be a mapping, found null; write {} for an empty one`}},
		{"server unknown key", serverDoc("tool: {}"), []string{
			`t.yaml:6:5: unknown key "tool" in server "bank" (known: expose, trace_context, tools)`}},
		{"trace_context", serverDoc("trace_context: always"), []string{
			`t.yaml:6:20: trace_context "always" is not one of drop, forward`}},
		{"trace_context list", serverDoc("trace_context: [forward]"), []string{
			`t.yaml:6:20: "trace_context" of server "bank" must be a string, found a list`}},
		{"expose", serverDoc("expose: [resources, files, resources]"), []string{
			`t.yaml:6:25: expose entry "files" is not a feature bankdoor can relay; use one of resources, prompts,`,
			`t.yaml:6:32: expose entry "resources" is listed twice`}},
		{"tool name dot", header + "      bank.transfer: {}\n", []string{
			`t.yaml:7:7: tool name "bank.transfer" is not 1 to 128 characters of [A-Za-z0-9_-]`}},
		{"tool name space", header + "      \"get balances\": {}\n", []string{
			`t.yaml:7:7: tool name "get balances" is not`}},
		{"tool name length", header + "      " + strings.Repeat("a", 129) + ": {}\n", []string{
			`t.yaml:7:7: tool name "aaa`}},
		{"tool name 128 ok plus dup", header + "      " + strings.Repeat("a", 128) + ": {}\n      get_x: {}\n      get_x: {}\n", []string{
			`t.yaml:9:7: duplicate key "get_x" in "tools" of server "bank" (first at line 8, column 7)`}},
		{"tool null", header + "      get_x:\n", []string{
			`t.yaml:7:13: tool "get_x" must be a mapping, found null; write {} for an empty one`}},
		{"tool unknown key", toolDoc("arguments: {}"), []string{
			`t.yaml:8:9: unknown key "arguments" in tool "get_x" (known: schema_sha256, definition_sha256, acknowledge, args)`}},
		{"pin upper case", toolDoc("schema_sha256: " + strings.ToUpper(hex)), []string{
			`t.yaml:8:24: schema_sha256 "ABAB`}},
		{"pin short", toolDoc("schema_sha256: " + hex[:63]), []string{
			`t.yaml:8:24: schema_sha256 "abab`}},
		{"pin integer", toolDoc("schema_sha256: 123"), []string{
			`t.yaml:8:24: "schema_sha256" of tool "get_x" must be a string, found the integer 123`}},
		{"args list", toolDoc("args: [a]"), []string{
			`t.yaml:8:15: "args" of tool "get_x" must be a mapping, found a list`}},
		{"too many args", toolDoc("args:\n" + manyArgs(33)), []string{
			`t.yaml:9:11: tool "get_x" declares 33 arguments, more than the 32 the gate accepts`}},
		{"arg name", toolDoc("args:\n  a.b: {type: boolean}\n  " + strings.Repeat("n", 65) + ": {type: boolean}"), []string{
			`t.yaml:9:11: argument name "a.b" is not 1 to 64 characters of [A-Za-z0-9_-]`,
			`t.yaml:10:11: argument name "nnn`}},
		{"arg not a mapping", toolDoc("args:\n  a: string"), []string{
			`t.yaml:9:14: argument "a" must be a mapping, found the string "string"`}},
	}
}

func manyArgs(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "  a%d: {type: boolean}\n", i)
	}
	return b.String()
}

func argCases() []errorCase {
	return []errorCase{
		{"unknown arg key", argDoc("type: string\npatern: x"), []string{
			`t.yaml:11:13: unknown key "patern" in argument "a" (known: type, required, pattern, min_length, max_length, min, max, enum, items, min_items, max_items)`}},
		{"missing type", argDoc("required: true"), []string{
			`t.yaml:10:13: missing key "type" in argument "a"; add type: string (or integer, number, boolean, array)`}},
		{"bad type", argDoc("type: object"), []string{
			`t.yaml:10:19: type "object" of argument "a" is not one of string, integer, number, boolean`}},
		{"required yes", argDoc("type: string\nmax_length: 1\nrequired: yes"), []string{
			`t.yaml:12:23: "required" of argument "a" must be true or false, found the string "yes"`}},
		{"pattern on integer", argDoc("type: integer\npattern: x"), []string{
			`t.yaml:11:13: "pattern" does not apply to argument "a" of type integer; remove it`}},
		{"lengths on boolean", argDoc("type: boolean\nmin_length: 1\nmax_length: 2"), []string{
			`t.yaml:11:13: "min_length" does not apply to argument "a" of type boolean`,
			`t.yaml:12:13: "max_length" does not apply to argument "a" of type boolean`}},
		{"min on string", argDoc("type: string\nmin: 1"), []string{
			`t.yaml:11:13: "min" does not apply to argument "a" of type string`}},
		{"min above max", argDoc("type: integer\nmin: 5\nmax: 1"), []string{
			`t.yaml:12:18: max 1 of argument "a" is less than its min 5`}},
		{"negative length", argDoc("type: string\nmin_length: -1"), []string{
			`t.yaml:11:25: min_length -1 of argument "a" is negative`}},
		{"min_length above max_length", argDoc("type: string\nmin_length: 5\nmax_length: 2"), []string{
			`t.yaml:12:25: max_length 2 of argument "a" is less than its min_length 5`}},
		{"pattern does not compile", argDoc("type: string\npattern: \"(\""), []string{
			`t.yaml:11:22: pattern of argument "a" does not compile: error parsing regexp: missing closing ): ` + "`(`"}},
		{"pattern that only compiles anchored", argDoc("type: string\npattern: \"a)|(b\""), []string{
			`t.yaml:11:22: pattern of argument "a" does not compile: error parsing regexp: unexpected )`}},
		{"pattern not RE2", argDoc("type: string\npattern: \"(?=a)\""), []string{
			`t.yaml:11:22: pattern of argument "a" does not compile`}},
		{"pattern integer", argDoc("type: string\npattern: 123"), []string{
			`t.yaml:11:22: "pattern" of argument "a" must be a string, found the integer 123; put it in quotes`}},
	}
}

func numberCases() []errorCase {
	var cases []errorCase
	for _, v := range []string{"0x10", "010", "1_000", "+5", "1.0", "1e3", `"5"`, "~", "[1]"} {
		cases = append(cases, errorCase{"integer " + v, argDoc("type: integer\nmax: " + v), []string{
			`t.yaml:11:18: "max" of argument "a" must be an integer, found`}})
	}
	for _, v := range []string{".5", "+1.5", ".inf", "-.inf", ".nan", "1.", "0x1p3"} {
		cases = append(cases, errorCase{"number " + v, argDoc("type: number\nmin: " + v), []string{
			`t.yaml:11:18: "min" of argument "a" must be a number, found`}})
	}
	return append(cases,
		errorCase{"integer above 2^53", argDoc("type: integer\nmax: 9007199254740993"), []string{
			`t.yaml:11:18: "max" of argument "a" is 9007199254740993, outside ±2^53`}},
		errorCase{"integer below -2^53", argDoc("type: integer\nmin: -9007199254740993"), []string{
			`t.yaml:11:18: "min" of argument "a" is -9007199254740993, outside ±2^53`}},
		errorCase{"integer beyond int64", argDoc("type: integer\nmin: 99999999999999999999"), []string{
			`t.yaml:11:18: "min" of argument "a" is 99999999999999999999, outside ±2^53`}},
		errorCase{"number overflow", argDoc("type: number\nmax: 1e400"), []string{
			`t.yaml:11:18: "max" of argument "a" is 1e400, too large`}},
		errorCase{"length not integer", argDoc("type: string\nmax_length: 1.5"), []string{
			`t.yaml:11:25: "max_length" of argument "a" must be an integer, found the number 1.5`}},
	)
}

func enumCases() []errorCase {
	return []errorCase{
		{"enum string with integer", argDoc("type: string\nenum: [USD, 5]"), []string{
			`t.yaml:11:25: an enum value of argument "a" (type string) must be a string, found the integer 5; put it in quotes`}},
		{"enum integer with others", argDoc("type: integer\nenum: [1, x, 1.5, 2]"), []string{
			`t.yaml:11:23: an enum value of argument "a" (type integer) must be an integer, found the string "x"`,
			`t.yaml:11:26: an enum value of argument "a" (type integer) must be an integer, found the number 1.5`}},
		{"enum boolean", argDoc("type: boolean\nenum: [true, 1]"), []string{
			`t.yaml:11:26: an enum value of argument "a" (type boolean) must be true or false, found the integer 1`}},
		{"enum number", argDoc("type: number\nenum: [1, \"2\"]"), []string{
			`t.yaml:11:23: an enum value of argument "a" (type number) must be a number, found the string "2"`}},
		{"enum empty", argDoc("type: string\nenum: []"), []string{
			`t.yaml:11:19: enum of argument "a" is empty`}},
		{"enum not a list", argDoc("type: string\nenum: USD"), []string{
			`t.yaml:11:19: "enum" of argument "a" must be a list, found the string "USD"`}},
		{"enum duplicate", argDoc("type: number\nenum: [1, 1.0, 1e0]"), []string{
			`t.yaml:11:23: enum value 1 of argument "a" is listed twice`,
			`t.yaml:11:28: enum value 1 of argument "a" is listed twice`}},
		{"enum duplicate string", argDoc("type: string\nenum: [USD, 'USD']"), []string{
			`t.yaml:11:25: enum value "USD" of argument "a" is listed twice`}},
		{"enum outside pattern", argDoc("type: string\npattern: \"[A-Z]{3}\"\nenum: [USD, usd]"), []string{
			`t.yaml:12:25: an enum value of argument "a" (type string) is "usd", which does not match the pattern`}},
		{"enum outside length", argDoc("type: string\nmax_length: 3\nenum: [EURO]"), []string{
			`t.yaml:12:20: an enum value of argument "a" (type string) is "EURO", which is longer than max_length 3`}},
		{"enum outside range", argDoc("type: integer\nmin: 1\nenum: [0, 1]"), []string{
			`t.yaml:12:20: enum value 0 of argument "a" is outside min and max`}},
		{"enum integer beyond 2^53", argDoc("type: integer\nenum: [9007199254740993]"), []string{
			`t.yaml:11:20: an enum value of argument "a" (type integer) is 9007199254740993, outside ±2^53`}},
	}
}

func yamlFeatureCases() []errorCase {
	return []errorCase{
		{"anchor and alias", strings.Replace(valid, "id: t", "id: &x t", 1) + "receipts: *x\n", []string{
			`t.yaml:2:5: anchor &x: anchors and aliases are not allowed in a policy`,
			`t.yaml:6:11: alias *x: anchors and aliases are not allowed in a policy`}},
		{"tag", strings.Replace(valid, "id: t", "id: !!str t", 1), []string{
			`t.yaml:2:5: YAML tags are not allowed in a policy`}},
		{"local tag", strings.Replace(valid, "id: t", "id: !x t", 1), []string{
			`t.yaml:2:5: YAML tags are not allowed in a policy`}},
		{"non-specific tag", strings.Replace(valid, "version: 1", "version: ! 1", 1), []string{
			`t.yaml:1:10: YAML tags are not allowed in a policy`}},
		{"merge key", serverDoc("<<: {tools: {}}"), []string{
			`t.yaml:6:5: merge key "<<" is not allowed in a policy`}},
		{"two documents", valid + "---\nversion: 1\n", []string{
			`t.yaml:6:1: a second YAML document starts here`}},
		{"empty", "", []string{`t.yaml: the file holds no YAML document`}},
		{"comments only", "# nothing\n", []string{`t.yaml: the file holds no YAML document`}},
		{"empty document", "---\n", []string{`t.yaml:2:1: the policy must be a mapping, found null`}},
		{"syntax error", valid + "x: [\n", []string{`t.yaml:6: invalid YAML: did not find expected node content`}},
		{"tab indent", "version: 1\nservers:\n\tbank: {}\n", []string{`t.yaml:3: invalid YAML: found character that cannot start any token`}},
		{"key is a list", valid + "? [a]\n: 1\n", []string{`t.yaml:6:3: a key in the policy is a list; keys must be names`}},
		{"invalid UTF-8", strings.Replace(valid, "id: t", "id: t\xff", 1), []string{
			`t.yaml:2:6: the file is not valid UTF-8`}},
		{"lone CR", "version: 1\rid: t\n", []string{
			`t.yaml:1:11: carriage return not followed by a line feed`}},
		{"line separator", "version: 1\nid: t\u2028x\n", []string{
			`t.yaml:2:6: line break U+2028 is not allowed`}},
		{"too large", valid + strings.Repeat("#", MaxSize), []string{
			`t.yaml: the file is larger than 1048576 bytes`}},
	}
}

func TestParseErrorLimit(t *testing.T) {
	var b strings.Builder
	b.WriteString(valid)
	for i := range 2 * maxErrors {
		fmt.Fprintf(&b, "k%d: 1\n", i)
	}
	_, err := Parse("t.yaml", []byte(b.String()))
	got := errorStrings(err)
	if len(got) != maxErrors+1 {
		t.Fatalf("got %d errors, want %d", len(got), maxErrors+1)
	}
	if want := "t.yaml: more than 50 errors"; !strings.HasPrefix(got[maxErrors], want) {
		t.Errorf("last error %q, want prefix %q", got[maxErrors], want)
	}
}

func TestErrorAs(t *testing.T) {
	_, err := Parse("t.yaml", []byte(valid+"x: 1\ny: 2\n"))
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("errors.As(%v) failed", err)
	}
	if e.File != "t.yaml" || e.Line != 6 || e.Column != 1 || !strings.Contains(e.Msg, `"x"`) {
		t.Errorf("first error = %+v, want t.yaml:6:1 naming \"x\"", e)
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "p.yaml")
	data := []byte(valid)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	if p.Path != path || p.SHA256 != hex.EncodeToString(sum[:]) {
		t.Errorf("Path %q SHA256 %q", p.Path, p.SHA256)
	}
	if _, err := Load(filepath.Join(dir, "missing.yaml")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Load(missing) = %v, want an error wrapping os.ErrNotExist", err)
	}
	big := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(big, bytes.Repeat([]byte("#"), MaxSize+10), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(big); err == nil || !strings.Contains(err.Error(), big+": the file is larger") {
		t.Errorf("Load(big) = %v, want a size error naming the file", err)
	}
	if _, err := Load(dir); err == nil {
		t.Errorf("Load(directory) succeeded")
	}
}
