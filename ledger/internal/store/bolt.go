package store

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/transparency-dev/merkle/compact"
	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"

	"github.com/bankdoor/bankdoor/internal/flock"
)

// ErrLocked is wrapped by OpenBolt's error when another process has the
// file open.
var ErrLocked = errors.New("another process holds the ledger file")

// Bucket names of the bbolt backend, one per keyspace.
var (
	bucketEntries      = []byte("entries")
	bucketLeaves       = []byte("leaves")
	bucketNodes        = []byte("nodes")
	bucketHeads        = []byte("heads")
	bucketMeta         = []byte("meta")
	bucketCosignatures = []byte("cosignatures")
	bucketWitnesses    = []byte("witnesses")
)

// buckets are the buckets of Version, every one of which a file has.
func buckets() [][]byte {
	return [][]byte{bucketEntries, bucketLeaves, bucketNodes, bucketHeads, bucketMeta, bucketCosignatures, bucketWitnesses}
}

// DefaultLockWait bounds the wait for the file lock another process holds.
const DefaultLockWait = time.Second

// Bolt is the bbolt backend. Update commits with fsync (bbolt's NoSync is
// never set), so a nil return means durable.
type Bolt struct {
	db   *bolt.DB
	path string
}

// OpenBolt opens the bbolt file at path, creating it (mode 0600) and its
// buckets unless readOnly is set. A read-write open takes an exclusive
// lock on the file, a read-only open a shared one; if another process
// holds a conflicting lock, OpenBolt fails with an error naming the file
// after DefaultLockWait, or after one try if [OpenBoltWait]'s wait is
// negative. A symbolic link at path is refused, not followed.
func OpenBolt(path string, readOnly bool) (*Bolt, error) {
	return OpenBoltWait(path, readOnly, DefaultLockWait)
}

// OpenBoltWait is OpenBolt waiting up to wait for the file lock; a
// negative wait tries once.
func OpenBoltWait(path string, readOnly bool, wait time.Duration) (*Bolt, error) {
	if readOnly {
		if _, err := os.Lstat(path); err != nil {
			return nil, fmt.Errorf("open ledger %s: %w", path, err)
		}
	}
	if wait <= 0 {
		wait = time.Nanosecond // bbolt: zero waits for ever; anything under its 50 ms retry tries once
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: wait, ReadOnly: readOnly, OpenFile: openNoFollow})
	if errors.Is(err, bolterrors.ErrTimeout) {
		by := flock.Holders(path)
		if by == "" {
			by = "a ledger server or a proxy?"
		}
		return nil, fmt.Errorf("open ledger %s: %w (%s): %w", path, ErrLocked, by, err)
	}
	if fi, lerr := os.Lstat(path); err != nil && lerr == nil && fi.Mode()&os.ModeSymlink != 0 {
		return nil, fmt.Errorf("open ledger %s: it is a symbolic link, which is not followed: a ledger file is a regular file", path)
	}
	if err != nil {
		return nil, fmt.Errorf("open ledger %s: %w", path, err)
	}
	s := &Bolt{db: db, path: path}
	if err := s.init(readOnly); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

// openNoFollow is bbolt's os.OpenFile refusing a symbolic link at the
// path, dangling or not, in the same system call that opens or creates
// the file: a link cannot redirect the ledger elsewhere, even one put
// there after a check.
func openNoFollow(name string, flag int, perm os.FileMode) (*os.File, error) {
	return os.OpenFile(name, flag|oNoFollow, perm)
}

func (s *Bolt) init(readOnly bool) error {
	if readOnly {
		return s.db.View(func(tx *bolt.Tx) error {
			for _, name := range buckets() {
				if tx.Bucket(name) == nil {
					return fmt.Errorf("%s is not a bankdoor ledger: no bucket %q", s.path, name)
				}
			}
			return nil
		})
	}
	return s.db.Update(func(tx *bolt.Tx) error {
		for _, name := range buckets() {
			if _, err := tx.CreateBucketIfNotExists(name); err != nil {
				return fmt.Errorf("%s: create bucket %q: %w", s.path, name, err)
			}
		}
		return nil
	})
}

// Path returns the file's path.
func (s *Bolt) Path() string { return s.path }

// Read is View: a bbolt read transaction costs nothing.
func (s *Bolt) Read(fn func(Tx) error) error { return s.View(fn) }

// Shared is false: a bbolt file is held by one process at a time.
func (s *Bolt) Shared() bool { return false }

// Close closes the file.
func (s *Bolt) Close() error { return s.db.Close() }

// View runs fn in a read-only transaction.
func (s *Bolt) View(fn func(Tx) error) error {
	return s.db.View(func(tx *bolt.Tx) error { return fn(boltTx{tx}) })
}

// Update runs fn in a read-write transaction and commits it durably.
func (s *Bolt) Update(fn func(Tx) error) error {
	if s.db.IsReadOnly() {
		return fmt.Errorf("%s: %w", s.path, ErrReadOnly)
	}
	return s.db.Update(func(tx *bolt.Tx) error { return fn(boltTx{tx}) })
}

type boltTx struct{ tx *bolt.Tx }

func (t boltTx) get(bucket, key []byte) []byte {
	v := t.tx.Bucket(bucket).Get(key)
	if v == nil {
		return nil
	}
	return append(make([]byte, 0, len(v)), v...)
}

