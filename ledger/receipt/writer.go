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
)

// ErrLocked is wrapped by the error OpenWriter returns when another
// process holds the receipts directory's lock.
var ErrLocked = errors.New("another bankdoor holds the lock")

const (
	lockName  = ".lock"
	tmpPrefix = ".tmp-"
)

// A Writer appends receipts to a receipts directory, continuing the chain
// found there. It holds an exclusive lock on the directory until Close, so
// two processes never write one chain. Its methods are safe for
// concurrent use.
type Writer struct {
	mu     sync.Mutex
	dir    string
	key    ed25519.PrivateKey
	dirf   *os.File // the directory, kept open to fsync it
	lockf  *os.File
	seq    uint64 // seq of the last receipt, 0 if none
	prev   string // hex hash of the last receipt, FirstPrev if none
	closed bool
}

// OpenWriter opens the receipts directory dir for key, creating it with
// mode 0700 if it is missing. It fails at once if dir cannot be created or
// written, if another process holds dir/.lock (the error wraps ErrLocked),
// if dir holds a file that is not a receipt, or if its last receipt does
// not parse or is not signed by key. Leftover temporary files of an
// interrupted Write are removed.
func OpenWriter(dir string, key ed25519.PrivateKey) (*Writer, error) {
	if len(key) != ed25519.PrivateKeySize {
		return nil, errors.New("open receipts directory: not an Ed25519 private key")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create receipts directory: %w", err)
	}
	if err := probe(dir); err != nil {
		return nil, fmt.Errorf("receipts directory %s is not writable: %w", dir, err)
	}
	lockPath := filepath.Join(dir, lockName)
	lockf, err := lock(lockPath)
	if errors.Is(err, ErrLocked) {
		return nil, fmt.Errorf("%w on %s; stop that proxy or use another receipts directory", err, lockPath)
	} else if err != nil {
		return nil, fmt.Errorf("lock receipts directory: %w", err)
	}
	w := &Writer{dir: dir, key: key, lockf: lockf, prev: FirstPrev}
	if err := w.open(); err != nil {
		lockf.Close()
		return nil, err
	}
	return w, nil
}

// probe creates, syncs and removes a temporary file in dir.
func probe(dir string) error {
	f, err := os.CreateTemp(dir, tmpPrefix+"probe-*")
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

func (w *Writer) open() error {
	last, err := w.scan()
	if err != nil {
		return err
	}
	if last != 0 {
		if err := w.loadLast(last); err != nil {
			return err
		}
	}
	w.dirf, err = os.Open(w.dir)
	return err
}

// scan returns the highest seq in the directory, 0 if there is none.
func (w *Writer) scan() (uint64, error) {
	entries, err := os.ReadDir(w.dir)
	if err != nil {
		return 0, fmt.Errorf("read receipts directory: %w", err)
	}
	var last uint64
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, tmpPrefix) {
			os.Remove(filepath.Join(w.dir, name)) // we hold the lock: nobody is writing it
			continue
		}
		if strings.HasPrefix(name, ".") {
			continue
		}
		seq, ok := ParseFileName(name)
		if !ok || !e.Type().IsRegular() {
			return 0, fmt.Errorf("%s is not a receipt file (NNNNNN.json); move it out of the receipts directory",
				filepath.Join(w.dir, name))
		}
		last = max(last, seq)
	}
	return last, nil
}

func (w *Writer) loadLast(seq uint64) error {
	path := filepath.Join(w.dir, FileName(seq))
	b, err := readFile(path)
	if err != nil {
		return err
	}
	r, err := Parse(b)
	if err != nil {
		return fmt.Errorf("%s: %w; the chain cannot be continued", path, err)
	}
	pub := w.key.Public().(ed25519.PublicKey)
	if id := agentkey.KeyID(pub); r.KeyID != id {
		return fmt.Errorf("%s is signed by key_id %s, not by this key (key_id %s); use another receipts directory or the key that signed it",
			path, r.KeyID, id)
	}
	if err := r.Verify(pub); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if r.Seq != seq {
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

// Write appends r to the chain: it sets r.Seq and r.Prev, r.Time if it is
// zero, signs r (see Sign) and writes it as FileName(r.Seq) through a
// synced temporary file and a rename, then syncs the directory, so the
// receipt is durable when Write returns. It returns the file name and the
// receipt hash. If Write fails, r is unchanged, no file is left behind and
// the next Write uses the same seq.
func (w *Writer) Write(r *Receipt) (name string, sum [32]byte, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return "", sum, errors.New("write receipt: writer is closed")
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
	name = FileName(c.Seq)
	if err := w.put(name, file); err != nil {
		return "", sum, fmt.Errorf("write receipt %s: %w", filepath.Join(w.dir, name), err)
	}
	sum = Hash(file)
	w.seq, w.prev = c.Seq, hex.EncodeToString(sum[:])
	*r = c
	return name, sum, nil
}

func (w *Writer) put(name string, file []byte) (err error) {
	final := filepath.Join(w.dir, name)
	if _, err := os.Lstat(final); err == nil {
		return errors.New("file exists: another program writes to the receipts directory")
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	f, err := os.CreateTemp(w.dir, tmpPrefix+"*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if _, err := f.Write(file); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(f.Name(), final); err != nil {
		return err
	}
	if err := w.dirf.Sync(); err != nil {
		os.Remove(final)
		return fmt.Errorf("sync receipts directory: %w", err)
	}
	return nil
}

// Close releases the directory's lock. Write fails after Close.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil
	}
	w.closed = true
	derr := w.dirf.Close()
	if err := w.lockf.Close(); err != nil {
		return err
	}
	return derr
}
