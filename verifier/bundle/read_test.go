package bundle

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func hashes(bs ...byte) [][]byte {
	var out [][]byte
	for _, b := range bs {
		out = append(out, bytes.Repeat([]byte{b}, hashSize))
	}
	return out
}

func sample() (*Bundle, [][]byte) {
	tail := [][]byte{[]byte(`{"seq":2}`), []byte(`{"other":1}`)}
	return &Bundle{
		KeyID: "0123456789abcdef", Size: 5, Head: Head{Seq: 2, Index: 3}, HeadRange: hashes(1, 2),
		Checkpoint: []byte("o\n5\nAAAA\n\n— o sig\n"), LogKey: "o+01234567+AQ", Witnesses: []string{"w+01234567+BA"},
		Proofs: []Proof{{1, 0, hashes(3, 4, 5)}, {2, 3, hashes(6, 7, 8)}},
		Tail:   append(tail, []byte(`{"third":1}`))[:2],
	}, [][]byte{[]byte(`{"seq":1}`), tail[0]}
}

func TestWriteReadRoundTrip(t *testing.T) {
	b, files := sample()
	dir := filepath.Join(t.TempDir(), "b")
	if err := Write(dir, b, files); err != nil {
		t.Fatal(err)
	}
	got, err := Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(b, got); diff != "" {
		t.Errorf("Read(Write(b)) differs (-want +got):\n%s", diff)
	}
	if err := Write(dir, b, files); !errors.Is(err, fs.ErrExist) || !strings.Contains(err.Error(), "is not empty") {
		t.Errorf("second Write to %s: %v; want a refusal", dir, err)
	}
	leftovers, _ := filepath.Glob(filepath.Join(filepath.Dir(dir), ".b.tmp-*"))
	if len(leftovers) != 0 {
		t.Errorf("temporary directories left behind: %v", leftovers)
	}
}

// Each edit makes a file of a valid bundle non-canonical or inconsistent;
// Read must refuse it and name the file.
func TestReadIsStrict(t *testing.T) {
	for _, tc := range []struct{ file, old, new, want string }{
		{ManifestFile, "size 5", "size 05", "canonical"},
		{ManifestFile, "size 5", "size +5", "canonical"},
		{ManifestFile, "head 2 3", "head 2  3", "head"},
		{ManifestFile, "bankdoor export v1", "bankdoor export v2", "this bankdoor reads"},
		{ManifestFile, "key_id 0123456789abcdef", "key_id 0123456789ABCDEF", "key_id"},
		{ManifestFile, "AQE= ", "AQF= ", "base64"}, // padding bits not zero
		{ManifestFile, "\n", "\r\n", ""},
		{ProofsFile, "2 3 ", "1 3 ", "increasing order"},
		{ProofsFile, "2 3 ", "3 3 ", "increasing order"},
		{ProofsFile, "1 0 ", "1 0  ", "base64"},
		{TailFile, "{\"other\":1}\n", "", "entries"},
		{TailFile, "{\"other\":1}\n", "{\"other\":1}", "no newline"},
		{LogKeyFile, "\n", "\no2+01234567+AQ\n", "want the log's one, or none"},
		{WitnessKeyFile, "w+01234567+BA\n", "w+01234567+BA \n", "white space"},
	} {
		t.Run(tc.file+" "+tc.new, func(t *testing.T) {
			b, files := sample()
			dir := filepath.Join(t.TempDir(), "b")
			if err := Write(dir, b, files); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, tc.file)
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Contains(data, []byte(tc.old)) {
				t.Fatalf("%s does not hold %q", tc.file, tc.old)
			}
			if err := os.WriteFile(path, bytes.Replace(data, []byte(tc.old), []byte(tc.new), 1), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err = Read(dir)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Read: %v; want an error saying %q", err, tc.want)
			}
		})
	}
}

func TestReadMissingFile(t *testing.T) {
	b, files := sample()
	dir := filepath.Join(t.TempDir(), "b")
	if err := Write(dir, b, files); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, ProofsFile)); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(dir); err == nil || !strings.Contains(err.Error(), "no proofs file") {
		t.Errorf("Read without proofs: %v; want it named", err)
	}
}

// FuzzReadManifest: parseManifest never panics, and what it accepts it
// writes back byte for byte (one encoding per manifest).
func FuzzReadManifest(f *testing.F) {
	b, _ := sample()
	f.Add(manifest(b))
	f.Add([]byte("bankdoor export v1\nkey_id 0123456789abcdef\nsize 1\nhead 1 0\nrange\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		var got Bundle
		if parseManifest(&got, data) != nil {
			return
		}
		if again := manifest(&got); !bytes.Equal(again, data) {
			t.Errorf("accepted %q but writes it as %q", data, again)
		}
	})
}

// FuzzReadProofLine: the same for a proofs line.
func FuzzReadProofLine(f *testing.F) {
	f.Add([]byte("1 0 AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE="))
	f.Add([]byte("12 7"))
	f.Fuzz(func(t *testing.T, line []byte) {
		var b Bundle
		if parseProofLine(&b, line) != nil {
			return
		}
		var buf bytes.Buffer
		if err := writeProofs(&buf, b.Proofs); err != nil {
			t.Fatal(err)
		}
		if want := append(bytes.Clone(line), '\n'); !bytes.Equal(buf.Bytes(), want) {
			t.Errorf("accepted %q but writes it as %q", want, buf.Bytes())
		}
	})
}