// put stores key -> value. fill is the bucket's fill percent: keys that
// only ever grow (entries, nodes per level) pack pages fuller.
func (t boltTx) put(bucket, key, value []byte, fill float64) error {
	if !t.tx.Writable() {
		return ErrReadOnly
	}
	b := t.tx.Bucket(bucket)
	b.FillPercent = fill
	return b.Put(key, value)
}

const (
	fillAppend = 0.95                    // for sequential keys
	fillRandom = bolt.DefaultFillPercent // for hash-like keys
)

func (t boltTx) Meta(key string) ([]byte, error) { return t.get(bucketMeta, []byte(key)), nil }

func (t boltTx) SetMeta(key string, v []byte) error {
	return t.put(bucketMeta, []byte(key), v, fillRandom)
}

func (t boltTx) Entry(i uint64) ([]byte, error) { return t.get(bucketEntries, IndexKey(i)), nil }

func (t boltTx) PutEntry(i uint64, data []byte) error {
	return t.put(bucketEntries, IndexKey(i), data, fillAppend)
}

func (t boltTx) ForEachEntry(start uint64, fn func(uint64, []byte) error) error {
	c := t.tx.Bucket(bucketEntries).Cursor()
	for k, v := c.Seek(IndexKey(start)); k != nil; k, v = c.Next() {
		i, err := ParseIndex(k)
		if err != nil {
			return fmt.Errorf("bucket entries: %w", err)
		}
		if err := fn(i, v); err != nil {
			return err
		}
	}
	return nil
}

func (t boltTx) Entries(start uint64, n int) ([]uint64, [][]byte, error) {
	var idx []uint64
	var data [][]byte
	err := t.ForEachEntry(start, func(i uint64, d []byte) error {
		if len(data) == n {
			return errStop
		}
		idx, data = append(idx, i), append(data, bytes.Clone(d))
		return nil
	})
	if err != nil && err != errStop {
		return nil, nil, err
	}
	return idx, data, nil
}

// errStop ends a ForEach early.
var errStop = errors.New("stop")

func (t boltTx) LeafIndex(h []byte) (uint64, bool, error) {
	v := t.tx.Bucket(bucketLeaves).Get(h)
	if v == nil {
		return 0, false, nil
	}
	i, err := ParseIndex(v)
	if err != nil {
		return 0, false, fmt.Errorf("bucket leaves, key %x: %w", h, err)
	}
	return i, true, nil
}

func (t boltTx) LeafIndexes(hs [][]byte) ([]uint64, []bool, error) {
	idx, found := make([]uint64, len(hs)), make([]bool, len(hs))
	for k, h := range hs {
		var err error
		if idx[k], found[k], err = t.LeafIndex(h); err != nil {
			return nil, nil, err
		}
	}
	return idx, found, nil
}

func (t boltTx) PutLeafIndex(h []byte, i uint64) error {
	return t.put(bucketLeaves, h, IndexKey(i), fillRandom)
}

func (t boltTx) ForEachLeaf(fn func([]byte, uint64) error) error {
	return t.tx.Bucket(bucketLeaves).ForEach(func(k, v []byte) error {
		i, err := ParseIndex(v)
		if err != nil {
			return fmt.Errorf("bucket leaves, key %x: %w", k, err)
		}
		return fn(k, i)
	})
}

func (t boltTx) Node(id compact.NodeID) ([]byte, error) {
	return t.get(bucketNodes, NodeKey(id)), nil
}

func (t boltTx) Nodes(ids []compact.NodeID) ([][]byte, error) {
	out := make([][]byte, len(ids))
	for i, id := range ids {
		out[i] = t.get(bucketNodes, NodeKey(id))
	}
	return out, nil
}

func (t boltTx) PutNode(id compact.NodeID, h []byte) error {
	return t.put(bucketNodes, NodeKey(id), h, fillAppend)
}

func (t boltTx) ForEachNode(fn func(compact.NodeID, []byte) error) error {
	return t.tx.Bucket(bucketNodes).ForEach(func(k, v []byte) error {
		id, err := ParseNodeKey(k)
		if err != nil {
			return fmt.Errorf("bucket nodes: %w", err)
		}
		return fn(id, v)
	})
}

func (t boltTx) Head(keyID string) (Head, bool, error) {
	v := t.tx.Bucket(bucketHeads).Get([]byte(keyID))
	if v == nil {
		return Head{}, false, nil
	}
	h, err := ParseHead(v)
	if err != nil {
		return Head{}, false, fmt.Errorf("bucket heads, key %q: %w", keyID, err)
	}
	return h, true, nil
}

func (t boltTx) Heads(keyIDs []string) (map[string]Head, error) {
	out := map[string]Head{}
	for _, k := range keyIDs {
		h, ok, err := t.Head(k)
		if err != nil {
			return nil, err
		}
		if ok {
			out[k] = h
		}
	}
	return out, nil
}

func (t boltTx) PutHead(keyID string, h Head) error {
	return t.put(bucketHeads, []byte(keyID), EncodeHead(h), fillRandom)
}

func (t boltTx) ForEachHead(fn func(string, Head) error) error {
	return t.tx.Bucket(bucketHeads).ForEach(func(k, v []byte) error {
		h, err := ParseHead(v)
		if err != nil {
			return fmt.Errorf("bucket heads, key %q: %w", k, err)
		}
		return fn(string(k), h)
	})
}
