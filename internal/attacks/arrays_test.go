package attacks

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/bankdoor/bankdoor/proxy/gate"
	"github.com/bankdoor/bankdoor/proxy/policy"
)

const shipped = "../../policies/bankdoor.yaml"

func cataloguePolicy(t *testing.T) *policy.Policy {
	t.Helper()
	base, err := os.ReadFile(shipped)
	if err != nil {
		t.Fatal(err)
	}
	data, err := Policy(base)
	if err != nil {
		t.Fatal(err)
	}
	p, err := policy.Parse("catalogue.yaml", data)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestPolicy: the catalogue's policy is the shipped one with the entry's
// lines added before bank's first tool, every other byte kept.
func TestPolicy(t *testing.T) {
	base, err := os.ReadFile(shipped)
	if err != nil {
		t.Fatal(err)
	}
	out, err := Policy(base)
	if err != nil {
		t.Fatal(err)
	}
	var entry strings.Builder
	for _, line := range byIDsEntry {
		entry.WriteString("      " + line + "\n")
	}
	if got := strings.Replace(string(out), entry.String(), "", 1); got != string(base) || len(out) == len(base) {
		t.Errorf("Policy did not insert the entry alone:\n%s", out)
	}
	if !strings.Contains(string(out), "    tools:\n"+entry.String()+"      list_accounts:") {
		t.Errorf("the entry is not bank's first tool:\n%s", out)
	}
	again, err := Policy(out)
	if err != nil || !bytes.Equal(again, out) {
		t.Errorf("Policy of a policy that allows the tool: %v, changed %v", err, !bytes.Equal(again, out))
	}
	for name, bad := range map[string]string{
		"flow tools": "version: 1\nid: x\ndefault: deny\nservers:\n  bank:\n    tools: {list_accounts: {}}\n",
		"no bank":    "version: 1\nid: x\ndefault: deny\nservers:\n  other:\n    tools:\n      list_accounts: {}\n",
		"not policy": "version: 2\n",
	} {
		if _, err := Policy([]byte(bad)); err == nil {
			t.Errorf("%s: Policy succeeded", name)
		}
	}
}

// TestArrayAttacksDecide sends each array attack's arguments through the
// gate under the catalogue's policy, without the pin check the proxy adds:
// each is denied with its rule, and the same call with good ids passes.
func TestArrayAttacksDecide(t *testing.T) {
	g := gate.New(cataloguePolicy(t))
	n := 0
	for _, a := range Catalogue() {
		if a.Variant != ArraysVariant {
			continue
		}
		n++
		d := g.Decide(gate.Call{Server: "bank", Tool: byIDs, Args: arguments(t, a), SkipPinCheck: true})
		if d.Rule != a.Rule {
			t.Errorf("%s: decided %s (%s), want %s", a.ID, d.Rule, d.Reason, a.Rule)
		}
		if a.Tool != "" && a.Tool != byIDs {
			t.Errorf("%s: tool %s", a.ID, a.Tool)
		}
	}
	if n < 12 {
		t.Errorf("%d array attacks, want at least 12", n)
	}
	d := g.Decide(gate.Call{Server: "bank", Tool: byIDs, SkipPinCheck: true,
		Args: []byte(`{"ids":[ "acc_checking_t01", "acc_checking_t\u0030\u0032"] , "account_id":"acc_checking"}`)})
	if want := `{"account_id":"acc_checking","ids":["acc_checking_t01","acc_checking_t02"]}`; !d.Allow || string(d.Args) != want {
		t.Errorf("good ids: %v %s (%s) forwarding %s; want allowed, forwarding %s", d.Allow, d.Rule, d.Reason, d.Args, want)
	}
}

// arguments returns the arguments an attack sends: its Args as the SDK
// encodes them, or the params.arguments of its raw frame.
func arguments(t *testing.T, a Attack) []byte {
	t.Helper()
	if !a.Raw() {
		b, err := json.Marshal(a.Args)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	_, args, ok := bytes.Cut(a.Frame, []byte(`"arguments":`))
	if !ok || !bytes.HasSuffix(args, []byte("}}")) {
		t.Fatalf("%s: frame %s has no arguments last", a.ID, a.Frame)
	}
	return args[:len(args)-2]
}
