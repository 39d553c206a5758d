package verifier

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
	"unsafe"

	"github.com/transparency-dev/merkle/rfc6962"

	"github.com/bankdoor/bankdoor/internal/agentchain/chaintest"
	"github.com/bankdoor/bankdoor/ledger/receipt"
)

// A testChain is a receipts directory of one agent's chain, with the
// files' contents, for running pipelines over.
type testChain struct {
	a     *chaintest.Agent
	key   ed25519.PublicKey
	dir   string
	names []string
	files [][]byte // names[i]'s
}

func newTestChain(t *testing.T, n int) *testChain {
	t.Helper()
	a := chaintest.Generate(t, time.Unix(1796000000, 0))
	c := &testChain{a: a, key: a.Public(), dir: t.TempDir(), files: a.Chain(t, n)}
	for i, b := range c.files {
		c.names = append(c.names, receipt.FileName(uint64(i)+1))
		writeFile(t, filepath.Join(c.dir, c.names[i]), b)
	}
	return c
}

// run runs p over the chain's files, asking for the leaves.
func (c *testChain) run(p pipeline, check func(int, []byte) error) (*Report, [][]byte, error) {
	return p.run(c.dir, c.names, c.key, Options{}, true, check)
}

// wantReport checks that rep and leaves are those of the first n files.
func (c *testChain) wantReport(t *testing.T, rep *Report, leaves [][]byte, n int) {
	t.Helper()
	if len(rep.Receipts) != n || len(leaves) != n || rep.LastSeq != uint64(n) || rep.Head != sha256.Sum256(c.files[n-1]) {
		t.Fatalf("report of %d receipts, %d leaves, last seq %d, head %x; want %d, ending with %x",
			len(rep.Receipts), len(leaves), rep.LastSeq, rep.Head, n, sha256.Sum256(c.files[n-1]))
	}
	for i, got := range rep.Receipts {
		want := Checked{c.names[i], uint64(i) + 1, sha256.Sum256(c.files[i]), receipt.Deny}
		if got != want {
			t.Fatalf("receipt %d reported as %+v, want %+v", i, got, want)
		}
		if !bytes.Equal(leaves[i], rfc6962.DefaultHasher.HashLeaf(c.files[i])) {
			t.Fatalf("leaf %d is %x, not the file's leaf hash", i, leaves[i])
		}
	}
}

// shapes are pipelines small enough to cross their boundaries with a few
// files: several slots, slots that are not a power of two, a single slot.
var shapes = []pipeline{{window: 8, block: 2}, {window: 9, block: 3}, {window: 4, block: 4}, {window: 6, block: 1}}

// TestPipelineReport: whatever the number of files against a pipeline's
// block and window, every receipt is reported once, in seq order, with
// its hash and leaf.
func TestPipelineReport(t *testing.T) {
	t.Parallel()
	c := newTestChain(t, 2*9+3+1)
	for _, p := range shapes {
		for _, n := range []int{1, p.block - 1, p.block, p.block + 1, p.window - 1, p.window, p.window + 1, 2*p.window + p.block + 1} {
			if n < 1 {
				continue
			}
			sub := *c
			sub.names, sub.files = c.names[:n], c.files[:n]
			rep, leaves, err := sub.run(p, nil)
			if err != nil {
				t.Fatalf("%+v, %d files: %v", p, n, err)
			}
			sub.wantReport(t, rep, leaves, n)
		}
	}
}

// A fault makes one file fail, and says how it must fail.
type fault struct {
	kind string // sig, chain, name, missing or check
	at   int    // index in names
}

// apply spoils the file f.at of c in the way f.kind says, and returns the
// check function to pass if f is a check fault.
func (f fault) apply(t *testing.T, c *testChain) func(int, []byte) error {
	t.Helper()
	path := filepath.Join(c.dir, c.names[f.at])
	seq := uint64(f.at) + 1
	switch f.kind {
	case "sig":
		writeFile(t, path, bytes.Replace(c.files[f.at], []byte("payment"), []byte("pavment"), 1))
	case "chain":
		writeFile(t, path, c.a.Sign(t, seq, hexSum("another receipt")))
	case "name":
		writeFile(t, path, c.files[(f.at+1)%len(c.files)])
	case "missing":
		if err := os.Remove(path); err != nil {
			t.Fatal(err)
		}
	case "check":
		return func(i int, _ []byte) error {
			if i == f.at {
				return &Error{c.names[i], "check refused it"}
			}
			return nil
		}
	}
	return nil
}

