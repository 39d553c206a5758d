package receipt

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// FuzzParse checks that Parse never panics and accepts only the one
// encoding of a receipt: whatever it accepts re-encodes to the same bytes,
// and Verify never panics on it.
func FuzzParse(f *testing.F) {
	for _, b := range exampleFiles(f) {
		f.Add(b)
		f.Add(append(bytes.Clone(b), '\n'))
		f.Add(bytes.Replace(b, []byte(`"seq":`), []byte(`"seq": `), 1))
		f.Add(bytes.Replace(b, []byte(`\"`), []byte(`\u0022`), 1))
		f.Add(bytes.Replace(b, []byte(`"seq":1`), []byte(`"seq":01`), 1))
		f.Add(bytes.Replace(b, []byte(`"seq":`), []byte(`"seq":1e0,"x":`), 1))
		f.Add(bytes.Replace(b, []byte(`"deny"`), []byte(`"d\\eny"`), 1))
		f.Add(bytes.Replace(b, []byte(`"deny"`), []byte(`"dény"`), 1))
		f.Add(bytes.Replace(b, []byte(`"arg_names":[`), []byte(`"arg_names":["a",`), 1))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := Parse(b)
		if err != nil {
			return
		}
		enc, err := r.encode(true)
		if err != nil {
			t.Fatalf("parsed receipt does not encode: %v", err)
		}
		if !bytes.Equal(enc, b) {
			t.Fatalf("Parse accepted %q, which re-encodes as %q", b, enc)
		}
		_ = r.Verify(testPub())
		c := *r
		if _, err := Sign(&c, testKey()); err != nil {
			t.Fatalf("Sign rejects a receipt Parse accepted: %v", err)
		}
	})
}

// TestFuzzCorpus holds the committed corpus to its names: receipt-* files
// are valid receipts by the example key, broken-* files are rejected.
func TestFuzzCorpus(t *testing.T) {
	dir := filepath.Join("testdata", "fuzz", "FuzzParse")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var valid, broken int
	for _, e := range entries {
		b := corpusBytes(t, filepath.Join(dir, e.Name()))
		r, err := Parse(b)
		if err == nil {
			err = r.Verify(testPub())
		}
		switch {
		case strings.HasPrefix(e.Name(), "receipt-"):
			valid++
			if err != nil {
				t.Errorf("%s: %v", e.Name(), err)
			}
		case strings.HasPrefix(e.Name(), "broken-"):
			broken++
			if err == nil {
				t.Errorf("%s: accepted", e.Name())
			}
		}
	}
	if valid == 0 || broken == 0 {
		t.Errorf("corpus has %d valid and %d broken receipts, want some of each", valid, broken)
	}
}

// corpusBytes decodes a one-value "go test fuzz v1" file holding []byte.
func corpusBytes(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitN(strings.TrimSpace(string(b)), "\n", 2)
	if len(lines) != 2 || lines[0] != "go test fuzz v1" {
		t.Fatalf("%s: not a go test fuzz v1 file", path)
	}
	lit, ok := strings.CutPrefix(lines[1], "[]byte(")
	lit, ok2 := strings.CutSuffix(lit, ")")
	s, err := strconv.Unquote(lit)
	if !ok || !ok2 || err != nil {
		t.Fatalf("%s: not a single []byte value", path)
	}
	return []byte(s)
}

// FuzzParseFileName: ParseFileName accepts exactly the names FileName
// gives for a seq from 1 to 2⁵³−1, and returns that seq.
func FuzzParseFileName(f *testing.F) {
	for _, s := range []string{"000001.json", "999999.json", "1000000.json", "0000001.json", "000000.json",
		"9007199254740991.json", "9007199254740992.json", "00000a.json", "+00001.json"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		seq, ok := ParseFileName(name)
		if ok && (seq < 1 || seq > maxSeq || FileName(seq) != name) {
			t.Fatalf("ParseFileName(%q) = %d, true; FileName(%d) = %q", name, seq, seq, FileName(seq))
		}
		digits, found := strings.CutSuffix(name, ".json")
		if n, err := strconv.ParseUint(digits, 10, 64); found && err == nil && n >= 1 && n <= maxSeq && FileName(n) == name && (!ok || seq != n) {
			t.Fatalf("ParseFileName(%q) = %d, %v; want %d, true", name, seq, ok, n)
		}
	})
}
