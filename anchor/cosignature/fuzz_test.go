package cosignature_test

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bankdoor/bankdoor/anchor/cosignature"
	"github.com/rogpeppe/go-internal/txtar"
	"github.com/transparency-dev/formats/log"
	fnote "github.com/transparency-dev/formats/note"
	"golang.org/x/mod/sumdb/note"
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

// FuzzNewWitnessVerifier: the witness key parser never panics, and a key
// it accepts is one the formats package accepts too, with the name and
// (for cosignature/v1 types) the key ID the vkey states. Seeds in
// testdata/fuzz/FuzzNewWitnessVerifier: Ed25519 (0x01, 0x04) and
// ML-DSA-44 (0x06) keys, whole and altered.
func FuzzNewWitnessVerifier(f *testing.F) {
	f.Add(exampleWitnessVKey)
	f.Fuzz(func(t *testing.T, vkey string) {
		v, err := cosignature.NewWitnessVerifier(vkey)
		if err != nil {
			return
		}
		if _, err := fnote.NewVerifierForCosignatureV1(vkey); err != nil {
			t.Fatalf("accepted %q, which formats rejects: %v", vkey, err)
		}
		name, rest, _ := strings.Cut(vkey, "+")
		hash, key64, _ := strings.Cut(rest, "+")
		key, _ := base64.StdEncoding.DecodeString(key64)
		if v.Name() != name || (key[0] != cosignature.TypeEd25519 && fmt.Sprintf("%08x", v.KeyHash()) != hash) {
			t.Fatalf("%q gave the verifier %s+%08x", vkey, v.Name(), v.KeyHash())
		}
	})
}

// FuzzVerifyMLDSALine: whatever Verify accepts from an ML-DSA-44 witness
// over the vector's checkpoint verifies with note.Open and the formats
// verifier too, and carries a timestamp of at most 2^63-1. Seeds in
// testdata/fuzz/FuzzVerifyMLDSALine: the real omniwitness's line, and the
// same altered.
func FuzzVerifyMLDSALine(f *testing.F) {
	a, err := txtar.ParseFile(filepath.Join("testdata", "omniwitness-mixed.txtar"))
	if err != nil {
		f.Fatal(err)
	}
	files := map[string]string{}
	for _, file := range a.Files {
		files[file.Name] = string(file.Data)
	}
	cp := files["checkpoint"]
	checkpoint := []byte(cp[:strings.Index(cp, "— witness.example/")])
	pqKey := strings.TrimSuffix(files["witness-mldsa.vkey"], "\n")
	pq, err := cosignature.NewWitnessVerifier(pqKey)
	if err != nil {
		f.Fatal(err)
	}
	formats, err := fnote.NewVerifierForCosignatureV1(pqKey)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, lines []byte) {
		got, err := cosignature.Verify(checkpoint, lines, pq)
		if err != nil {
			return
		}
		n, err := note.Open(append(slices.Clone(checkpoint), got...), note.VerifierList(formats))
		if err != nil || len(n.Sigs) == 0 {
			t.Fatalf("Verify accepted %q, which formats rejects: %v", got, err)
		}
		for _, s := range n.Sigs {
			if _, err := cosignature.Timestamp(s); err != nil {
				t.Fatalf("Verify accepted %q with a bad timestamp: %v", got, err)
			}
		}
	})
}
