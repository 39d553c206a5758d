package cosignature_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/bankdoor/bankdoor/anchor/cosignature"
	"github.com/transparency-dev/formats/log"
)

// exampleLine is the witness's line of exampleCheckpoint.
var exampleLine = exampleCheckpoint[strings.Index(exampleCheckpoint, "— witness.example"):]

// FuzzPolicyVerify: whatever Verify accepts, the formats package accepts
// with the same keys, with the same origin and size, and the quorum holds.
func FuzzPolicyVerify(f *testing.F) {
	f.Add([]byte(exampleCheckpoint))
	f.Add([]byte(strings.Replace(exampleCheckpoint, "\n3\n", "\n03\n", 1)))
	f.Add([]byte(exampleCheckpoint + exampleLine))
	f.Add([]byte(strings.TrimSuffix(exampleCheckpoint, exampleLine)))
	p, err := cosignature.NewPolicy(exampleLogVKey, []string{exampleWitnessVKey}, 1)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, msg []byte) {
		v, err := p.Verify(msg)
		if err != nil {
			return
		}
		cp, _, n, err := log.ParseCheckpoint(msg, p.Log.Name(), p.Log, p.Witnesses...)
		if err != nil {
			t.Fatalf("Verify accepted what formats rejects: %v\n%q", err, msg)
		}
		if cp.Origin != v.Origin || cp.Size != v.Size || !bytes.Equal(cp.Hash, v.Hash) || len(n.Sigs) < 1+p.Quorum {
			t.Fatalf("Verify = %+v; formats = %+v with %d signatures", v.Checkpoint, cp, len(n.Sigs))
		}
	})
}

// FuzzMerge: a merged note keeps the checkpoint, and merging it again
// changes nothing.
func FuzzMerge(f *testing.F) {
	logSigned := strings.TrimSuffix(exampleCheckpoint, exampleLine)
	f.Add([]byte(logSigned), []byte(exampleLine))
	f.Add([]byte(exampleCheckpoint), []byte(exampleLine+exampleLine))
	f.Add([]byte(logSigned), []byte("— witness.example AAAAAAAA\n"))
	logKey, err := cosignature.NewLogVerifier(exampleLogVKey)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, checkpoint, lines []byte) {
		merged, err := cosignature.Merge(checkpoint, logKey, lines)
		if err != nil {
			return
		}
		before, _, _ := cosignature.Open(checkpoint, logKey)
		after, _, err := cosignature.Open(merged, logKey)
		if err != nil || before.Size != after.Size || !bytes.Equal(before.Hash, after.Hash) {
			t.Fatalf("merged note %q: %v; checkpoint changed from %+v to %+v", merged, err, before, after)
		}
		again, err := cosignature.Merge(merged, logKey)
		if err != nil || !bytes.Equal(again, merged) {
			t.Fatalf("merging again: %v\n%q\n%q", err, merged, again)
		}
	})
}
