package policy

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func pinOf(c byte) string { return strings.Repeat(string(c), 64) }

// schemaOnly is pins with schema_sha256 values only.
func schemaOnly(pins map[string]string) map[string]Pin {
	out := make(map[string]Pin, len(pins))
	for tool, sum := range pins {
		out[tool] = Pin{Schema: sum}
	}
	return out
}

// pinsIn are the schema pins the tests set in testdata/pins.yaml.
func pinsIn() map[string]string {
	return map[string]string{
		"get_balances":     pinOf('a'),
		"get_transactions": pinOf('b'),
		"list_accounts":    pinOf('c'),
		"list_cards":       pinOf('3'), // already set
		"consent_status":   pinOf('d'),
		"list_watches":     pinOf('e'),
		"transfer":         pinOf('f'), // not in the policy
	}
}

// pinnedText is testdata/pins.yaml as SetPins must leave it: each edit
// spelled out, everything else byte for byte the same.
func pinnedText(t *testing.T, in string) string {
	t.Helper()
	out := in
	for _, r := range [][2]string{
		{"      get_balances:   # comment after the name\n",
			"      get_balances:   # comment after the name\n        schema_sha256: " + pinOf('a') + "\n"},
		{strings.Repeat("9f", 32) + "  # old pin", pinOf('b') + "  # old pin"},
		{`"` + pinOf('2') + `"`, `"` + pinOf('c') + `"`},
		{"consent_status: {}", "consent_status: {schema_sha256: " + pinOf('d') + "}"},
		{"list_watches: { args:", "list_watches: { schema_sha256: " + pinOf('e') + ", args:"},
	} {
		if strings.Count(out, r[0]) != 1 {
			t.Fatalf("test input has %d copies of %q", strings.Count(out, r[0]), r[0])
		}
		out = strings.Replace(out, r[0], r[1], 1)
	}
	return out
}

func writeTemp(t *testing.T, data string, mode os.FileMode) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(path, []byte(data), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestSetPins(t *testing.T) {
	orig, err := os.ReadFile("testdata/pins.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for name, conv := range map[string]func(string) string{
		"lf":   func(s string) string { return s },
		"crlf": crlf,
	} {
		t.Run(name, func(t *testing.T) {
			in := conv(string(orig))
			path := writeTemp(t, in, 0o640)
			changed, missing, err := SetPins(path, "bank", schemaOnly(pinsIn()))
			if err != nil {
				t.Fatal(err)
			}
			wantChanged := []string{"consent_status", "get_balances", "get_transactions", "list_accounts", "list_watches"}
			if diff := cmp.Diff(wantChanged, changed); diff != "" {
				t.Errorf("changed (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]string{"transfer"}, missing); diff != "" {
				t.Errorf("notInPolicy (-want +got):\n%s", diff)
			}
			got, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(conv(pinnedText(t, string(orig))), string(got)); diff != "" {
				t.Errorf("file after SetPins (-want +got):\n%s", diff)
			}
			checkPinnedFile(t, path)
		})
	}
}

func checkPinnedFile(t *testing.T, path string) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o640 {
		t.Errorf("mode %v, want 0640", fi.Mode().Perm())
	}
	entries, err := os.ReadDir(filepath.Dir(path))
	if err != nil || len(entries) != 1 {
		t.Errorf("directory holds %d entries (%v), want only the policy", len(entries), err)
	}
	p, err := Load(path)
	if err != nil {
		t.Fatalf("Load after SetPins: %v", err)
	}
	for tool, pin := range pinsIn() {
		if tl := p.Servers["bank"].Tools[tool]; tl != nil && tl.SchemaSHA256 != pin {
			t.Errorf("tool %s pinned %q, want %q", tool, tl.SchemaSHA256, pin)
		}
	}
	if p.Servers["bank"].Tools["get_rates"].SchemaSHA256 != "" || p.Servers["other"].Tools["get_balances"].SchemaSHA256 != "" {
		t.Errorf("SetPins pinned a tool it was not given")
	}
}

func TestSetPinsUnchanged(t *testing.T) {
	in := toolDoc("schema_sha256: " + pinOf('a'))
	path := writeTemp(t, in, 0o600)
	before, _ := os.Stat(path)
	changed, missing, err := SetPins(path, "bank", map[string]Pin{"get_x": {Schema: pinOf('a')}})
	if err != nil || changed != nil || missing != nil {
		t.Fatalf("SetPins = %q, %q, %v; want nothing changed", changed, missing, err)
	}
	after, _ := os.Stat(path)
	if !os.SameFile(before, after) || !after.ModTime().Equal(before.ModTime()) {
		t.Errorf("file was rewritten although no pin changed")
	}
}

func TestSetPinsSymlink(t *testing.T) {
	path := writeTemp(t, toolDoc("args: {}"), 0o640)
	link := filepath.Join(t.TempDir(), "link.yaml")
	if err := os.Symlink(path, link); err != nil {
		t.Skip("no symlinks:", err)
	}
	if _, _, err := SetPins(link, "bank", map[string]Pin{"get_x": {Schema: pinOf('a')}}); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the symbolic link was replaced (%v)", err)
	}
	p, err := Load(path)
	if err != nil || p.Servers["bank"].Tools["get_x"].SchemaSHA256 != pinOf('a') {
		t.Errorf("target not pinned: %v", err)
	}
}

