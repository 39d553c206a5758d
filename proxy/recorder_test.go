package proxy

import (
	"bytes"
	"crypto/ed25519"
	"os"
	"path/filepath"
	"testing"

	"github.com/bankdoor/bankdoor/ledger/receipt"
)

// TestRecorderDurable: Durable gets, after the file is written, the
// receipt as signed and the hash of the file on disk, and Notify runs too.
func TestRecorderDurable(t *testing.T) {
	dir := t.TempDir()
	_, key, _ := ed25519.GenerateKey(nil)
	w, err := receipt.OpenWriter(dir, key)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	var got []*receipt.Receipt
	var sums [][32]byte
	notified := 0
	rr := &ReceiptRecorder{W: w, Server: "bank", PolicyID: "p", PolicySHA256: string(bytes.Repeat([]byte("a"), 64)),
		Notify: func() { notified++ },
		Durable: func(r *receipt.Receipt, sum [32]byte) {
			got, sums = append(got, r), append(sums, sum)
		}}
	for range 2 {
		if _, err := rr.Record(Event{Decision: receipt.Deny, Tool: "transfer", Rule: "name.write_word", Reason: "r",
			ArgNames: []string{"amount"}, ArgsSHA256: string(bytes.Repeat([]byte("b"), 64))}); err != nil {
			t.Fatal(err)
		}
	}
	if len(got) != 2 || notified != 2 {
		t.Fatalf("Durable called %d times, Notify %d; want 2, 2", len(got), notified)
	}
	for i, r := range got {
		file, err := os.ReadFile(filepath.Join(dir, receipt.FileName(uint64(i+1))))
		if err != nil {
			t.Fatal(err)
		}
		m, err := r.Marshal()
		if err != nil || !bytes.Equal(m, file) || receipt.Hash(file) != sums[i] {
			t.Fatalf("receipt %d: Durable's receipt marshals to %s (%v), file %s; hash %x, file's %x", i+1, m, err, file, sums[i], receipt.Hash(file))
		}
	}
}
