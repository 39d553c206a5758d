package receipt

import (
	"crypto/ed25519"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/bankdoor/bankdoor/internal/agentkey"
	"github.com/bankdoor/bankdoor/internal/atomicfile"
	"github.com/bankdoor/bankdoor/internal/flock"
)

// LockWait bounds how long a Write (or OpenWriter) waits for the
// directory's lock while another Writer holds it: a write takes
// milliseconds, so a longer wait means a process is stuck holding it.
const LockWait = 5 * time.Second

const (
	lockName    = ".lock"
	tmpMark     = ".tmp-"            // in the names of temporary files
	probePrefix = ".probe" + tmpMark // OpenWriter's writability probe
)

// A Writer appends receipts to a receipts directory, continuing the chain
// found there. Any number of Writers, in any number of processes, may
// share one directory and one key: each Write holds the directory's lock
// (an exclusive flock(2) on DIR/.lock) for that write only and continues
// the chain from the directory's head, so together they write one chain
// (see "Receipts Directory" in the package documentation). Its methods are
// safe for concurrent use.
type Writer struct {
	mu       sync.Mutex // serialises this Writer's goroutines; the flock serialises the rest
	dir      string
	key      ed25519.PrivateKey
	keyID    string
	lockPath string        // DIR/.lock, opened and locked for each Write
	lockWait time.Duration // LockWait but in tests
	seq      uint64        // seq of the directory's head when last seen, 0 if none
	prev     string        // hex hash of that receipt, FirstPrev if none
	closed   bool
}

// OpenWriter opens the receipts directory dir for key, creating it with
// mode 0700 if it is missing. It takes the directory's lock briefly (it
// waits, at most LockWait, while another Writer is in the middle of a
// Write) and fails at
// once if dir cannot be created or written, if dir holds a regular file
// that is not a receipt, or if its last receipt does not parse or is not
// signed by key. Leftover temporary files of a Write that was interrupted
// (its process killed) are removed. OpenWriter does not keep the lock:
// other Writers may open dir and write to it while this one is open.
func OpenWriter(dir string, key ed25519.PrivateKey) (*Writer, error) {
	if len(key) != ed25519.PrivateKeySize {
		return nil, errors.New("open receipts directory: not an Ed25519 private key")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create receipts directory: %w", err)
	}
	lockPath := filepath.Join(dir, lockName)
	lockf, err := flock.Open(lockPath)
	if errors.Is(err, errors.ErrUnsupported) {
		return nil, fmt.Errorf("open receipts directory %s: %w", dir, err)
	} else if err != nil {
		return nil, fmt.Errorf("receipts directory %s is not writable: %w", dir, err)
	}
	lockf.Close()
	pub := key.Public().(ed25519.PublicKey)
	w := &Writer{dir: dir, key: key, keyID: agentkey.KeyID(pub), lockPath: lockPath, lockWait: LockWait, prev: FirstPrev}
	if err := w.locked(w.open); err != nil {
		return nil, err
	}
	return w, nil
}

// locked runs f while holding the directory's lock, waiting at most
// w.lockWait for it (the error wraps flock.ErrLocked and names the lock
// file and, where known, its holder). Closing the lock file releases the
// lock; its error is not f's, which may have written a receipt.
func (w *Writer) locked(f func() error) error {
	l, err := flock.LockWait(w.lockPath, w.lockWait)
	if err != nil {
		return fmt.Errorf("lock receipts directory %s: %w", w.dir, err)
	}
	defer l.Close()
	return f()
}

// open probes, cleans and scans the directory. It runs under the lock, so
// no other Writer is creating a temporary file or probing.
func (w *Writer) open() error {
	if err := probe(w.dir); err != nil {
		return fmt.Errorf("receipts directory %s is not writable: %w", w.dir, err)
	}
	head, err := w.scan()
	if err != nil {
		return err
	}
	if head != 0 {
		return w.loadHead(head)
	}
	return nil
}

