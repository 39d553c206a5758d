package events

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/bankdoor/bankdoor/ledger/receipt"
)

// exampleReceipt is the receipt of the package doc's example.
func exampleReceipt(t *testing.T) (*receipt.Receipt, []byte) {
	t.Helper()
	key := ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize))
	args := sha256.Sum256([]byte(`{"amount_cents":5000,"payee":"acc_mallory"}`))
	pol := sha256.Sum256([]byte("policy"))
	r := &receipt.Receipt{
		Seq: 1, Time: time.Date(2026, 1, 2, 3, 4, 5, 678e6, time.UTC), Decision: receipt.Deny,
		Server: "bank", Tool: "pay_bill", Rule: "name.write_word", Reason: `tool name "pay_bill" spells the payment/write word "pay"`,
		ArgNames: []string{"amount_cents", "payee"}, ArgsSHA256: hex.EncodeToString(args[:]),
		PolicyID: "bankdoor-fixture-readonly", PolicySHA256: hex.EncodeToString(pol[:]), Prev: receipt.FirstPrev,
	}
	file, err := receipt.Sign(r, key)
	if err != nil {
		t.Fatal(err)
	}
	return r, file
}

// docExample returns the example line of the package doc.
func docExample(t *testing.T) string {
	t.Helper()
	src, err := os.ReadFile("events.go")
	if err != nil {
		t.Fatal(err)
	}
	for l := range strings.Lines(string(src)) {
		if s, ok := strings.CutPrefix(l, "//\t{\"arg_names\""); ok {
			return `{"arg_names"` + s[:len(s)-1] + "\n"
		}
	}
	t.Fatal("no example line in the package doc")
	return ""
}

func TestDocExample(t *testing.T) {
	_, file := exampleReceipt(t)
	got, err := Line(file)
	if err != nil {
		t.Fatal(err)
	}
	want := docExample(t)
	if string(got) != want {
		t.Fatalf("Line =\n%s\nthe package doc says\n%s", got, want)
	}
	indexed, err := IndexedLine(file, 41)
	if err != nil {
		t.Fatal(err)
	}
	if w := strings.Replace(want, `,"receipt_sha256"`, `,"index":41,"receipt_sha256"`, 1); string(indexed) != w {
		t.Fatalf("IndexedLine =\n%s\nwant\n%s", indexed, w)
	}
}

// TestLineFormat checks what the package doc promises of every line: the
// receipt's members as in the file, then file, index and receipt_sha256;
// the file recovered from the line; one line feed, at the end.
func TestLineFormat(t *testing.T) {
	r, file := exampleReceipt(t)
	for _, indexed := range []bool{false, true} {
		var l []byte
		var err error
		if indexed {
			l, err = IndexedLine(file, 1<<40)
		} else {
			l, err = Line(file)
		}
		if err != nil {
			t.Fatal(err)
		}
		if bytes.IndexByte(l, '\n') != len(l)-1 {
			t.Fatalf("line feeds in %q", l)
		}
		head, _, ok := bytes.Cut(l, []byte(`,"file":`))
		if !ok || string(head)+"}" != string(file) {
			t.Fatalf("receipt not recoverable from %s", l)
		}
		var got, inFile map[string]any
		if err := json.Unmarshal(l, &got); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(file, &inFile); err != nil {
			t.Fatal(err)
		}
		sum := receipt.Hash(file)
		inFile["file"] = "000001.json"
		inFile["receipt_sha256"] = hex.EncodeToString(sum[:])
		if indexed {
			inFile["index"] = float64(1 << 40)
		}
		if diff := cmp.Diff(inFile, got); diff != "" {
			t.Errorf("indexed %v: members (-want +got):\n%s", indexed, diff)
		}
		if got["seq"] != float64(r.Seq) {
			t.Errorf("seq = %v", got["seq"])
		}
	}
}

func TestLineRejects(t *testing.T) {
	_, file := exampleReceipt(t)
	for _, b := range [][]byte{nil, []byte("{}"), append(bytes.Clone(file), '\n'), file[:len(file)-1]} {
		if l, err := Line(b); err == nil {
			t.Errorf("Line(%q) = %q", b, l)
		}
	}
}

