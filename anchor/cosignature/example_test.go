package cosignature_test

import (
	"fmt"

	"github.com/bankdoor/bankdoor/anchor/cosignature"
)

// The checkpoint, keys and cosignature of the package documentation.
const (
	exampleLogVKey     = "bankdoor.example/ledger+eb502eff+AdT/OXBWCjm7KUkIgvV/zIasiyt6Xzzo8zwuM+LKer0n"
	exampleWitnessVKey = "witness.example+362dee05+BIVqbfwoOPqbFIDmDmz70Ihn+9AEbjXOUr3wuFmhgJ58"
	exampleCheckpoint  = "bankdoor.example/ledger\n" +
		"3\n" +
		"qdtHs0Ej/GnuFYt6mGfczLAqFIJYX5qxBCABgprMwQ4=\n" +
		"\n" +
		"— bankdoor.example/ledger 61Au/x6Ln5uAj0dsuc2hYudD58Qr7nSOrwm4QmEB/H7xNY7qmJ70sc+hBcrXo0FmxJX9ECXfALjd5mnMThP+3oxhKgw=\n" +
		"— witness.example Ni3uBQAAAABrERu2CJ1Bv4LlXh/CI+K+wFdmLzG0hqVVennmYou21l1cE5WjKLPdB9izxtfM2hiYGGsoNG056ljWwUrBZUgzXxY5Dg==\n"
)

func ExamplePolicy_Verify() {
	p, err := cosignature.NewPolicy(exampleLogVKey, []string{exampleWitnessVKey}, 1)
	if err != nil {
		panic(err)
	}
	v, err := p.Verify([]byte(exampleCheckpoint))
	if err != nil {
		panic(err)
	}
	fmt.Println(v.Origin, v.Size, v.Cosigners)

	// The same note with the size changed is refused.
	_, err = p.Verify([]byte(exampleCheckpoint[:24] + "4" + exampleCheckpoint[25:]))
	fmt.Println(err)
	// Output:
	// bankdoor.example/ledger 3 [witness.example+362dee05 at 2026-12-03T07:35:18Z]
	// checkpoint is not signed by the log key: the signature by bankdoor.example/ledger+eb502eff does not verify: the checkpoint was altered or forged
}