// probe creates, syncs and removes a temporary file in dir.
func probe(dir string) error {
	f, err := os.CreateTemp(dir, probePrefix+"*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	serr := f.Sync()
	if cerr := f.Close(); serr == nil {
		serr = cerr
	}
	return serr
}

// isTemp reports whether name is a temporary file that an interrupted
// Write or probe left: .NNNNNN.json.tmp-* (internal/atomicfile's),
// .probe.tmp-*, or .tmp-* (of writers before atomicfile).
func isTemp(name string) bool {
	base, _, ok := strings.Cut(name, tmpMark)
	if !ok || !strings.HasPrefix(name, ".") {
		return false
	}
	base = strings.TrimPrefix(base, ".")
	_, isReceipt := ParseFileName(base)
	return base == "" || base == "probe" || isReceipt
}

// scan removes temporary files and returns the highest seq in the
// directory, 0 if there is none. Other names starting with "." and
// directories not named like receipts are skipped.
func (w *Writer) scan() (uint64, error) {
	entries, err := os.ReadDir(w.dir)
	if err != nil {
		return 0, fmt.Errorf("read receipts directory: %w", err)
	}
	var head uint64
	for _, e := range entries {
		name := e.Name()
		if isTemp(name) {
			os.Remove(filepath.Join(w.dir, name)) // we hold the lock: nobody is writing it
			continue
		}
		if strings.HasPrefix(name, ".") {
			continue
		}
		seq, ok := ParseFileName(name)
		if e.IsDir() && !ok {
			continue // e.g. another agent's chain, DIR/AGENT
		}
		if !ok || !e.Type().IsRegular() {
			return 0, fmt.Errorf("%s is not a receipt file (NNNNNN.json); move it out of the receipts directory",
				filepath.Join(w.dir, name))
		}
		head = max(head, seq)
	}
	return head, nil
}

// loadHead makes the receipt file of seq the Writer's head, after checking
// that it parses, holds seq and is signed by the Writer's key.
func (w *Writer) loadHead(seq uint64) error {
	path := filepath.Join(w.dir, FileName(seq))
	b, err := readFile(path)
	if err != nil {
		return err
	}
	pub := w.key.Public().(ed25519.PublicKey)
	var keyErr error
	r, err := Open(b, func(r *Receipt) (ed25519.PublicKey, error) {
		if r.KeyID != w.keyID {
			keyErr = fmt.Errorf("%s is signed by key_id %s, not by this key (key_id %s); use another receipts directory or the key that signed it",
				path, r.KeyID, w.keyID)
			return nil, keyErr
		}
		return pub, nil
	})
	switch {
	case keyErr != nil:
		return keyErr
	case errors.Is(err, ErrSignature):
		return fmt.Errorf("%s: %w", path, err)
	case err != nil:
		return fmt.Errorf("%s: %w; the chain cannot be continued", path, err)
	case r.Seq != seq:
		return fmt.Errorf("%s holds seq %d; the chain cannot be continued", path, r.Seq)
	}
	sum := Hash(b)
	w.seq, w.prev = seq, hex.EncodeToString(sum[:])
	return nil
}

// readFile reads at most MaxSize+1 bytes of path, so Parse sees an
// oversized file as oversized without it all being read.
func readFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, MaxSize+1))
}

// Write appends r to the chain. Holding the directory's lock, it finds
// the directory's head (the Writer's last known head, or a later receipt
// another Writer wrote, which must be signed by the same key), sets r.Seq
// to the head's seq + 1 and r.Prev to its hash, r.Time to now if it is
// zero, signs r (see Sign) and creates FileName(r.Seq) with
// internal/atomicfile: the name appears only with the whole receipt, and
// the file and the directory are synced, so the receipt is durable when
// Write returns. It returns the file name and the receipt hash. If Write
// fails, r is unchanged, no file is left behind and the next Write uses
// the same seq.
func (w *Writer) Write(r *Receipt) (name string, sum [32]byte, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return "", sum, errors.New("write receipt: writer is closed")
	}
	err = w.locked(func() error {
		name, sum, err = w.write(r)
		return err
	})
	return name, sum, err
}

// Seq returns the seq of the directory's head as this Writer last saw
// it: the receipt it last wrote, or a later one another Writer wrote
// before its last Write; 0 if none.
func (w *Writer) Seq() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.seq
}

// write is Write under the lock.
func (w *Writer) write(r *Receipt) (string, [32]byte, error) {
	var sum [32]byte
	if err := w.findHead(); err != nil {
		return "", sum, fmt.Errorf("write receipt: %w", err)
	}
	c := *r
	c.Seq, c.Prev = w.seq+1, w.prev
	if c.Time.IsZero() {
		c.Time = time.Now()
	}
	file, err := Sign(&c, w.key)
	if err != nil {
		return "", sum, err
	}
	name := FileName(c.Seq)
	if err := w.create(filepath.Join(w.dir, name), file); err != nil {
		return "", sum, fmt.Errorf("write receipt: %w", err)
	}
	sum = Hash(file)
	w.seq, w.prev = c.Seq, hex.EncodeToString(sum[:])
	*r = c
	return name, sum, nil
}

// findHead moves the Writer's head to the directory's: the last of
// FileName(seq+1), seq+2, ... that exists. With one Writer on the
// directory that costs one failed stat.
func (w *Writer) findHead() error {
	head := w.seq
	for {
		_, err := os.Lstat(filepath.Join(w.dir, FileName(head+1)))
		if errors.Is(err, fs.ErrNotExist) {
			break
		} else if err != nil {
			return fmt.Errorf("find the receipts directory's head: %w", err)
		}
		head++
	}
	if head == w.seq {
		return nil
	}
	return w.loadHead(head)
}

// create creates path holding file; its errors name path. If the name
// appeared but the write failed (the directory sync did), it removes it
// again: we hold the lock, so the name is ours.
func (w *Writer) create(path string, file []byte) error {
	err := atomicfile.Create(path, file, 0o600)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, fs.ErrExist):
		return fmt.Errorf("%w: a program that does not take %s writes to the receipts directory",
			err, filepath.Join(w.dir, lockName))
	}
	if rerr := os.Remove(path); rerr == nil {
		atomicfile.SyncDir(w.dir)
	}
	return err
}

// Close releases the Writer's resources. Write fails after Close.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil
	}
	w.closed = true
	return nil
}