// chain returns n signed receipts of one key, and their hashes.
func chain(t *testing.T, n int) ([]*receipt.Receipt, [][32]byte) {
	t.Helper()
	_, key, _ := ed25519.GenerateKey(nil)
	prev := receipt.FirstPrev
	var rs []*receipt.Receipt
	var sums [][32]byte
	for i := range n {
		r := &receipt.Receipt{Seq: uint64(i + 1), Time: time.Now(), Decision: receipt.Deny, Server: "bank", Tool: "transfer",
			Rule: "name.write_word", Reason: "r", ArgNames: []string{}, ArgsSHA256: strings.Repeat("a", 64),
			PolicyID: "p", PolicySHA256: strings.Repeat("b", 64), Prev: prev}
		file, err := receipt.Sign(r, key)
		if err != nil {
			t.Fatal(err)
		}
		sum := receipt.Hash(file)
		prev = hex.EncodeToString(sum[:])
		rs, sums = append(rs, r), append(sums, sum)
	}
	return rs, sums
}

// logBuf is a slog handler's output that tests read while the Stream logs.
type logBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) { l.mu.Lock(); defer l.mu.Unlock(); return l.b.Write(p) }
func (l *logBuf) count(s string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Count(l.b.String(), s)
}
func (l *logBuf) logger() *slog.Logger { return slog.New(slog.NewTextHandler(l, nil)) }

func closeNow(t *testing.T, s *Stream) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return s.Close(ctx)
}

// TestCloseFlushes writes lines to a file and checks them all, in order,
// once Close returns.
func TestCloseFlushes(t *testing.T) {
	rs, sums := chain(t, 200)
	path := filepath.Join(t.TempDir(), "events.jsonl")
	f, err := OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s := New(f, Options{Queue: len(rs)})
	for i, r := range rs {
		s.Receipt(r, sums[i])
	}
	if err := closeNow(t, s); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(lines) != len(rs) || s.Written() != uint64(len(rs)) || s.Dropped() != 0 {
		t.Fatalf("%d lines, Written %d, Dropped %d; want %d, 0 dropped", len(lines), s.Written(), s.Dropped(), len(rs))
	}
	for i, l := range lines {
		file, _ := rs[i].Marshal()
		want, _ := Line(file)
		if l+"\n" != string(want) {
			t.Fatalf("line %d = %s, want %s", i, l, want)
		}
	}
	s.Receipt(rs[0], sums[0]) // after Close: dropped, no panic
	if s.Dropped() != 1 {
		t.Fatalf("Dropped after Close = %d", s.Dropped())
	}
}

// TestQueueFullDrops stops the reader of a pipe: the Stream's writer
// blocks in its write, the queue fills, and every further line is
// dropped and counted without blocking the caller, with one warning.
func TestQueueFullDrops(t *testing.T) {
	rs, sums := chain(t, 50)
	pr, pw := io.Pipe() // a write blocks until it is read
	var log logBuf
	s := New(pw, Options{Queue: 4, Logger: log.logger()})
	for i, r := range rs {
		s.Receipt(r, sums[i]) // the test hangs here if it blocks
	}
	if d := s.Dropped(); d < uint64(len(rs)-5) {
		t.Fatalf("Dropped = %d, want at least %d (a queue of 4 and one line in the write)", d, len(rs)-5)
	}
	if n := log.count("queue full"); n != 1 {
		t.Fatalf("%d queue-full warnings, want 1:\n%s", n, log.b.String())
	}
	read := make(chan int)
	go func() {
		b, _ := io.ReadAll(pr)
		read <- bytes.Count(b, []byte("\n"))
	}()
	if err := closeNow(t, s); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	if n := <-read; uint64(n) != s.Written() || s.Written()+s.Dropped() != uint64(len(rs)) {
		t.Fatalf("read %d lines, Written %d, Dropped %d; want Written+Dropped = %d", n, s.Written(), s.Dropped(), len(rs))
	}
}

