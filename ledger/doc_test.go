package ledger

import (
	"crypto/ed25519"
	"encoding/hex"
	"go/parser"
	"go/token"
	"strings"
	"testing"

	"github.com/transparency-dev/formats/log"
	"github.com/transparency-dev/merkle/compact"
	"golang.org/x/mod/sumdb/note"

	"github.com/bankdoor/bankdoor/ledger/internal/store"
)

func packageDoc(t *testing.T) string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "doc.go", nil, parser.ParseComments|parser.PackageClauseOnly)
	if err != nil {
		t.Fatal(err)
	}
	return f.Doc.Text()
}

// indent returns text as a doc comment code block shows it: each
// non-empty line after a tab.
func indent(text string) string {
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = "\t" + l
		}
	}
	return strings.Join(lines, "\n") + "\n"
}

func wantInDoc(t *testing.T, doc, s string) {
	t.Helper()
	if !strings.Contains(doc, s) {
		t.Errorf("package documentation does not say %q", s)
	}
}

// TestDocExample keeps the package documentation's worked example true:
// its hashes, checkpoint note, verifier key and storage indexes.
func TestDocExample(t *testing.T) {
	t.Parallel()
	doc := packageDoc(t)
	la, lb := hasher.HashLeaf([]byte("a")), hasher.HashLeaf([]byte("b"))
	root := hasher.HashChildren(la, lb)
	for _, h := range [][]byte{hasher.EmptyRoot(), la, lb, root} {
		wantInDoc(t, doc, hex.EncodeToString(h))
	}

	seed := make([]byte, ed25519.SeedSize)
	for i := range seed {
		seed[i] = byte(i)
	}
	const origin = "bank.example/ledger"
	s, err := note.NewSigner(signerKey(t, origin, seed))
	if err != nil {
		t.Fatal(err)
	}
	cp, err := signCheckpoint(s, origin, 2, root)
	if err != nil {
		t.Fatal(err)
	}
	wantInDoc(t, doc, indent(string(cp)))
	vkey, err := VerifierKey(signerKey(t, origin, seed))
	if err != nil {
		t.Fatal(err)
	}
	wantInDoc(t, doc, "\t"+vkey+"\n")
	v, err := LoadVerifier(vkey)
	if err != nil {
		t.Fatal(err)
	}
	if c, _, _, err := log.ParseCheckpoint(cp, origin, v); err != nil || c.Size != 2 {
		t.Fatalf("documented checkpoint does not verify: %v", err)
	}

	for want, id := range []compact.NodeID{{Level: 0, Index: 0}, {Level: 0, Index: 1}, {Level: 1, Index: 0},
		{Level: 0, Index: 2}, {Level: 0, Index: 3}, {Level: 1, Index: 1}, {Level: 2, Index: 0}} {
		if got, _ := store.ParseIndex(store.NodeKey(id)); got != uint64(want) {
			t.Errorf("storage index of %v = %d, documented %d", id, got, want)
		}
	}
	wantInDoc(t, doc, `"version"                             "`+store.Version+`"`)
}