func TestSetPinsErrors(t *testing.T) {
	for _, tc := range []struct {
		name, in, server string
		pins             map[string]string
		want             string
	}{
		{"server not in policy", toolDoc("args: {}"), "nope", map[string]string{"get_x": pinOf('a')},
			`server "nope" is not in`},
		{"bad pin", toolDoc("args: {}"), "bank", map[string]string{"get_x": "ABC"},
			`pin "ABC" for tool "get_x" is not 64 lower-case hex digits`},
		{"file does not load", valid + "x: 1\n", "bank", map[string]string{"get_x": pinOf('a')},
			`before pinning: `},
		{"pin written with escapes", toolDoc(`schema_sha256: "\x61` + pinOf('a')[1:] + `"`), "bank", map[string]string{"get_x": pinOf('b')},
			`:7:7: tool "get_x": its pin is written with escapes or across lines; write its schema_sha256 and definition_sha256 by hand`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeTemp(t, tc.in, 0o644)
			_, _, err := SetPins(path, tc.server, schemaOnly(tc.pins))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("SetPins error %v, want one containing %q", err, tc.want)
			}
			if got, _ := os.ReadFile(path); string(got) != tc.in {
				t.Errorf("file changed after an error")
			}
		})
	}
}

// TestSetPinsNumericPin checks that a pin YAML would read as a number
// (all digits: unlikely, but a valid hex digest) is written quoted.
func TestSetPinsNumericPin(t *testing.T) {
	digits := pinOf('1')
	for _, in := range []string{
		toolDoc("args: {}"),
		header + "      get_x: {}\n",
		toolDoc("schema_sha256: " + pinOf('a')),
	} {
		path := writeTemp(t, in, 0o644)
		if _, _, err := SetPins(path, "bank", map[string]Pin{"get_x": {Schema: digits}}); err != nil {
			t.Fatalf("%q: %v", in, err)
		}
		got, _ := os.ReadFile(path)
		if !strings.Contains(string(got), `"`+digits+`"`) {
			t.Errorf("pin not quoted:\n%s", got)
		}
	}
}

// TestCheckPinned checks the last guard of SetPins: an edit that changes
// anything besides the pins is refused.
func TestCheckPinned(t *testing.T) {
	in := toolDoc("args:\n  n: {type: integer, max: 5}")
	p, err := Parse("t.yaml", []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	pins := map[string]Pin{"get_x": {Schema: pinOf('a')}}
	good := strings.Replace(in, "      get_x:\n", "      get_x:\n        schema_sha256: "+pinOf('a')+"\n", 1)
	if err := checkPinned("t.yaml", []byte(good), p, "bank", pins); err != nil {
		t.Errorf("good edit refused: %v", err)
	}
	p, _ = Parse("t.yaml", []byte(in))
	bad := strings.Replace(good, "max: 5", "max: 6", 1)
	if err := checkPinned("t.yaml", []byte(bad), p, "bank", pins); err == nil {
		t.Errorf("edit that changed max accepted")
	}
	p, _ = Parse("t.yaml", []byte(in))
	if err := checkPinned("t.yaml", []byte(in), p, "bank", pins); err == nil {
		t.Errorf("edit without the pin accepted")
	}
}

// TestSetPinsDefinition: definition_sha256 is added after schema_sha256,
// existing or new, in block and flow style, and replaced where it stands.
func TestSetPinsDefinition(t *testing.T) {
	a, b, c, d := pinOf('a'), pinOf('b'), pinOf('c'), pinOf('d')
	for _, tc := range []struct{ name, in, out string }{
		{"block, both new", "get_x:  # c\n  args: {}", "get_x:  # c\n  schema_sha256: " + a + "\n  definition_sha256: " + b + "\n  args: {}"},
		{"block, schema kept", "get_x:\n    schema_sha256: " + c + "  # old\n    args: {}", "get_x:\n    schema_sha256: " + a + "  # old\n    definition_sha256: " + b + "\n    args: {}"},
		{"block, both replaced", "get_x:\n  definition_sha256: '" + d + "'\n  schema_sha256: " + c, "get_x:\n  definition_sha256: '" + b + "'\n  schema_sha256: " + a},
		{"flow, both new", "get_x: {args: {}}", "get_x: {schema_sha256: " + a + ", definition_sha256: " + b + ", args: {}}"},
		{"flow, empty", "get_x: {}", "get_x: {schema_sha256: " + a + ", definition_sha256: " + b + "}"},
		{"flow, schema kept", `get_x: {schema_sha256: "` + c + `", args: {}}`, `get_x: {schema_sha256: "` + a + `", definition_sha256: ` + b + `, args: {}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeTemp(t, toolDocRaw(tc.in), 0o644)
			changed, _, err := SetPins(path, "bank", map[string]Pin{"get_x": {Schema: a, Definition: b}})
			if err != nil || len(changed) != 1 {
				t.Fatalf("SetPins = %q, %v", changed, err)
			}
			got, _ := os.ReadFile(path)
			if diff := cmp.Diff(toolDocRaw(tc.out), string(got)); diff != "" {
				t.Errorf("file after SetPins (-want +got):\n%s", diff)
			}
			p, err := Load(path)
			if err != nil {
				t.Fatal(err)
			}
			if tl := p.Servers["bank"].Tools["get_x"]; tl.SchemaSHA256 != a || tl.DefinitionSHA256 != b {
				t.Errorf("pinned %q, %q", tl.SchemaSHA256, tl.DefinitionSHA256)
			}
			if changed, _, err := SetPins(path, "bank", map[string]Pin{"get_x": {Schema: a, Definition: b}}); err != nil || changed != nil {
				t.Errorf("pinning again = %q, %v; want nothing changed", changed, err)
			}
		})
	}
}

// toolDocRaw puts lines (the tool's key and value, starting "get_x:")
// under the tools of server bank.
func toolDocRaw(lines string) string { return header + indent(lines, 6) }
