package gate

import "testing"

func BenchmarkDecide(b *testing.B) {
	g := testGate(b)
	c := call("get_transactions", `{"account_id":"acc_checking","limit":50,"since":"2024-01-31"}`)
	for b.Loop() {
		if d := g.Decide(c); !d.Allow {
			b.Fatalf("denied: %s", d.Reason)
		}
	}
}

func BenchmarkDecideDenyUnknownArg(b *testing.B) {
	g := testGate(b)
	c := call("get_transactions", `{"account_id":"acc_checking","action":"transfer","to_account":"acc_mallory","amount_cents":100000}`)
	for b.Loop() {
		if d := g.Decide(c); d.Rule != "args.unknown" {
			b.Fatalf("got %s", d.Rule)
		}
	}
}

func BenchmarkDecideDenyName(b *testing.B) {
	g := testGate(b)
	c := call("pay_bill", `{"payee":"acc_mallory","amount_cents":100000}`)
	for b.Loop() {
		if d := g.Decide(c); d.Rule != "name.write_word" {
			b.Fatalf("got %s", d.Rule)
		}
	}
}

func BenchmarkListable(b *testing.B) {
	g := testGate(b)
	for b.Loop() {
		if d := g.Listable("bank", "get_transactions", pinA, pinD); !d.Allow {
			b.Fatalf("denied: %s", d.Reason)
		}
	}
}
