package receipt

import "testing"

func BenchmarkSign(b *testing.B) {
	r := exampleReceipts(b)[0]
	key := testKey()
	for b.Loop() {
		if _, err := Sign(r, key); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseVerify(b *testing.B) {
	file := exampleFiles(b)[0]
	pub := testPub()
	for b.Loop() {
		r, err := Parse(file)
		if err != nil {
			b.Fatal(err)
		}
		if err := r.Verify(pub); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWriterWrite measures one durable receipt: the directory's
// lock, signing, writing, fsync of the file, hard link and fsync of the
// directory.
func BenchmarkWriterWrite(b *testing.B) {
	w, err := OpenWriter(b.TempDir(), testKey())
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	for b.Loop() {
		if _, _, err := w.Write(exampleReceipts(b)[0]); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkOpen is BenchmarkParseVerify's work done by Open, which
// verifies the file's bytes instead of re-encoding them.
func BenchmarkOpen(b *testing.B) {
	file := exampleFiles(b)[0]
	key := openWith(testPub())
	for b.Loop() {
		if _, err := Open(file, key); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParse measures parsing alone: the canonical-form check and
// the JSON decoder.
func BenchmarkParse(b *testing.B) {
	file := exampleFiles(b)[0]
	for b.Loop() {
		if _, err := Parse(file); err != nil {
			b.Fatal(err)
		}
	}
}