// TestCloseBounded: a write that never returns does not hold Close past
// its context.
func TestCloseBounded(t *testing.T) {
	rs, sums := chain(t, 3)
	_, pw := io.Pipe()
	s := New(pw, Options{})
	for i, r := range rs {
		s.Receipt(r, sums[i])
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := s.Close(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Close = %v, want the deadline", err)
	}
	pw.CloseWithError(errors.New("test over")) // lets the writer goroutine end
}

// TestWriteErrorGoesOn writes to a pipe whose reader has gone: every
// write fails with EPIPE, each line is counted, one warning is logged, and
// the Stream neither stops taking lines nor blocks.
func TestWriteErrorGoesOn(t *testing.T) {
	rs, sums := chain(t, 20)
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	pr.Close()
	defer pw.Close()
	var log logBuf
	s := New(pw, Options{Logger: log.logger()})
	for i, r := range rs {
		s.Receipt(r, sums[i])
	}
	if err := closeNow(t, s); err != nil {
		t.Fatal(err)
	}
	if s.Dropped() != uint64(len(rs)) || s.Written() != 0 {
		t.Fatalf("Dropped %d, Written %d; want %d, 0", s.Dropped(), s.Written(), len(rs))
	}
	if n := log.count("write failed"); n != 1 {
		t.Fatalf("%d write-failed warnings, want 1:\n%s", n, log.b.String())
	}
	if !strings.Contains(log.b.String(), syscall.EPIPE.Error()) {
		t.Fatalf("warning does not say why:\n%s", log.b.String())
	}
}

// flaky fails its first n writes, then appends to b.
type flaky struct {
	n int
	b bytes.Buffer
}

func (f *flaky) Write(p []byte) (int, error) {
	if f.n > 0 {
		f.n--
		return 0, syscall.ENOSPC
	}
	return f.b.Write(p)
}

// TestWriteErrorRecovers: after failed writes the next lines are written,
// and the recovery is logged.
func TestWriteErrorRecovers(t *testing.T) {
	rs, sums := chain(t, 5)
	w := &flaky{n: 2}
	var log logBuf
	s := New(w, Options{Logger: log.logger()})
	for i, r := range rs {
		s.Receipt(r, sums[i])
	}
	if err := closeNow(t, s); err != nil {
		t.Fatal(err)
	}
	if s.Dropped() != 2 || s.Written() != 3 || bytes.Count(w.b.Bytes(), []byte("\n")) != 3 {
		t.Fatalf("Dropped %d, Written %d, %d lines; want 2, 3, 3", s.Dropped(), s.Written(), bytes.Count(w.b.Bytes(), []byte("\n")))
	}
	if log.count("write failed") != 1 || log.count("writing again") != 1 {
		t.Fatalf("log:\n%s", log.b.String())
	}
	if !bytes.Contains(w.b.Bytes(), []byte(`"file":"000003.json"`)) {
		t.Fatalf("the third receipt is not the first line written:\n%s", w.b.String())
	}
}

// TestReceiptMismatch: a receipt that does not encode to the bytes whose
// hash the caller gave is dropped, not written with the wrong hash.
func TestReceiptMismatch(t *testing.T) {
	rs, sums := chain(t, 2)
	var buf bytes.Buffer
	s := New(&buf, Options{})
	s.Receipt(rs[0], sums[1])
	if err := closeNow(t, s); err != nil {
		t.Fatal(err)
	}
	if buf.Len() != 0 || s.Dropped() != 1 {
		t.Fatalf("wrote %q, Dropped %d", buf.String(), s.Dropped())
	}
}

func TestCommitted(t *testing.T) {
	rs, _ := chain(t, 3)
	var files [][]byte
	for _, r := range rs {
		f, _ := r.Marshal()
		files = append(files, f)
	}
	var buf bytes.Buffer
	s := New(&buf, Options{})
	s.Committed(7, files)
	for _, f := range files {
		clear(f) // Committed copied them
	}
	if err := closeNow(t, s); err != nil {
		t.Fatal(err)
	}
	var want []byte
	for i, r := range rs {
		f, _ := r.Marshal()
		l, _ := IndexedLine(f, 7+uint64(i))
		want = append(want, l...)
	}
	if buf.String() != string(want) {
		t.Fatalf("got\n%s\nwant\n%s", buf.String(), want)
	}
}

// TestConcurrent adds lines from many goroutines; every line is whole.
func TestConcurrent(t *testing.T) {
	rs, sums := chain(t, 64)
	path := filepath.Join(t.TempDir(), "e.jsonl")
	f, err := OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s := New(f, Options{})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := g; i < len(rs); i += 8 {
				s.Receipt(rs[i], sums[i])
			}
		})
	}
	wg.Wait()
	if err := closeNow(t, s); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	n := 0
	for l := range strings.Lines(string(b)) {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		n++
	}
	if n != len(rs) {
		t.Fatalf("%d lines, want %d", n, len(rs))
	}
}

func TestOpenFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "e.jsonl")
	for range 2 {
		f, err := OpenFile(path)
		if err != nil {
			t.Fatal(err)
		}
		f.Write([]byte("x\n"))
		f.Close()
	}
	b, _ := os.ReadFile(path)
	fi, _ := os.Stat(path)
	if string(b) != "x\nx\n" || fi.Mode().Perm() != 0o600 {
		t.Fatalf("file %q mode %v; want appended lines, 0600", b, fi.Mode().Perm())
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{dir, filepath.Join(dir, "missing", "e.jsonl"), fifo} {
		if f, err := OpenFile(bad); err == nil {
			f.Close()
			t.Errorf("OpenFile(%s) succeeded", bad)
		}
	}
}
