package ledger

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/transparency-dev/merkle/compact"
	bolt "go.etcd.io/bbolt"

	"github.com/bankdoor/bankdoor/ledger/internal/store"
)

// corruption changes one thing in a closed ledger file through bbolt.
type corruption struct {
	name string
	edit func(tx *bolt.Tx) error
	want string // Fsck's error must say this
}

// check applies the corruption to a copy of the ledger file good and
// checks what Fsck says of it.
func (c corruption) check(t *testing.T, good []byte) {
	path := filepath.Join(t.TempDir(), "ledger.db")
	if err := os.WriteFile(path, good, 0o600); err != nil {
		t.Fatal(err)
	}
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(c.edit); err != nil {
		t.Fatal(err)
	}
	db.Close()
	_, err = Fsck(context.Background(), path, testVerifier(t))
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), path) {
		t.Errorf("Fsck = %v; want ErrCorrupt naming %s and saying %q", err, path, c.want)
	}
}

func put(bucket string, k, v []byte) func(*bolt.Tx) error {
	return func(tx *bolt.Tx) error { return tx.Bucket([]byte(bucket)).Put(k, v) }
}

func del(bucket string, k []byte) func(*bolt.Tx) error {
	return func(tx *bolt.Tx) error { return tx.Bucket([]byte(bucket)).Delete(k) }
}

func get(tx *bolt.Tx, bucket string, k []byte) []byte {
	return append([]byte(nil), tx.Bucket([]byte(bucket)).Get(k)...)
}

func TestFsckFindsCorruption(t *testing.T) {
	t.Parallel()
	a := newAgent(1)
	tl := openTestLog(t, 0, a)
	tl.Close()
	tl.indexLag = 1 // the second commit indexes the first's 7 leaves, and leaves_from is 7
	tl.reopen(t)
	rs := a.Chain(t, 20)
	tl.mustAppend(t, rs[:7]...)
	tl.mustAppend(t, rs[7:]...)
	if err := tl.CosignatureStore().Put("w.example", 20, []byte("— w.example c2ln\n")); err != nil {
		t.Fatal(err)
	}
	tl.Close()
	if _, err := Fsck(context.Background(), tl.path, testVerifier(t)); err != nil {
		t.Fatalf("Fsck of the file before any corruption: %v", err)
	}
	good, err := os.ReadFile(tl.path)
	if err != nil {
		t.Fatal(err)
	}
	key, node := store.IndexKey, func(l uint, i uint64) []byte { return store.NodeKey(compact.NewNodeID(l, i)) }
	tests := []corruption{
		{"entry replaced", put("entries", key(5), rs[6]), "entry 5: the leaf index maps"},
		{"entry missing", del("entries", key(5)), "entry 5 is missing"},
		{"last entry missing", del("entries", key(19)), "entries stop at 19"},
		{"entry beyond size", put("entries", key(20), rs[0]), "entry 20 is beyond"},
		{"leaf index wrong", put("leaves", hasher.HashLeaf(rs[3]), key(4)), "entry 3: the leaf index maps"},
		{"leaf index missing", del("leaves", hasher.HashLeaf(rs[3])), "entry 3: its leaf hash"},
		{"leaf index extra", put("leaves", make([]byte, 32), key(1)), "leaf index holds 8 hashes; 7 of the 20"},
		{"leaf index wrong above leaves_from", put("leaves", hasher.HashLeaf(rs[10]), key(11)), "entry 10: the leaf index maps"},
		{"leaves_from raised", put("meta", []byte("leaves_from"), key(8)), "entry 7: its leaf hash"},
		{"leaves_from beyond size", put("meta", []byte("leaves_from"), key(21)), `"leaves_from" is 21, beyond the tree size 20`},
		{"leaf node changed", put("nodes", node(0, 4), make([]byte, 32)), "node (level 0, index 4) is 0000"},
		{"inner node missing", del("nodes", node(2, 3)), "node (level 2, index 3) is missing"},
		{"node extra", put("nodes", node(0, 20), make([]byte, 32)), "nodes are stored"},
		{"head wrong", func(tx *bolt.Tx) error {
			h, _ := store.ParseHead(get(tx, "heads", []byte(a.KeyID)))
			h.Seq--
			return put("heads", []byte(a.KeyID), store.EncodeHead(h))(tx)
		}, "head of key_id " + a.KeyID},
		{"head extra", put("heads", []byte("0000000000000000"), store.EncodeHead(store.Head{Seq: 1})), "head of key_id 0000000000000000"},
		{"head missing", del("heads", []byte(a.KeyID)), "agent heads are stored"},
		{"size smaller", put("meta", []byte("size"), key(19)), "entry 19 is beyond"},
		{"checkpoint of another tree", func(tx *bolt.Tx) error {
			s, _ := testKeys(t)
			cp, err := signCheckpoint(s, testOrigin, 20, make([]byte, 32))
			if err != nil {
				return err
			}
			return put("meta", []byte("checkpoint"), cp)(tx)
		}, "stored checkpoint has size 20 and root 0000"},
		{"checkpoint not a note", put("meta", []byte("checkpoint"), []byte("hello")), "not a signed note"},
		{"witness cosigned more", put("witnesses", []byte("w.example"), key(21)), "witness w.example cosigned the checkpoint of size 21 but the file's tree has 20 entries"},
		{"witness's cosignature missing", del("cosignatures", store.CosignatureKey(20, "w.example")), "no cosignature of that size"},
		{"unknown version", put("meta", []byte("version"), []byte("4")), `version is "4"`},
		{"chain broken", func(tx *bolt.Tx) error { // entries 8 and 9 swapped, with their leaf index
			return errors.Join(put("entries", key(8), rs[9])(tx), put("entries", key(9), rs[8])(tx),
				put("leaves", hasher.HashLeaf(rs[9]), key(8))(tx), put("leaves", hasher.HashLeaf(rs[8]), key(9))(tx))
		}, "entry 8 (seq 10, key_id " + a.KeyID + ") does not extend"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.check(t, good) })
	}
}

