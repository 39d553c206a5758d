package verifier_test

import (
	"context"
	"testing"

	"github.com/bankdoor/bankdoor/verifier"
)

// BenchmarkVerifyInLog measures the online check per receipt: one op is
// one receipt of a directory of 500, all in the log, against the real
// ledger handler over HTTP/1.1 on loopback (one GetInclusionProof each).
func BenchmarkVerifyInLog(b *testing.B) {
	w := newWorld(b)
	const n = 500
	w.write(n, n)
	rep := w.verifyDir()
	b.ResetTimer()
	for i := 0; i < b.N; i += n {
		if _, err := verifier.VerifyInLog(context.Background(), rep, w.client, w.vkey); err != nil {
			b.Fatal(err)
		}
	}
}
