package verifier

import (
	"crypto/ed25519"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/transparency-dev/merkle/rfc6962"

	"github.com/bankdoor/bankdoor/internal/agentkey"
	"github.com/bankdoor/bankdoor/ledger/receipt"
)

// A pipeline is how verifyFiles splits the work: workers take blocks of
// consecutive files, and each worker reads, parses, checks the signature
// of and hashes the files of its block, while the calling goroutine
// checks the chain of finished blocks in seq order. At most window files
// are read and not yet checked: what verifyFiles holds in memory.
type pipeline struct {
	window int // files, a multiple of block
	block  int // files
}

// The pipeline verifyFiles uses: a block is the work of about half a
// millisecond, small enough that no worker waits long for the last ones,
// and the window is many blocks, so the workers do not wait for the
// chain either.
const (
	window = 4096
	block  = 16
)

// verifyFiles is VerifyDir over the given receipt files (as receiptFiles
// returns them: receipt file names in seq order), with the reading,
// parsing, signature checks and hashing of the files spread over
// GOMAXPROCS goroutines and the chain checked in order as they finish. If leaves is true it returns each receipt's RFC 6962 leaf
// hash too. check, if not nil, is called (in parallel) with each file's
// position in names and its leaf hash; its error counts as that file's.
// The error returned is the one of the first file in seq order that
// fails, as VerifyDir's would be; nothing past it changes the result.
func verifyFiles(dir string, names []string, key ed25519.PublicKey, opts Options, leaves bool, check func(i int, leaf []byte) error) (*Report, [][]byte, error) {
	return pipeline{window, block}.run(dir, names, key, opts, leaves, check)
}

// opened is what the workers learnt of one file.
type opened struct {
	r   *receipt.Receipt
	sum [32]byte // receipt.Hash of the file
	err error    // if not nil, the file's error; r is nil
}

// run is verifyFiles with p's window and block.
func (p pipeline) run(dir string, names []string, key ed25519.PublicKey, opts Options, leaves bool, check func(i int, leaf []byte) error) (*Report, [][]byte, error) {
	d := openDir(dir)
	defer d.close()
	w := &work{dir: d, names: names, check: check, block: p.block,
		chain: &chain{key: key, opts: opts, rep: &Report{Dir: dir, KeyID: agentkey.KeyID(key), FirstSeq: 1, Receipts: make([]Checked, 0, len(names))}}}
	if leaves {
		w.leaves = make([][]byte, len(names))
	}
	w.blocks = (len(names) + p.block - 1) / p.block
	slots := max(1, min(p.window/p.block, w.blocks))
	w.slots = make([][]opened, slots)
	w.ready = make([]chan struct{}, slots)
	for i := range slots {
		w.slots[i] = make([]opened, p.block)
		w.ready[i] = make(chan struct{}, 1)
	}
	w.free = make(chan struct{}, slots)
	w.quit = make(chan struct{})
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), w.blocks) {
		wg.Go(w.open)
	}
	err := w.accept()
	close(w.quit)
	wg.Wait()
	if err != nil {
		return nil, nil, err
	}
	return w.chain.rep, w.leaves, nil
}

// work is one run of a pipeline. Block k of names goes to slot k%slots;
// free holds a token for each block a worker has claimed (or is about to
// claim) and accept has not yet checked, so that a worker claiming block
// k finds block k-slots checked and its slot free.
type work struct {
	dir    dirFile
	names  []string
	check  func(i int, leaf []byte) error
	chain  *chain
	leaves [][]byte // nil if not asked for
	block  int
	blocks int

	next  atomic.Int64    // the next block to claim
	slots [][]opened      // a block's files each
	ready []chan struct{} // a slot's block is done
	free  chan struct{}
	quit  chan struct{} // closed when accept is done
}

// open is a worker: it claims blocks in order and opens their files,
// until there are none left or accept is done.
func (w *work) open() {
	var rd reader
	for {
		select {
		case w.free <- struct{}{}:
		case <-w.quit:
			return
		}
		k := int(w.next.Add(1) - 1)
		if k >= w.blocks {
			return
		}
		slot := w.slots[k%len(w.slots)]
		first := k * w.block
		for i := first; i < min(first+w.block, len(w.names)); i++ {
			select {
			case <-w.quit:
				return
			default:
			}
			slot[i-first] = w.openFile(&rd, i)
		}
		w.ready[k%len(w.slots)] <- struct{}{}
	}
}

// openFile reads names[i], parses it, checks its signature and file name
// and hashes it: all that does not depend on the files before it. The
// file's bytes are rd's buffer, which the next file overwrites: what
// openFile returns holds none of them (the parsed receipt's strings are
// copies).
func (w *work) openFile(rd *reader, i int) opened {
	name := w.names[i]
	b, err := w.dir.read(rd, name)
	if err != nil {
		return opened{err: err}
	}
	r, err := w.chain.parse(name, b)
	if err != nil {
		return opened{err: err}
	}
	if w.leaves != nil || w.check != nil {
		leaf := rfc6962.DefaultHasher.HashLeaf(b)
		if w.leaves != nil {
			w.leaves[i] = leaf
		}
		if w.check != nil {
			if err := w.check(i, leaf); err != nil {
				return opened{err: err}
			}
		}
	}
	if err := named(name, r); err != nil {
		return opened{err: err}
	}
	return opened{r: r, sum: receipt.Hash(b)}
}

// accept checks the chain of the opened files in seq order, block by
// block as the workers finish them, and returns the first file's error.
func (w *work) accept() error {
	for k := range w.blocks {
		s := k % len(w.slots)
		<-w.ready[s]
		first := k * w.block
		for i, o := range w.slots[s][:min(w.block, len(w.names)-first)] {
			if o.err != nil {
				return o.err
			}
			if err := w.chain.accept(w.names[first+i], o.r, o.sum); err != nil {
				return err
			}
			w.slots[s][i] = opened{}
		}
		<-w.free
	}
	return nil
}
