package policy

import (
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestLint(t *testing.T) {
	p, err := Load("testdata/lint.yaml")
	if err != nil {
		t.Fatal(err)
	}
	type pos struct {
		Line, Column int
		Rule         string
	}
	want := []pos{
		{10, 7, "pin.schema_only"}, // get_balances
		{14, 11, "args.unbounded"}, // memo
		{18, 7, "name.write_word"}, // payBill
		{18, 7, "pin.schema_only"},
		{20, 7, "name.write_word"}, // borrow_money, by never_allow
		{20, 7, "pin.missing"},
		{21, 3, "server.no_tools"},
		{22, 3, "server.no_tools"},
	}
	problems := Lint(p)
	var got []pos
	for _, pr := range problems {
		got = append(got, pos{pr.Line, pr.Column, pr.Rule})
		if pr.File != "testdata/lint.yaml" {
			t.Errorf("problem %v: File %q", pr, pr.File)
		}

	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("Lint positions mismatch (-want +got):\n%s", diff)
	}
	var servers []string
	for _, pr := range problems {
		servers = append(servers, pr.Server)
	}
	if diff := cmp.Diff([]string{"bank", "bank", "bank", "bank", "bank", "bank", "empty", "empty2"}, servers); diff != "" {
		t.Errorf("Lint servers mismatch (-want +got):\n%s", diff)
	}
	for i, sub := range []string{
		`tool "get_balances" of server "bank" is pinned by schema_sha256 alone, so a change to its title, icons, outputSchema, execution or _meta is not caught`,
		`string argument "memo" of tool "get_balances" has no pattern, enum or max_length`,
		`tool "payBill" of server "bank" contains the write word "pay"`,
		`tool "payBill" of server "bank" is pinned by schema_sha256 alone`,
		`tool "borrow_money" of server "bank" contains the write word "borrow"`,
		`tool "borrow_money" of server "bank" has no schema_sha256 and require_pins is true, so the gate denies it until the tool is pinned`,
		`server "empty" allows no tools`,
		`server "empty2" allows no tools`,
	} {
		if !strings.Contains(problems[i].Message, sub) {
			t.Errorf("problem %d message %q does not contain %q", i, problems[i].Message, sub)
		}
	}
	if s, w := problems[1].String(), "testdata/lint.yaml:14:11: args.unbounded: string argument"; !strings.HasPrefix(s, w) {
		t.Errorf("String() = %q, want prefix %q", s, w)
	}
}

func TestLintClean(t *testing.T) {
	data, err := os.ReadFile("testdata/lint.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// Without require_pins the unpinned tool is no problem.
	p, err := Parse("x.yaml", []byte(strings.Replace(string(data), "require_pins: true", "require_pins: false", 1)))
	if err != nil {
		t.Fatal(err)
	}
	for _, pr := range Lint(p) {
		if pr.Rule == "pin.missing" {
			t.Errorf("require_pins false: %v", pr)
		}
	}
	p, err = Load("testdata/full.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if got := Lint(p); len(got) != 1 || got[0].Rule != "server.no_tools" || got[0].Line != 28 {
		t.Errorf("full.yaml: Lint = %v, want only server.no_tools at line 28", got)
	}
}
