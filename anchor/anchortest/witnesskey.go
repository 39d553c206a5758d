package anchortest

import (
	"crypto/rand"
	"testing"

	fnote "github.com/transparency-dev/formats/note"
	"golang.org/x/mod/sumdb/note"
)

// WitnessKey generates a witness key named name of type cosignature/v1
// (c2sp.org/tlog-cosignature) and returns its signer, its verifier and its
// verifier key as text; a failure fails tb.
func WitnessKey(tb testing.TB, name string) (note.Signer, note.Verifier, string) {
	tb.Helper()
	skey, vkey, err := note.GenerateKey(rand.Reader, name)
	if err != nil {
		tb.Fatal(err)
	}
	s, err := fnote.NewSignerForCosignatureV1(skey)
	if err != nil {
		tb.Fatal(err)
	}
	cvkey, err := fnote.VKeyToCosignatureV1(vkey)
	if err != nil {
		tb.Fatal(err)
	}
	v, err := fnote.NewVerifierForCosignatureV1(cvkey)
	if err != nil {
		tb.Fatal(err)
	}
	return s, v, cvkey
}
