package tlogpolicy

import (
	"errors"
	"fmt"
	"testing"

	fnote "github.com/transparency-dev/formats/note"

	"github.com/bankdoor/bankdoor/anchor/cosignature"
)

// TestMixedQuorumMLDSA: a policy of one Ed25519 witness and one ML-DSA-44
// witness (cosignature/v1 type 0x06), both required, is met by their two
// cosignatures and by neither alone.
func TestMixedQuorumMLDSA(t *testing.T) {
	w := newWorld(t)
	skey, vkey, err := fnote.GenerateMLDSAKey("witness-pq.example")
	if err != nil {
		t.Fatal(err)
	}
	w.wSkeys["PQ"], w.wVKeys["PQ"] = skey, vkey
	p, err := Parse(fmt.Appendf(nil, "log %s\nwitness ED %s\nwitness PQ %s\ngroup both all ED PQ\nquorum both\n", w.logVKey, w.wVKeys["X1"], vkey))
	if err != nil {
		t.Fatal(err)
	}
	w.wSkeys["ED"] = w.wSkeys["X1"]
	if v, err := p.Verify(w.cosigned(t, "ED", "PQ")); err != nil || len(v.Cosigners) != 2 {
		t.Fatalf("cosigned by the Ed25519 and the ML-DSA-44 witness: %+v, %v", v, err)
	}
	for _, alone := range []string{"ED", "PQ"} {
		if _, err := p.Verify(w.cosigned(t, alone)); !errors.Is(err, cosignature.ErrQuorum) {
			t.Errorf("cosigned by %s alone: %v; want ErrQuorum", alone, err)
		}
	}
}