// want checks that err is the error f gives.
func (f fault) want(t *testing.T, c *testChain, err error) {
	t.Helper()
	name := c.names[f.at]
	switch f.kind {
	case "sig":
		wantError(t, err, name, "signature does not verify")
	case "chain":
		wantError(t, err, name, "prev does not match SHA-256 of")
	case "name":
		wantError(t, err, name, "so its name should be")
	case "missing":
		if !errors.Is(err, os.ErrNotExist) || err.Error() != "open "+filepath.Join(c.dir, name)+": no such file or directory" {
			t.Fatalf("err = %v, want the open error of %s", err, name)
		}
	case "check":
		wantError(t, err, name, "check refused it")
	}
}

// TestPipelineFirstError: the error is the first failing file's in seq
// order, whichever blocks and windows the failures fall in and however
// the workers run.
func TestPipelineFirstError(t *testing.T) {
	t.Parallel()
	for _, p := range shapes {
		w := p.window
		n := 3*w + 1
		last := n - 1
		for _, faults := range [][]fault{
			{{"chain", 1}, {"sig", w + 1}},
			{{"sig", 1}, {"chain", w + 1}},
			{{"chain", last}},
			{{"sig", last}},
			{{"missing", last}},
			{{"check", last}},
			{{"missing", 2 * w}, {"chain", 2*w + 1}},
			{{"name", 2}, {"check", 3}},
			{{"check", 2}, {"name", 3}},
			{{"chain", w - 1}, {"missing", w}},
			{{"sig", 0}, {"missing", 1}, {"check", 2}, {"missing", last}},
			{{"chain", 2 * w}, {"check", 1}},
			{{"missing", w + p.block}, {"sig", 0}},
		} {
			t.Run(fmt.Sprintf("%+v%v", p, faults), func(t *testing.T) {
				t.Parallel()
				c := newTestChain(t, n)
				var check func(int, []byte) error
				first := faults[0]
				for _, f := range faults {
					if ch := f.apply(t, c); ch != nil {
						check = ch
					}
					if f.at < first.at {
						first = f
					}
				}
				for range 3 { // the workers race differently each time
					_, _, err := c.run(p, check)
					first.want(t, c, err)
				}
			})
		}
	}
}

// TestVerifyFilesWindow runs verifyFiles's own pipeline over window and
// window+1 files, with a failure in the first block and one at the very
// last file.
func TestVerifyFilesWindow(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("signs and verifies some 16,000 receipts")
	}
	c := newTestChain(t, window+1)
	for _, n := range []int{window, window + 1} {
		rep, leaves, err := verifyFiles(c.dir, c.names[:n], c.key, Options{}, true, nil)
		if err != nil {
			t.Fatalf("%d files: %v", n, err)
		}
		c.wantReport(t, rep, leaves, n)
	}
	last := fault{"chain", window}
	last.apply(t, c)
	_, _, err := verifyFiles(c.dir, c.names, c.key, Options{}, false, nil)
	last.want(t, c, err)
	first := fault{"sig", block - 1}
	first.apply(t, c)
	_, _, err = verifyFiles(c.dir, c.names, c.key, Options{}, false, nil)
	first.want(t, c, err)
}

// TestReportDoesNotHoldReceipts: a report's decisions are the package
// receipt's constants, not strings cut from the receipts' text, which
// would keep every receipt of a directory in memory for as long as the
// report.
func TestReportDoesNotHoldReceipts(t *testing.T) {
	t.Parallel()
	k := key(1)
	dir := t.TempDir()
	w, err := receipt.OpenWriter(dir, k)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	allow := deny(1, "a")
	allow.Decision = receipt.Allow
	for _, r := range []*receipt.Receipt{deny(0, "a"), allow} {
		if _, _, err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := VerifyDir(dir, pubOf(k), Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{receipt.Deny, receipt.Allow} {
		if got := rep.Receipts[i].Decision; got != want || unsafe.StringData(got) != unsafe.StringData(want) {
			t.Errorf("receipt %d: decision %q is not the constant receipt.%s", i+1, got, want)
		}
	}
}
