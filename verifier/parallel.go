package verifier

import (
	"path/filepath"
	"runtime"
	"sync"

	"github.com/transparency-dev/merkle/rfc6962"

	"github.com/bankdoor/bankdoor/ledger/receipt"
)

// chunk is how many receipts verifyFiles holds in memory at once.
const chunk = 4096

// verifyFiles is VerifyDir over the given receipt files (in seq order),
// with the reading, parsing and signature checks of each chunk of files
// spread over GOMAXPROCS goroutines and the chain checked in order. It
// returns each receipt's RFC 6962 leaf hash too. check, if not nil, is
// called (in parallel) with each file's position in names and its leaf
// hash; its error counts as that file's. The error returned is the one of
// the first file in seq order that fails, as VerifyDir's would be.
func verifyFiles(dir string, names []string, key *receipt.Key, opts Options, check func(i int, leaf []byte) error) (*Report, [][]byte, error) {
	c := &chain{key: key, opts: opts, rep: &Report{Dir: dir, KeyID: key.KeyID(), FirstSeq: 1}}
	leaves := make([][]byte, len(names))
	type parsed struct {
		data []byte
		r    *receipt.Receipt
	}
	batch := make([]parsed, min(chunk, len(names)))
	for at := 0; at < len(names); at += chunk {
		part := names[at:min(at+chunk, len(names))]
		errs := parallel(len(part), func(i int) error {
			name := part[i]
			b, err := readReceipt(filepath.Join(dir, name))
			if err != nil {
				return err
			}
			r, err := c.parse(name, b)
			if err != nil {
				return err
			}
			batch[i] = parsed{b, r}
			leaves[at+i] = rfc6962.DefaultHasher.HashLeaf(b)
			if check != nil {
				return check(at+i, leaves[at+i])
			}
			return nil
		})
		for i, name := range part {
			if errs[i] != nil {
				return nil, nil, errs[i]
			}
			if err := c.accept(name, batch[i].data, batch[i].r); err != nil {
				return nil, nil, err
			}
		}
	}
	return c.rep, leaves, nil
}

// parallel calls fn(0) ... fn(n-1) on GOMAXPROCS goroutines and returns
// each call's error, by i.
func parallel(n int, fn func(i int) error) []error {
	errs := make([]error, n)
	workers := min(runtime.GOMAXPROCS(0), n)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := w; i < n; i += workers {
				errs[i] = fn(i)
			}
		})
	}
	wg.Wait()
	return errs
}
