package receipt

import (
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"go/parser"
	"go/token"
	"strings"
	"testing"
)

// packageDoc returns the text of the package documentation in doc.go.
func packageDoc(t *testing.T) string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "doc.go", nil, parser.ParseComments|parser.PackageClauseOnly)
	if err != nil {
		t.Fatal(err)
	}
	return f.Doc.Text()
}

// TestDocExample keeps the package documentation's example true: its
// receipts are exactly what Sign makes with the example key, they parse
// and verify, and every key, hash and length the text quotes is right.
func TestDocExample(t *testing.T) {
	doc := packageDoc(t)
	var lines []string
	for _, l := range strings.Split(doc, "\n") {
		if strings.HasPrefix(l, "\t{\"arg_names\"") {
			lines = append(lines, strings.TrimPrefix(l, "\t"))
		}
	}
	files := exampleFiles(t)
	if len(lines) != len(files) {
		t.Fatalf("documentation shows %d receipts, want %d", len(lines), len(files))
	}
	var prev *Receipt
	for i, l := range lines {
		if l != string(files[i]) {
			t.Errorf("documented receipt %d:\n%s\nSign makes:\n%s", i+1, l, files[i])
		}
		r, err := Parse([]byte(l))
		if err != nil {
			t.Fatalf("documented receipt %d: %v", i+1, err)
		}
		if err := r.Verify(testPub()); err != nil {
			t.Errorf("documented receipt %d: %v", i+1, err)
		}
		h := Hash([]byte(l))
		if prev != nil && prev.Seq+1 != r.Seq {
			t.Errorf("documented receipts are not consecutive")
		}
		wantInDoc(t, doc, hex.EncodeToString(h[:]))
		wantInDoc(t, doc, r.PolicySHA256)
		wantInDoc(t, doc, r.KeyID)
		prev = r
	}
	h := Hash(files[0])
	if prev.Prev != hex.EncodeToString(h[:]) {
		t.Error("documented second receipt's prev is not the first's hash")
	}
	wantInDoc(t, doc, fmt.Sprintf("one line of %d bytes", len(files[0])))
	wantInDoc(t, doc, exampleArgs)
	wantInDoc(t, doc, hexSHA256(examplePolicy))
	wantInDoc(t, doc, hex.EncodeToString(testPub()))
	spki, err := x509.MarshalPKIXPublicKey(testPub())
	if err != nil {
		t.Fatal(err)
	}
	block := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: spki})
	wantInDoc(t, doc, "\t"+strings.ReplaceAll(strings.TrimSpace(string(block)), "\n", "\n\t"))
}

func wantInDoc(t *testing.T, doc, s string) {
	t.Helper()
	if !strings.Contains(doc, s) {
		t.Errorf("package documentation does not contain %q", s)
	}
}