// TestOpenRefusesMismatchedTree: a stored node on the right edge that
// does not match the checkpoint stops Open.
func TestOpenRefusesMismatchedTree(t *testing.T) {
	t.Parallel()
	a := newAgent(1)
	tl := openTestLog(t, 0, a)
	tl.mustAppend(t, a.Chain(t, 20)...)
	tl.Close()
	db, err := bolt.Open(tl.path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(put("nodes", store.NodeKey(compact.NewNodeID(4, 0)), make([]byte, 32))); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if _, err := Open(tl.path, tl.opts); !errors.Is(err, ErrStorage) || !strings.Contains(err.Error(), "does not match the stored tree") {
		t.Fatalf("Open of a file whose nodes do not match its checkpoint = %v; want ErrStorage saying so", err)
	}
}

func TestFsckHeldOrMissing(t *testing.T) {
	t.Parallel()
	a := newAgent(1)
	tl := openTestLog(t, 0, a)
	if _, err := Fsck(context.Background(), tl.path, testVerifier(t)); !errors.Is(err, ErrLocked) {
		t.Errorf("Fsck of an open ledger = %v; want a lock error", err)
	}
	if _, err := Fsck(context.Background(), filepath.Join(t.TempDir(), "none.db"), testVerifier(t)); err == nil {
		t.Error("Fsck of a missing file succeeded")
	}
}

// TestFsckAcrossBatches: fsck reads the leaf index and the nodes of
// fsckBatch entries at a time; it still names the first inconsistency
// when it is in a later batch, or when an earlier entry of the same batch
// completes a wrong node and a later one has a wrong leaf index entry.
func TestFsckAcrossBatches(t *testing.T) {
	t.Parallel()
	a := newAgent(1)
	tl := openTestLog(t, 0, a)
	n := 2*fsckBatch + 100
	rs := a.Chain(t, n)
	for i := 0; i < n; i += 500 {
		tl.mustAppend(t, rs[i:min(i+500, n)]...)
	}
	tl.Close()
	good, err := os.ReadFile(tl.path)
	if err != nil {
		t.Fatal(err)
	}
	late := uint64(fsckBatch + 37)
	for _, tt := range []corruption{
		{"node in the second batch", put("nodes", store.NodeKey(compact.NewNodeID(0, late)), make([]byte, 32)),
			fmt.Sprintf("node (level 0, index %d) is 0000", late)},
		{"leaf index in the third batch", put("leaves", hasher.HashLeaf(rs[2*fsckBatch+5]), store.IndexKey(3)),
			fmt.Sprintf("entry %d: the leaf index maps", 2*fsckBatch+5)},
		{"node before a leaf index in one batch", func(tx *bolt.Tx) error {
			return errors.Join(put("nodes", store.NodeKey(compact.NewNodeID(1, late/2)), make([]byte, 32))(tx),
				put("leaves", hasher.HashLeaf(rs[late+10]), store.IndexKey(3))(tx))
		}, fmt.Sprintf("node (level 1, index %d) is 0000", late/2)},
		{"entry missing in the second batch", del("entries", store.IndexKey(late)), fmt.Sprintf("entry %d is missing", late)},
	} {
		t.Run(tt.name, func(t *testing.T) { tt.check(t, good) })
	}
}
